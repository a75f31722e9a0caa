package trace

import (
	"crypto/tls"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/stoke-cli/stoke/agents/trace/otlptest"
)

// otlpCollector is an httptest OTLP/HTTP receiver that records the requests it gets and
// answers with the statuses it is given (200 once they run out).
type otlpCollector struct {
	srv *httptest.Server

	mu       sync.Mutex
	reqs     []otlpRequest
	statuses []int
	reply    string
	replyCT  string
}

type otlpRequest struct {
	method, path string
	header       http.Header
	body         []byte
}

func newCollector(t *testing.T, statuses ...int) *otlpCollector {
	t.Helper()
	return startCollector(t, nil, statuses...)
}

// newTLSCollector is a collector over https with the given server configuration.
func newTLSCollector(t *testing.T, cfg *tls.Config) *otlpCollector {
	t.Helper()
	return startCollector(t, cfg)
}

func startCollector(t *testing.T, tlsCfg *tls.Config, statuses ...int) *otlpCollector {
	t.Helper()
	c := &otlpCollector{statuses: statuses, replyCT: "application/json"}
	c.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		c.reqs = append(c.reqs, otlpRequest{r.Method, r.URL.Path, r.Header.Clone(), body})
		status := http.StatusOK
		if len(c.statuses) > 0 {
			status, c.statuses = c.statuses[0], c.statuses[1:]
		}
		reply, ct := c.reply, c.replyCT
		c.mu.Unlock()
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(status)
		_, _ = io.WriteString(w, reply)
	}))
	c.srv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are what some tests want
	if tlsCfg != nil {
		c.srv.TLS = tlsCfg
		c.srv.StartTLS()
	} else {
		c.srv.Start()
	}
	t.Cleanup(c.srv.Close)
	return c
}

func (c *otlpCollector) requests() []otlpRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]otlpRequest(nil), c.reqs...)
}

// Shorthands for the otlptest decoders.
var (
	decodeTraces  = otlptest.DecodeTraces
	decodeMetrics = otlptest.DecodeMetrics
	readTraceFile = otlptest.ReadTraceFile
	allSpans      = otlptest.Spans
	kv            = otlptest.Attrs
)

func byName(spans []*tracepb.Span) map[string][]*tracepb.Span {
	out := map[string][]*tracepb.Span{}
	for _, s := range spans {
		out[s.Name] = append(out[s.Name], s)
	}
	return out
}

// protocols are the OTLP/HTTP encodings, with their content types.
var protocols = []struct{ protocol, contentType string }{
	{ProtocolHTTPProtobuf, otlptest.Protobuf},
	{ProtocolHTTPJSON, otlptest.JSON},
}
