package trace

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// linesExporter writes each batch of spans as one line: an ExportTraceServiceRequest in
// the OTLP JSON encoding, the format of the OpenTelemetry Collector's file exporter (and
// what its otlpjsonfile receiver reads). It serves --trace-file and
// OTEL_TRACES_EXPORTER=console (on stderr: stdout belongs to the event stream).
type linesExporter struct {
	report func(error) // a failed write, reported rather than returned (nil: returned)

	mu      sync.Mutex
	w       io.Writer
	stopped bool
}

func (e *linesExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	line, err := json.Marshal(encodeSpans(spans))
	if err != nil {
		err = fmt.Errorf("trace file: encoding %d spans: %w", len(spans), err)
	} else {
		err = e.writeLine(line)
	}
	if err != nil && e.report != nil {
		e.report(err)
		return nil
	}
	return err
}

// writeLine writes line and a newline in one Write, so that lines from several batches
// never interleave.
func (e *linesExporter) writeLine(line []byte) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return errExporterStopped
	}
	if _, err := e.w.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("trace file: %w", err)
	}
	return nil
}

// Shutdown stops the exporter; the caller closes the writer.
func (e *linesExporter) Shutdown(context.Context) error {
	e.mu.Lock()
	e.stopped = true
	e.mu.Unlock()
	return nil
}
