package headless

import (
	"log/slog"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/streamjson"
)

// Sink receives a session's events in place of stdout: an entry point that shows them its
// own way (the ACP server's session/update notifications). Event is called for every
// event as it is emitted — by the loop, the parent's turns and the background agents'
// turns, so possibly from several goroutines at once — and holds its emitter up while it
// runs (events are never dropped); it must not keep ev past the call.
type Sink interface {
	Event(ev streamjson.Event)
}

// ModelSink is a Sink that also sees the parent's model calls as they stream (text
// deltas, tool calls, retries, done: runtime.Config.OnModelEvent), from the goroutine
// running the parent's turn, before the assistant event that sums each call up. It must
// not block for long.
type ModelSink interface {
	Sink
	ParentModelEvent(ev llm.Event)
}

// events is a session's event stream: every event on stdout with stream-json (in an SDK
// session, as the host's SDK reads it; to the Sink when there is one), and to the Observe
// hook whatever the output format. Its fields are set while the session is assembled,
// before the first event; emit is safe for concurrent use.
type events struct {
	sink Sink                // in place of enc (nil: none)
	enc  *streamjson.Encoder // events (stdout with stream-json, else discarded)
	out  *streamjson.Encoder // the final result object with --output-format json
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
	if e.sink != nil {
		e.sink.Event(out)
	} else if err := e.enc.Encode(out); err != nil {
		e.logger.Debug("write event", "err", err)
	}
	if e.observe != nil {
		e.observe(ev)
	}
}
