//go:build !stoke_omit_otlp

package trace

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stoke-cli/stoke/agents/llm"
)

// otlpCollector is an httptest OTLP/HTTP receiver that records the requests it gets.
type otlpCollector struct {
	srv *httptest.Server

	mu   sync.Mutex
	reqs []otlpRequest
}

type otlpRequest struct {
	method, path, contentType string
	body                      []byte
}

func newCollector(t *testing.T) *otlpCollector {
	t.Helper()
	c := &otlpCollector{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		c.reqs = append(c.reqs, otlpRequest{r.Method, r.URL.Path, r.Header.Get("Content-Type"), body})
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *otlpCollector) requests() []otlpRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]otlpRequest(nil), c.reqs...)
}

func TestSetupOTLP(t *testing.T) {
	col := newCollector(t)
	tr := mustSetup(t, Config{OTLPEndpoint: col.srv.URL + "/custom/v1/traces", ServiceName: "stoke"})
	simulateTurn(context.Background(), tr.Tracer(), TurnInfo{SessionID: "s1", Agent: "parent", Turn: 1})
	if n := len(col.requests()); n != 0 {
		t.Errorf("%d requests before Shutdown: spans should be batched", n)
	}
	shutdown(t, tr)
	reqs := col.requests()
	if len(reqs) == 0 {
		t.Fatal("Shutdown sent nothing to the collector")
	}
	r := reqs[0]
	if r.method != http.MethodPost || r.path != "/custom/v1/traces" || r.contentType != "application/x-protobuf" || len(r.body) == 0 {
		t.Errorf("request %s %s (%s, %d bytes), want a protobuf POST to the endpoint's path", r.method, r.path, r.contentType, len(r.body))
	}
}

func TestSetupBoth(t *testing.T) {
	col := newCollector(t)
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	tr := mustSetup(t, Config{OTLPEndpoint: col.srv.URL + "/v1/traces", File: path})
	_, span := StartModelCall(context.Background(), tr.Tracer(), "gpt-4o")
	EndModelCall(span, llm.Usage{InputTokens: 1}, llm.StopEndTurn, nil)
	shutdown(t, tr)
	if len(col.requests()) == 0 {
		t.Error("the collector got nothing")
	}
	if n := len(readSpans(t, path)); n != 1 {
		t.Errorf("the file holds %d spans, want 1", n)
	}
}
