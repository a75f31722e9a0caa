package headless

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/stoke-cli/stoke/agents"
	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/store"
)

// stored is what a resumed session brings back.
type stored struct {
	info    store.Info
	history []llm.Message
	roster  []agents.Row
}

// openSession resolves the session of this run: a new one (with --session-id or a generated
// id), or a stored one with --resume/--continue, whose parent conversation and agent
// roster are loaded. It returns the session's id and directory (nil without a home).
func openSession(opts Options) (id string, sess *store.Session, st *stored, err error) {
	if opts.Home == "" {
		return opts.SessionID, nil, nil, nil
	}
	resuming := opts.Resume != "" || opts.Continue
	if !resuming {
		if _, err := store.ParseSessionID(opts.SessionID); err != nil {
			return "", nil, nil, fmt.Errorf("%w: --session-id: %w", ErrUsage, err)
		}
		sess = store.New(opts.Home, opts.CWD, opts.SessionID)
		if sess.Exists() {
			return "", nil, nil, fmt.Errorf("%w: session %s already exists; continue it with --resume %s", ErrUsage, opts.SessionID, opts.SessionID)
		}
		return opts.SessionID, sess, nil, nil
	}
	var found store.Stored
	if opts.Resume != "" {
		found, err = store.Find(opts.Home, opts.CWD, opts.Resume)
	} else {
		found, err = store.Latest(opts.Home, opts.CWD)
	}
	if err != nil {
		if errors.Is(err, store.ErrUnknownSession) {
			return "", nil, nil, fmt.Errorf("%w: %w", ErrUsage, err)
		}
		return "", nil, nil, fmt.Errorf("%w: %w", ErrRunFailed, err)
	}
	info := found.Info
	st = &stored{info: info}
	loaded, err := store.ReadTranscript(found.ParentTranscript())
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return "", nil, nil, fmt.Errorf("%w: resume %s: %w", ErrRunFailed, info.SessionID, err)
	default:
		for _, w := range loaded.Warnings {
			opts.Logger.Warn("session transcript damaged", "session_id", info.SessionID, "warning", w)
		}
		st.history = store.RepairDangling(loaded.Messages)
	}
	max := opts.MaxRetained
	if max <= 0 {
		max = agents.DefaultMaxRetained
	}
	rows, warnings, err := agents.LoadRoster(found.Session, agents.RosterOptions{SessionID: info.SessionID, CWD: opts.CWD, MaxCompleted: max})
	if err != nil {
		return "", nil, nil, fmt.Errorf("%w: resume %s: %w", ErrRunFailed, info.SessionID, err)
	}
	for _, w := range warnings {
		opts.Logger.Warn("agent roster", "session_id", info.SessionID, "warning", w)
	}
	st.roster = rows
	return info.SessionID, found.Session, st, nil
}

// writeSessionInfo records session id in session.json.
func writeSessionInfo(sess *store.Session, id string, opts Options, created time.Time) error {
	if sess == nil {
		return nil
	}
	return sess.WriteInfo(store.Info{
		SessionID: id, CWD: opts.CWD, Model: opts.ModelName,
		CreatedAt: created.UTC(), UpdatedAt: time.Now().UTC(),
	})
}

// rosterReminder is added once to the first ordinary user prompt after a restore.
func rosterReminder(n int) llm.Block {
	return llm.TextBlock(fmt.Sprintf("<system-reminder>This session was resumed: %d background agent(s) from before the restart are back under their original task ids. "+
		"Call list_agents to see them, then send_message with a task_id to continue one on the history it kept.</system-reminder>", n))
}
