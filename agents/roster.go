package agents

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"sync"

	"github.com/stoke-cli/stoke/agents/catalog"
	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/store"
	"github.com/stoke-cli/stoke/streamjson"
)

// RosterOptions say which session a roster is loaded for.
type RosterOptions struct {
	SessionID string
	CWD       string
	// MaxCompleted keeps only the newest completed rows (0: no limit).
	MaxCompleted int
}

// LoadRoster reads the sidecars of session sess and returns the rows a resume restores:
// running, queued and paused rows (they come back paused), and completed and failed
// rows that were launched in the background, newest first up to MaxCompleted. Sidecars of
// another session, of foreground launches, of tasks stopped with task_stop or whose
// launch failed are left out; corrupt ones are skipped with a warning. A row that cannot
// be continued comes back with a BlockedReason (listed, but not continuable): its
// transcript path leads outside the session directory, the transcript is missing,
// unreadable, belongs to another task or holds no history (a launch that never started
// needs none), it was worktree-isolated, or its cwd differs from the session's.
func LoadRoster(sess *store.Session, o RosterOptions) (rows []Row, warnings []string, err error) {
	names, err := sess.SidecarNames()
	if err != nil {
		return nil, nil, err
	}
	var running, settled []Sidecar
	for _, name := range names {
		s, err := ReadSidecar(sess, name)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("skipping the sidecar of %s: %v", name, err))
			continue
		}
		if s.ParentSessionID != o.SessionID {
			warnings = append(warnings, fmt.Sprintf("skipping the sidecar of %s: it belongs to session %q", name, s.ParentSessionID))
			continue
		}
		switch {
		case s.Status.Active() || s.Status == StatusPaused:
			running = append(running, s)
		case s.Status == StatusFailed && s.BlockedReason != "":
			// A launch that failed before it started: nothing to continue.
		case (s.Status == StatusCompleted || s.Status == StatusFailed) && s.Backgrounded:
			settled = append(settled, s)
		}
	}
	sort.Slice(settled, func(i, j int) bool { return settled[i].EndedAt.After(settled[j].EndedAt) })
	if o.MaxCompleted > 0 && len(settled) > o.MaxCompleted {
		settled = settled[:o.MaxCompleted]
	}
	for _, s := range append(running, settled...) {
		row := s.Row
		row.BlockedReason = blockedReason(sess, s, o)
		rows = append(rows, row)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].CreatedAt.Before(rows[j].CreatedAt) })
	return rows, warnings, nil
}

// blockedReason says why the stored row cannot be continued in this session ("" when it
// can). It reads only the first records of the transcript.
func blockedReason(sess *store.Session, s Sidecar, o RosterOptions) string {
	row := s.Row
	// A launch that never started (it was queued when its run ended) needs no history: it
	// starts fresh, on a transcript that may hold only its meta record, or none yet.
	fresh := row.neverStarted() && row.Turn <= 1
	switch {
	case s.Isolation == "worktree":
		if kept := row.LastOutcome.KeptWorktree; kept != "" && exists(kept) {
			return fmt.Sprintf("it ran in an isolated git worktree, kept with its changes at %s; an isolated task is not continued after a resume: review that worktree, or launch a new task", kept)
		}
		return "it ran in a temporary git worktree that was removed when its turn ended; an isolated task is not continued after a resume: launch a new task"
	case o.CWD != "" && s.CWD != "" && filepath.Clean(s.CWD) != filepath.Clean(o.CWD):
		return fmt.Sprintf("it ran in %s, not in this run's working directory %s (to move a session, use stoke sessions export and import)", s.CWD, o.CWD)
	case row.Status == StatusQueued && row.Turn <= 1 && !row.neverStarted():
		return "it was queued and never started; launch it again"
	case row.Transcript == "":
		if fresh {
			return ""
		}
		return "it has no transcript"
	}
	if err := sess.Confine(row.Transcript); err != nil {
		return fmt.Sprintf("its transcript path leaves its session directory: %v", err)
	}
	p, err := store.ProbeTranscript(row.Transcript)
	switch {
	case fresh && errors.Is(err, os.ErrNotExist):
		return ""
	case errors.Is(err, os.ErrNotExist):
		return "its transcript is missing"
	case err != nil:
		return fmt.Sprintf("its transcript cannot be read: %v", err)
	case fresh && !p.HasMeta && !p.Messages:
		return ""
	case !p.HasMeta:
		return "its transcript cannot be read: its first line is not the task's meta record"
	case p.Owner != string(row.TaskID):
		return fmt.Sprintf("its transcript belongs to task %q", p.Owner)
	case !p.Messages && !fresh:
		return "its transcript holds no history to continue from"
	}
	return ""
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// Restore adds the rows of a stored session to an empty or live registry. Completed rows
// come back completed and already notified; running rows come back paused. Restored rows
// have no resident runtime: their next turn is revived from the transcript. Restore is
// all-or-nothing: on error no row was added. Safe for concurrent use.
func (r *Registry) Restore(rows []Row) error {
	cs := make(map[TaskID]*controller, len(rows))
	for _, row := range rows {
		if _, err := ParseTaskID(string(row.TaskID)); err != nil {
			return fmt.Errorf("restore: %w", err)
		}
		if _, dup := cs[row.TaskID]; dup {
			return fmt.Errorf("restore: duplicate task %s", row.TaskID)
		}
		def, err := r.cfg.Catalog.Lookup(row.SubagentType)
		if err != nil {
			def = catalog.Definition{Name: row.SubagentType}
			if row.BlockedReason == "" {
				row.BlockedReason = err.Error()
			}
		}
		if row, err = row.restored(); err != nil {
			return err
		}
		cs[row.TaskID] = newController(r.env, def, row, def.Resident())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for id := range cs {
		if _, ok := r.tasks[id]; ok {
			return fmt.Errorf("restore: task %s is already in the registry", id)
		}
	}
	for id, c := range cs {
		r.tasks[id] = c
	}
	return nil
}

// UnreadNotifications returns the <task-notification> messages the parent has not read of
// the stored rows (as LoadRoster returns them) that notify: background launches and
// continuations whose latest turn ended, or was cut short by the end of a run (they come
// back paused). A notification counts as read when the parent's history (its transcript,
// repaired) holds one for that task and turn; so a turn that ended while the parent was
// busy, followed by a crash or a signal, is delivered on the next resume, exactly once —
// the parent's transcript records it with the prompt that carries it.
func UnreadNotifications(rows []Row, history []llm.Message) []llm.Message {
	read := readTurns(history)
	var out []llm.Message
	for _, row := range rows {
		if !row.Backgrounded && row.Turn <= 1 {
			continue // a foreground launch's result was its tool result
		}
		r, err := row.restored()
		if err != nil || read[r.TaskID] >= r.Turn {
			continue
		}
		status := streamjson.StatusCompleted
		switch r.Status {
		case StatusPaused:
			status = string(StatusPaused)
		case StatusFailed:
			status = streamjson.StatusFailed
		}
		out = append(out, llm.UserText(NotificationText(r, r.ToolUseID, status)))
	}
	return out
}

// readTurns returns, for each task, the latest turn whose notification the history holds.
func readTurns(history []llm.Message) map[TaskID]int {
	read := map[TaskID]int{}
	for _, m := range history {
		if m.Role != llm.RoleUser {
			continue
		}
		for _, b := range m.Content {
			if b.Type != llm.BlockText {
				continue
			}
			for _, n := range notificationRe().FindAllStringSubmatch(b.Text, -1) {
				turn, err := strconv.Atoi(n[2])
				if err == nil && turn > read[TaskID(n[1])] {
					read[TaskID(n[1])] = turn
				}
			}
		}
	}
	return read
}

// notificationRe finds a notification's task id and turn (NotificationText writes them in
// this order, with a few tags between them).
var notificationRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`<task-id>([A-Za-z0-9_-]+)</task-id>(?:\s*<[a-z-]+>[^<]*</[a-z-]+>)*?\s*<turn>(\d+)</turn>`)
})
