package agents

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/stoke-cli/stoke/agents/internal/fsx"
)

// SidecarVersion is the format version written in every sidecar.
const SidecarVersion = 1

const sidecarSuffix = ".meta.json"

// Sidecar is agents/<task-id>.meta.json: the task row as stored, with the facts a restore
// checks. Transcript is relative to the session directory, so that a session directory is
// self-contained and can be resumed from a copy on another machine.
type Sidecar struct {
	Version   int    `json:"version"`
	Isolation string `json:"isolation"`
	CWD       string `json:"cwd"`
	Row
}

// SidecarPath is the sidecar's path for id in the session directory dir.
func SidecarPath(dir string, id TaskID) string {
	return filepath.Join(dir, "agents", string(id)+sidecarSuffix)
}

// WriteSidecar writes s atomically (temporary file, fsync, rename, directory fsync), mode 0600.
func WriteSidecar(dir string, s Sidecar) error {
	if _, err := ParseTaskID(string(s.TaskID)); err != nil {
		return fmt.Errorf("write sidecar: %w", err)
	}
	s.Version = SidecarVersion
	if rel, err := filepath.Rel(dir, s.Transcript); err == nil && !strings.HasPrefix(rel, "..") {
		s.Transcript = rel
	}
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encode sidecar: %w", err)
	}
	if err := fsx.WriteFileAtomic(SidecarPath(dir, s.TaskID), append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("write sidecar %s: %w", s.TaskID, err)
	}
	return nil
}

// ErrBadSidecar: a sidecar is corrupt, truncated, or does not match its file name.
var ErrBadSidecar = errors.New("bad sidecar")

// ReadSidecar reads and checks one sidecar file: its name must be <task-id>.meta.json with
// a well-formed id, and the id inside must match. The transcript path comes back absolute.
func ReadSidecar(path string) (Sidecar, error) {
	name := filepath.Base(path)
	id, err := ParseTaskID(strings.TrimSuffix(name, sidecarSuffix))
	if err != nil || !strings.HasSuffix(name, sidecarSuffix) {
		return Sidecar{}, fmt.Errorf("%w: %s: file name is not <task-id>%s", ErrBadSidecar, name, sidecarSuffix)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Sidecar{}, fmt.Errorf("read sidecar: %w", err)
	}
	return DecodeSidecar(data, id, filepath.Dir(filepath.Dir(path)))
}

// DecodeSidecar parses a sidecar for task id stored in session directory dir.
func DecodeSidecar(data []byte, id TaskID, dir string) (Sidecar, error) {
	var s Sidecar
	if err := json.Unmarshal(data, &s); err != nil {
		return Sidecar{}, fmt.Errorf("%w: %s: %v", ErrBadSidecar, id, err)
	}
	if s.TaskID != id {
		return Sidecar{}, fmt.Errorf("%w: %s: holds task id %q", ErrBadSidecar, id, s.TaskID)
	}
	if s.Version != SidecarVersion {
		return Sidecar{}, fmt.Errorf("%w: %s: unknown version %d", ErrBadSidecar, id, s.Version)
	}
	switch s.Status {
	case StatusRunning, StatusCompleted, StatusFailed, StatusCancelled, StatusPaused:
	default:
		return Sidecar{}, fmt.Errorf("%w: %s: unknown status %q", ErrBadSidecar, id, s.Status)
	}
	if s.Transcript != "" && !filepath.IsAbs(s.Transcript) {
		s.Transcript = filepath.Join(dir, s.Transcript)
	}
	return s, nil
}

// RosterOptions say which session a roster is loaded for.
type RosterOptions struct {
	SessionID string
	CWD       string
	// MaxCompleted keeps only the newest completed rows (0: no limit).
	MaxCompleted int
}

// LoadRoster reads the sidecars of session directory dir and returns the rows a resume
// restores: running rows (they come back paused) and completed rows that were launched in
// the background, newest first up to MaxCompleted. Sidecars of another session, of
// foreground launches, failed or cancelled tasks are left out; corrupt ones are skipped
// with a warning. A row whose transcript is missing or belongs to another task, that was
// worktree-isolated, or whose cwd differs from the session's, comes back with a
// BlockedReason: listed, but not continuable.
func LoadRoster(dir string, o RosterOptions) (rows []Row, warnings []string, err error) {
	paths, err := filepath.Glob(filepath.Join(dir, "agents", "*"+sidecarSuffix))
	if err != nil {
		return nil, nil, fmt.Errorf("list sidecars: %w", err)
	}
	var running, completed []Row
	for _, p := range paths {
		s, err := ReadSidecar(p)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("skipping sidecar %s: %v", filepath.Base(p), err))
			continue
		}
		if s.ParentSessionID != o.SessionID {
			warnings = append(warnings, fmt.Sprintf("skipping sidecar %s: it belongs to session %q", filepath.Base(p), s.ParentSessionID))
			continue
		}
		row := s.Row
		row.BlockedReason = blockedReason(s, o)
		switch {
		case s.Status == StatusRunning || s.Status == StatusPaused:
			running = append(running, row)
		case s.Status == StatusCompleted && s.Backgrounded:
			completed = append(completed, row)
		}
	}
	sort.Slice(completed, func(i, j int) bool { return completed[i].EndedAt.After(completed[j].EndedAt) })
	if o.MaxCompleted > 0 && len(completed) > o.MaxCompleted {
		completed = completed[:o.MaxCompleted]
	}
	rows = append(running, completed...)
	sort.Slice(rows, func(i, j int) bool { return rows[i].CreatedAt.Before(rows[j].CreatedAt) })
	return rows, warnings, nil
}

func blockedReason(s Sidecar, o RosterOptions) string {
	switch {
	case s.Isolation == "worktree":
		return "it ran in a temporary git worktree that no longer exists"
	case o.CWD != "" && s.CWD != "" && filepath.Clean(s.CWD) != filepath.Clean(o.CWD):
		return fmt.Sprintf("it ran in %s, not in this session's working directory %s", s.CWD, o.CWD)
	case s.Transcript == "":
		return "it has no transcript"
	}
	owner, err := transcriptOwner(s.Transcript)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "its transcript is missing"
	case err != nil:
		return fmt.Sprintf("its transcript cannot be read: %v", err)
	case owner != string(s.TaskID):
		return fmt.Sprintf("its transcript belongs to task %q", owner)
	}
	return ""
}

// transcriptOwner reads the task id of a transcript's meta record (its first line).
func transcriptOwner(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	line, err := bufio.NewReaderSize(f, 4096).ReadBytes('\n')
	if len(line) == 0 && err != nil {
		return "", fmt.Errorf("empty transcript: %w", err)
	}
	var rec Record
	if err := json.Unmarshal(line, &rec); err != nil || rec.Type != RecordMeta {
		return "", fmt.Errorf("transcript has no meta record")
	}
	return rec.TaskID, nil
}

// ReadSidecars returns every readable sidecar of session directory dir, oldest first, and
// a warning for each one that could not be read.
func ReadSidecars(dir string) ([]Sidecar, []string) {
	paths, _ := filepath.Glob(filepath.Join(dir, "agents", "*"+sidecarSuffix))
	var out []Sidecar
	var warnings []string
	for _, p := range paths {
		s, err := ReadSidecar(p)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("skipping sidecar %s: %v", filepath.Base(p), err))
			continue
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out, warnings
}
