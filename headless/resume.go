package headless

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/stoke-cli/stoke/agents"
	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/store"
)

// opened is the session of a run, as openSession found or made it.
type opened struct {
	id   string
	sess *store.Session // nil without a home
	lock *store.Lock    // the run's hold on sess: one writer per session
	info store.Info     // session.json as the run writes it (UpdatedAt set at each write)
	// What a resumed (or forked) session brings back.
	history []llm.Message
	roster  []agents.Row
	// unread are the notifications of the roster the parent has not read yet.
	unread []llm.Message
	// resumed: the run continues a stored session (or a fork of one), whose last traced
	// run's root was previousRun (a traceparent; empty when none).
	resumed     bool
	previousRun string
}

// openSession resolves the session of this run and takes its lock: a new one (with
// --session-id or a generated id), a stored one with --resume/--continue, whose parent
// conversation (repaired) and agent roster are loaded, or, with --fork-session, a copy
// of the stored one under a new id. Another run holding the session makes it fail with
// ErrSessionBusy, or wait up to --wait-for-session.
func openSession(ctx context.Context, opts Options) (o *opened, err error) {
	if opts.Home == "" {
		return &opened{id: opts.SessionID}, nil
	}
	now := time.Now().UTC()
	resuming := opts.Resume != "" || opts.Continue
	if !resuming {
		if _, err := store.ParseSessionID(opts.SessionID); err != nil {
			return nil, fmt.Errorf("%w: --session-id: %w", ErrUsage, err)
		}
		sess := store.New(opts.Home, opts.CWD, opts.SessionID)
		lock, err := lockSession(ctx, sess, opts)
		if err != nil {
			return nil, err
		}
		if sess.Exists() {
			_ = lock.Unlock()
			return nil, fmt.Errorf("%w: session %s already exists; continue it with --resume %s", ErrUsage, opts.SessionID, opts.SessionID)
		}
		info := store.Info{SessionID: opts.SessionID, CWD: opts.CWD, Model: opts.ModelName, CreatedAt: now}
		return &opened{id: opts.SessionID, sess: sess, lock: lock, info: info}, nil
	}
	var found store.Stored
	if opts.Resume != "" {
		found, err = store.Find(opts.Home, opts.CWD, opts.Resume)
	} else {
		found, err = store.Latest(opts.Home, opts.CWD)
	}
	if err != nil {
		return nil, loadError("", err)
	}
	if found.Warning != "" {
		opts.Logger.Warn("session info damaged", "session_id", found.Info.SessionID, "warning", found.Warning)
	}
	sess, info := found.Session, found.Info
	if info.CWD == "" {
		info.CWD = opts.CWD // rebuilt from a transcript that did not say
	}
	if opts.ModelName != "" {
		info.Model = opts.ModelName
	}
	previousRun := info.Traceparent
	if opts.ForkSession {
		if sess, info, err = forkSession(ctx, found, opts, now); err != nil {
			return nil, err
		}
	}
	lock, err := lockSession(ctx, sess, opts)
	if err != nil {
		return nil, err
	}
	o = &opened{id: info.SessionID, sess: sess, lock: lock, info: info, resumed: true, previousRun: previousRun}
	if err := o.load(ctx, opts); err != nil {
		_ = lock.Unlock()
		return nil, err
	}
	return o, nil
}

// lockSession takes the run's lock on sess, waiting up to --wait-for-session.
func lockSession(ctx context.Context, sess *store.Session, opts Options) (*store.Lock, error) {
	lock, err := sess.Lock(ctx, 0)
	var locked *store.LockedError
	if errors.As(err, &locked) && opts.WaitForSession > 0 {
		opts.Logger.Info("waiting for the session: another stoke run writes it", "session_id", locked.SessionID, "pid", locked.PID, "wait", opts.WaitForSession)
		lock, err = sess.Lock(ctx, opts.WaitForSession)
	}
	if err == nil {
		return lock, nil
	}
	if errors.As(err, &locked) {
		advice := "wait for it to end, or pass --wait-for-session DURATION"
		if locked.Waited > 0 {
			advice = "it did not end in time"
		}
		return nil, &busyError{err: err, advice: advice}
	}
	if ctx.Err() != nil {
		return nil, endedBeforeStart(context.Cause(ctx))
	}
	return nil, loadError("", err)
}

// busyError is ErrSessionBusy with the lock's message and advice.
type busyError struct {
	err    error // the *store.LockedError
	advice string
}

func (e *busyError) Error() string   { return e.err.Error() + "; " + e.advice }
func (e *busyError) Unwrap() []error { return []error{ErrSessionBusy, e.err} }

// forkSession copies the stored session into a new one of id opts.SessionID (a still
// picture: no writer holds the original meanwhile; it is only read).
func forkSession(ctx context.Context, found store.Stored, opts Options, now time.Time) (*store.Session, store.Info, error) {
	if _, err := store.ParseSessionID(opts.SessionID); err != nil {
		return nil, store.Info{}, fmt.Errorf("%w: --session-id: %w", ErrUsage, err)
	}
	hold, err := found.LockShared(ctx, opts.WaitForSession)
	if err != nil {
		var locked *store.LockedError
		if errors.As(err, &locked) {
			return nil, store.Info{}, &busyError{err: err, advice: "a fork waits until no run writes it: wait for it to end, or pass --wait-for-session DURATION"}
		}
		if errors.Is(err, store.ErrUnsafe) {
			return nil, store.Info{}, fmt.Errorf("%w: fork: %w", ErrUsage, err)
		}
		return nil, store.Info{}, fmt.Errorf("%w: fork: %w", ErrRunFailed, err)
	}
	defer hold.Unlock()
	info := store.Info{SessionID: opts.SessionID, CWD: opts.CWD, Model: found.Info.Model, CreatedAt: now, ForkedFrom: found.Info.SessionID}
	if info.Model == "" {
		info.Model = opts.ModelName
	}
	fork, warnings, err := store.Fork(found.Session, opts.Home, opts.CWD, info,
		agents.ForkSidecar(found.Session, found.Info.SessionID, opts.SessionID))
	if errors.Is(err, store.ErrExists) {
		return nil, store.Info{}, fmt.Errorf("%w: fork: %w", ErrUsage, err)
	}
	if err != nil {
		return nil, store.Info{}, fmt.Errorf("%w: fork %s: %w", ErrRunFailed, found.Info.SessionID, err)
	}
	for _, w := range warnings {
		opts.Logger.Warn("fork", "session_id", opts.SessionID, "warning", w)
	}
	return fork, info, nil
}

// load reads what the stored session brings back: the parent's conversation, repaired
// into a shape every provider accepts, the agent roster, and the notifications the
// parent never read. It runs under the session's lock.
func (o *opened) load(ctx context.Context, opts Options) error {
	log := opts.Logger.With("session_id", o.id)
	loaded, err := o.sess.LoadTranscript(ctx, o.sess.ParentTranscript())
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return loadError(o.id, err)
	default:
		var rep store.Repairs
		o.history, rep = store.Repair(loaded.Messages)
		if len(loaded.Warnings) > 0 || rep.Damaged() {
			// One warning for the whole transcript: what was skipped, what was repaired.
			log.Warn("session transcript damaged: its history was repaired", "skipped", strings.Join(loaded.Warnings, "; "), "repairs", rep.String())
		} else if rep.Closed > 0 {
			log.Debug("session transcript: a cut turn closed", "repairs", rep.String())
		}
	}
	max := opts.MaxRetained
	if max <= 0 {
		max = agents.DefaultMaxRetained
	}
	if ctx.Err() != nil {
		return endedBeforeStart(context.Cause(ctx))
	}
	rows, warnings, err := agents.LoadRoster(o.sess, agents.RosterOptions{SessionID: o.id, CWD: opts.CWD, MaxCompleted: max})
	if err != nil {
		return loadError(o.id, err)
	}
	for _, w := range warnings {
		log.Warn("agent roster", "warning", w)
	}
	o.roster = rows
	o.unread = agents.UnreadNotifications(rows, o.history)
	return nil
}

// loadError is the error of a stored session that could not be loaded: a signal's
// *InterruptedError when one cut the load short; a usage error (exit 2) when no such
// session is stored or one of its files is not one stoke can read (a directory, a
// symbolic link, a FIFO, a device; the error names the file and what is wrong); else a
// run failure.
func loadError(id string, err error) error {
	var ie *InterruptedError
	if errors.As(err, &ie) {
		return ie
	}
	if id != "" {
		err = fmt.Errorf("resume %s: %w", id, err)
	}
	if errors.Is(err, store.ErrUnknownSession) || errors.Is(err, store.ErrBadFile) || errors.Is(err, store.ErrOutside) || errors.Is(err, store.ErrUnsafe) {
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	return fmt.Errorf("%w: %w", ErrRunFailed, err)
}

// writeInfo records the session in session.json. A resumed session keeps the working
// directory it is bound to (a run from another directory does not move it).
func (o *opened) writeInfo() error {
	if o.sess == nil {
		return nil
	}
	o.info.UpdatedAt = time.Now().UTC()
	return o.sess.WriteInfo(o.info)
}

// rosterReminder is added once to the first ordinary user prompt after a restore.
func rosterReminder(n int) llm.Block {
	return llm.TextBlock(fmt.Sprintf("<system-reminder>This session was resumed: %d background agent(s) from before the restart are back under their original task ids. "+
		"Call list_agents to see them, then send_message with a task_id to continue one on the history it kept.</system-reminder>", n))
}
