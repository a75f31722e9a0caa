package headless

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/stoke-cli/stoke/agents/store"
	"github.com/stoke-cli/stoke/streamjson"
)

// stateFaults ends a session whose state can no longer be stored (a full disk, a
// read-only home: store.Session.OnWriteFailure) as a signal would: the contexts bound to
// it (the registry's turns, the MCP servers, the loop's) are cancelled with the failure,
// so that the parent's turn and every agent stop, their partial findings kept, and the
// run ends with an error result naming the file and the errno (exit 1). Nothing that
// follows the failure is reported stored.
type stateFaults struct {
	mu      sync.Mutex
	err     error // the first failure, wrapped (ErrRunFailed, store.ErrNotStored)
	next    int
	cancels map[int]context.CancelCauseFunc
}

func newStateFaults(sess *store.Session) *stateFaults {
	f := &stateFaults{cancels: map[int]context.CancelCauseFunc{}}
	if sess != nil {
		sess.OnWriteFailure(f.failed)
	}
	return f
}

// failed records the first failed write and cancels what is bound.
func (f *stateFaults) failed(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return
	}
	f.err = fmt.Errorf("%w: %s: %w", ErrRunFailed, store.ErrNotStored, err)
	for _, cancel := range f.cancels {
		cancel(f.err)
	}
}

// failure is the first failed write of the session's state (nil when none).
func (f *stateFaults) failure() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// bind returns ctx cancelled, with the failure as its cause, at the first failed write
// (at once if one happened already), and the function that releases it.
func (f *stateFaults) bind(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		cancel(f.err)
		return ctx, func() { cancel(nil) }
	}
	id := f.next
	f.next++
	f.cancels[id] = cancel
	return ctx, func() {
		f.mu.Lock()
		delete(f.cancels, id)
		f.mu.Unlock()
		cancel(nil)
	}
}

// notStoredAtStart writes the error result of a run that could not store its session
// from the start (a read-only home, a full disk: Assemble failed with
// store.ErrNotStored), with stream-json or json output: a consumer waiting for the
// result line gets one that names the file and the errno, as it would mid-run. stderr
// has the same line (the CLI's).
func notStoredAtStart(o Options, err error) {
	if !errors.Is(err, store.ErrNotStored) || o.OutputFormat != OutputStreamJSON && o.OutputFormat != OutputJSON {
		return
	}
	id := o.SessionID
	if o.Resume != "" {
		id = o.Resume
	}
	r := streamjson.NewResult(streamjson.ResultErrorDuringExecution)
	r.TerminalReason = streamjson.TerminalAborted
	r.Errors = []string{strings.TrimPrefix(err.Error(), ErrRunFailed.Error()+": ")}
	_ = streamjson.NewEncoder(o.Stdout, id, nil).Encode(r)
}
