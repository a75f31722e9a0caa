package headless

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/stoke-cli/stoke/agents"
	"github.com/stoke-cli/stoke/agents/llm"
)

// stored is what a resumed session brings back.
type stored struct {
	info    agents.SessionInfo
	history []llm.Message
	roster  []agents.Row
}

// openSession resolves the session of this run: a new one (with --session-id or a generated
// id), or a stored one with --resume/--continue, whose parent conversation and agent
// roster are loaded. It returns the session directory ("" without a home).
func openSession(opts *Options) (dir string, st *stored, err error) {
	if opts.Home == "" {
		return "", nil, nil
	}
	resuming := opts.Resume != "" || opts.Continue
	if !resuming {
		if _, err := agents.ParseSessionID(opts.SessionID); err != nil {
			return "", nil, fmt.Errorf("%w: --session-id: %w", ErrUsage, err)
		}
		dir = agents.SessionDir(opts.Home, opts.CWD, opts.SessionID)
		if _, err := os.Stat(filepath.Join(dir, "session.json")); err == nil {
			return "", nil, fmt.Errorf("%w: session %s already exists; continue it with --resume %s", ErrUsage, opts.SessionID, opts.SessionID)
		}
		return dir, nil, nil
	}
	var info agents.SessionInfo
	if opts.Resume != "" {
		info, err = agents.FindSession(opts.Home, opts.CWD, opts.Resume)
	} else {
		info, err = agents.LatestSession(opts.Home, opts.CWD)
	}
	if err != nil {
		if errors.Is(err, agents.ErrUnknownSession) {
			return "", nil, fmt.Errorf("%w: %w", ErrUsage, err)
		}
		return "", nil, fmt.Errorf("%w: %w", ErrRunFailed, err)
	}
	opts.SessionID = info.SessionID
	st = &stored{info: info}
	loaded, err := agents.ReadTranscript(filepath.Join(info.Dir, "session.jsonl"))
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return "", nil, fmt.Errorf("%w: resume %s: %w", ErrRunFailed, info.SessionID, err)
	default:
		for _, w := range loaded.Warnings {
			opts.Logger.Warn("session transcript damaged", "session_id", info.SessionID, "warning", w)
		}
		st.history = agents.RepairDangling(loaded.Messages)
	}
	max := opts.MaxRetained
	if max <= 0 {
		max = 100
	}
	rows, warnings, err := agents.LoadRoster(info.Dir, agents.RosterOptions{SessionID: info.SessionID, CWD: opts.CWD, MaxCompleted: max})
	if err != nil {
		return "", nil, fmt.Errorf("%w: resume %s: %w", ErrRunFailed, info.SessionID, err)
	}
	for _, w := range warnings {
		opts.Logger.Warn("agent roster", "session_id", info.SessionID, "warning", w)
	}
	st.roster = rows
	return info.Dir, st, nil
}

// writeSessionInfo records the session in session.json.
func writeSessionInfo(dir string, opts Options, created time.Time) error {
	if dir == "" {
		return nil
	}
	return agents.WriteSessionInfo(dir, agents.SessionInfo{
		SessionID: opts.SessionID, CWD: opts.CWD, Model: opts.ModelName,
		CreatedAt: created.UTC(), UpdatedAt: time.Now().UTC(),
	})
}

// rosterReminder is added once to the first ordinary user prompt after a restore.
func rosterReminder(n int) llm.Block {
	return llm.TextBlock(fmt.Sprintf("<system-reminder>This session was resumed: %d background agent(s) from before the restart are back under their original task ids. "+
		"Call list_agents to see them, then send_message with a task_id to continue one on the history it kept.</system-reminder>", n))
}
