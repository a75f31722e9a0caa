package headless

import (
	"log/slog"

	"github.com/stoke-cli/stoke/streamjson"
)

// events is a session's event stream: every event on stdout with stream-json (in an SDK
// session, as the host's SDK reads it), and to the Observe hook whatever the output
// format. Its fields are set while the session is assembled, before the first event;
// emit is safe for concurrent use.
type events struct {
	enc *streamjson.Encoder // events (stdout with stream-json, else discarded)
	out *streamjson.Encoder // the final result object with --output-format json
	// surface rewrites the events of an SDK session for its host (nil otherwise).
	surface func(streamjson.Event) streamjson.Event
	observe func(streamjson.Event)
	logger  *slog.Logger
}

// emit writes one event on the stream.
func (e *events) emit(ev streamjson.Event) {
	out := ev
	if e.surface != nil {
		out = e.surface(ev)
	}
	if err := e.enc.Encode(out); err != nil {
		e.logger.Debug("write event", "err", err)
	}
	if e.observe != nil {
		e.observe(ev)
	}
}
