package trace

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// OTLP/HTTP protocols (OTEL_EXPORTER_OTLP_PROTOCOL).
const (
	ProtocolHTTPProtobuf = "http/protobuf"
	ProtocolHTTPJSON     = "http/json"
)

// CompressionGzip is the one compression of OTEL_EXPORTER_OTLP_COMPRESSION.
const CompressionGzip = "gzip"

// DefaultTimeout bounds one export, retries included, unless OTEL_EXPORTER_OTLP_TIMEOUT
// says otherwise.
const DefaultTimeout = 10 * time.Second

const (
	otlpBackoff     = 500 * time.Millisecond
	otlpMaxAttempts = 5
)

var errExporterStopped = errors.New("OTLP exporter is shut down")

// otlpClient POSTs OTLP/HTTP requests to one URL, in the protobuf or the JSON encoding.
// It stands in for the SDK's otlptracehttp and otlpmetrichttp, whose protobuf and gRPC
// dependencies cost every run start-up time and memory, traced or not.
//
// One send, retries included, is bounded by timeout, and by abort: a context the owning
// Tracing cancels when its flush deadline passes, so that a collector that does not
// answer never holds the process. 429, 502, 503 and 504 answers and transport errors are
// retried with a doubling delay (or the answer's Retry-After), as the OTLP specification
// asks; any other failure is returned at once.
type otlpClient struct {
	url       string
	protobuf  bool
	gzip      bool        // bodies are gzip-compressed (Exporter.Compression)
	header    http.Header // sent with every request (Config.Headers)
	transport *http.Transport
	client    *http.Client
	timeout   time.Duration // bound of one send, retries included
	backoff   time.Duration // delay before the first retry, doubled after each
	abort     context.Context
}

// newOTLPClient returns a client that POSTs to e.Endpoint, a full URL whose path is used
// as is, as e says (protocol, headers, compression, TLS, timeout). It connects at the
// first send. abort ends every send under way and refuses later ones once it is done
// (nil: never).
func newOTLPClient(e Exporter, abort context.Context) *otlpClient {
	var transport *http.Transport
	if t, ok := http.DefaultTransport.(*http.Transport); ok {
		transport = t.Clone() // proxy from the environment, dial and TLS timeouts
	} else {
		transport = &http.Transport{Proxy: http.ProxyFromEnvironment}
	}
	if e.TLS != nil {
		transport.TLSClientConfig = e.TLS.Clone()
	}
	protobuf := e.Protocol != ProtocolHTTPJSON
	header := make(http.Header, len(e.Headers)+3)
	header.Set("User-Agent", "stoke-otlp")
	for k, v := range e.Headers {
		header.Set(k, v)
	}
	if protobuf {
		header.Set("Content-Type", "application/x-protobuf")
	} else {
		header.Set("Content-Type", "application/json")
	}
	compress := e.Compression == CompressionGzip
	if compress {
		header.Set("Content-Encoding", "gzip")
	}
	timeout := e.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if abort == nil {
		abort = context.Background()
	}
	return &otlpClient{
		url:       e.Endpoint,
		protobuf:  protobuf,
		gzip:      compress,
		header:    header,
		transport: transport,
		client:    &http.Client{Transport: transport},
		timeout:   timeout,
		backoff:   otlpBackoff,
		abort:     abort,
	}
}

// checkHeaders reports a header that no HTTP request can carry.
func checkHeaders(headers map[string]string) error {
	for k, v := range headers {
		if err := checkHeader(k, v); err != nil {
			return err
		}
	}
	return nil
}

func checkHeader(name, value string) error {
	if name == "" || strings.IndexFunc(name, func(r rune) bool { return !isTokenChar(r) }) >= 0 {
		return fmt.Errorf("OTLP header name %q: want an HTTP token", name)
	}
	if strings.ContainsAny(value, "\r\n\x00") {
		return fmt.Errorf("OTLP header %s: the value holds a line break or NUL", name)
	}
	return nil
}

// isTokenChar reports whether r may appear in an HTTP header name (RFC 9110 tchar).
func isTokenChar(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return true
	}
	return r < 0x80 && strings.ContainsRune("!#$%&'*+-.^_`|~", r)
}

// send POSTs body, retrying transient failures; what names the items ("spans",
// "data points") in a partial-success error.
func (c *otlpClient) send(ctx context.Context, body []byte, what string) error {
	if c.abort.Err() != nil {
		return errExporterStopped
	}
	if c.gzip {
		var err error
		if body, err = gzipped(body); err != nil {
			return fmt.Errorf("OTLP export: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	stop := context.AfterFunc(c.abort, cancel)
	defer stop()
	delay := c.backoff
	for attempt := 1; ; attempt++ {
		retryAfter, err := c.post(ctx, body, what)
		if err != nil && c.abort.Err() != nil {
			return fmt.Errorf("OTLP export to %s: no answer before the flush deadline: %w", c.url, err)
		}
		if err == nil || retryAfter < 0 || attempt == otlpMaxAttempts {
			return err
		}
		wait := max(delay, retryAfter)
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			return err
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return err
		case <-timer.C:
		}
		delay *= 2
	}
}

// gzipped compresses body.
func gzipped(body []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(body); err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	return buf.Bytes(), nil
}

// post sends body once. On failure it also says whether to retry: after the returned
// delay (0 for the client's own backoff), or never when negative.
func (c *otlpClient) post(ctx context.Context, body []byte, what string) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return -1, fmt.Errorf("OTLP export: %w", err)
	}
	req.Header = c.header.Clone()
	resp, err := c.client.Do(req)
	if err != nil {
		if ctx.Err() != nil || tlsFailure(err) {
			return -1, fmt.Errorf("OTLP export: %w", err)
		}
		return 0, fmt.Errorf("OTLP export: %w", err)
	}
	defer resp.Body.Close()
	reply, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // so the connection is reused
	protoReply := strings.HasPrefix(resp.Header.Get("Content-Type"), "application/x-protobuf")
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return -1, partialSuccess(reply, protoReply, what)
	}
	err = fmt.Errorf("OTLP export: %s from %s%s", resp.Status, c.url, replyMessage(reply, protoReply))
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return retryAfter(resp.Header.Get("Retry-After")), err
	}
	return -1, err
}

// tlsFailure reports whether err is a TLS failure that trying again cannot mend: a
// certificate that does not verify, an alert from the server (a client certificate it
// wants or refuses: crypto/tls reports a received alert as a net.OpError whose Op is
// "remote error"), or an endpoint that does not speak TLS.
func tlsFailure(err error) bool {
	var (
		verify *tls.CertificateVerificationError
		record tls.RecordHeaderError
		op     *net.OpError
	)
	return errors.As(err, &verify) || errors.As(err, &record) || errors.As(err, &op) && op.Op == "remote error"
}

// partialSuccess returns an error when a successful answer says that items were
// rejected (an Export*ServiceResponse with partial_success set). An empty body, or one
// that does not decode, is a plain success.
func partialSuccess(reply []byte, protoReply bool, what string) error {
	var n, msg string
	if protoReply {
		ps, ok := protoField(reply, 1)
		if !ok {
			return nil
		}
		if v, ok := protoVarint(ps, 1); ok && v != 0 {
			n = strconv.FormatUint(v, 10)
		}
		msg, _ = protoString(ps, 2)
	} else {
		var r struct {
			PartialSuccess map[string]json.RawMessage
		}
		if json.Unmarshal(reply, &r) != nil {
			return nil
		}
		for k, v := range r.PartialSuccess {
			switch {
			case strings.HasPrefix(k, "rejected"):
				n = strings.Trim(string(v), `"`) // int64: a string, or a number from lax servers
			case k == "errorMessage":
				_ = json.Unmarshal(v, &msg)
			}
		}
		if n == "0" || n == "null" {
			n = ""
		}
	}
	if n == "" && msg == "" {
		return nil
	}
	if n == "" {
		n = "no"
	}
	return fmt.Errorf("OTLP export: the collector rejected %s %s: %s", n, what, msg)
}

// replyMessage is the part of an error answer worth reporting: the message of a
// google.rpc.Status, else the start of the body.
func replyMessage(reply []byte, protoReply bool) string {
	var status struct{ Message string }
	msg := ""
	switch {
	case protoReply:
		msg, _ = protoString(reply, 2)
	case json.Unmarshal(reply, &status) == nil && status.Message != "":
		msg = status.Message
	default:
		msg = strings.ToValidUTF8(strings.TrimSpace(string(reply)), "?")
	}
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	if msg == "" {
		return ""
	}
	return ": " + msg
}

// retryAfter parses a Retry-After header given in seconds (0 when absent or a date).
func retryAfter(v string) time.Duration {
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return 0
}

// close releases the client's idle connections.
func (c *otlpClient) close() { c.transport.CloseIdleConnections() }

// otlpExporter is an sdktrace.SpanExporter over an otlpClient. A failed export is
// reported to report (which Tracing turns into one warning line) and counted, not
// returned: the SDK would print every failure through OpenTelemetry's global error
// handler.
type otlpExporter struct {
	client *otlpClient
	report func(error)

	stopped atomic.Bool
	wg      sync.WaitGroup // exports under way, so that Shutdown can wait for them
}

func newOTLPExporter(client *otlpClient, report func(error)) *otlpExporter {
	if report == nil {
		report = func(error) {}
	}
	return &otlpExporter{client: client, report: report}
}

// ExportSpans sends spans in one request.
func (e *otlpExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if err := e.exportSpans(ctx, spans); err != nil {
		e.report(fmt.Errorf("%w (%d spans dropped)", err, len(spans)))
	}
	return nil
}

// exportSpans is ExportSpans with the error returned.
func (e *otlpExporter) exportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if e.stopped.Load() {
		return errExporterStopped
	}
	if len(spans) == 0 {
		return nil
	}
	e.wg.Add(1)
	defer e.wg.Done()
	var body []byte
	if e.client.protobuf {
		body = encodeSpansProto(spans)
	} else {
		var err error
		if body, err = json.Marshal(encodeSpans(spans)); err != nil {
			return fmt.Errorf("OTLP export: encoding %d spans: %w", len(spans), err)
		}
	}
	return e.client.send(ctx, body, "spans")
}

// Shutdown waits for exports under way (which the Tracing's abort ends at its flush
// deadline), then releases the exporter's idle connections; later exports fail.
func (e *otlpExporter) Shutdown(context.Context) error {
	e.stopped.Store(true)
	e.wg.Wait()
	e.client.close()
	return nil
}
