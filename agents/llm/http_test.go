package llm

import (
	"context"
	"errors"
	"io"
	"iter"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The providers' client never holds more than maxConns connections to an endpoint: the
// calls over the cap wait for one, and all complete.
func TestHTTPClientCapsConnections(t *testing.T) {
	t.Parallel()
	var open, peak atomic.Int32
	release := make(chan struct{})
	arrived := make(chan struct{}, 16)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		arrived <- struct{}{}
		<-release
		_, _ = io.WriteString(w, "ok")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			n := open.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
		case http.StateClosed, http.StateHijacked:
			open.Add(-1)
		}
	}
	srv.Start()
	defer srv.Close()
	c := HTTPClient(3)
	defer c.CloseIdleConnections()
	var wg sync.WaitGroup
	var done atomic.Int32
	for range 10 {
		wg.Go(func() {
			resp, err := c.Get(srv.URL)
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			done.Add(1)
		})
	}
	for range 3 {
		<-arrived
	}
	select {
	case <-arrived:
		t.Fatal("a fourth call reached the server while three held every connection")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	wg.Wait()
	if p := peak.Load(); p > 3 || done.Load() != 10 {
		t.Fatalf("peak %d connections, %d calls done; want at most 3 and 10", p, done.Load())
	}
}

func TestMaxConnsFollowsTheFileLimit(t *testing.T) {
	t.Parallel()
	if n := MaxConns(); n < 16 || n > 256 || n > max(openFileLimit()/8, 16) {
		t.Fatalf("MaxConns = %d with a file limit of %d", n, openFileLimit())
	}
}

// A limited model runs at most n calls at once; a caller whose context ends while it
// waits gets the cause, and the others go on.
func TestLimit(t *testing.T) {
	t.Parallel()
	var now, peak atomic.Int32
	release := make(chan struct{})
	entered := make(chan struct{}, 8)
	inner := genModel(func(ctx context.Context, yield func(Event, error) bool) {
		entered <- struct{}{}
		n := now.Add(1)
		defer now.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		<-release
		yield(Event{Kind: EventDone}, nil)
	})
	m := Limit(inner, 2)
	var wg sync.WaitGroup
	var done atomic.Int32
	for range 6 {
		wg.Go(func() {
			for _, err := range m.Generate(context.Background(), &Request{}) {
				if err != nil {
					t.Error(err)
				}
			}
			done.Add(1)
		})
	}
	<-entered
	<-entered // both places are taken
	ctx, cancel := context.WithCancelCause(context.Background())
	waited := make(chan error, 1)
	go func() {
		for _, err := range m.Generate(ctx, &Request{}) {
			waited <- err
			return
		}
		waited <- nil
	}()
	cancel(errors.New("gave up"))
	if err := <-waited; err == nil || !strings.Contains(err.Error(), "gave up") {
		t.Fatalf("a cancelled wait returned %v", err)
	}
	close(release)
	wg.Wait()
	if p := peak.Load(); p != 2 || done.Load() != 6 {
		t.Fatalf("peak %d calls at once, %d done; want 2 and 6", p, done.Load())
	}
}

type genModel func(ctx context.Context, yield func(Event, error) bool)

func (genModel) Name() string { return "gen" }

func (g genModel) Generate(ctx context.Context, _ *Request) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) { g(ctx, yield) }
}
