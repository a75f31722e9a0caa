package llm

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
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
	if n := MaxConns(); n < 16 || n > 1024 || n > max(openFileLimit()/2, 16) {
		t.Fatalf("MaxConns = %d with a file limit of %d", n, openFileLimit())
	}
}
