package agents

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/stoke-cli/stoke/agents/internal/fsx"
)

// ProjectKey turns a working directory into one path element: every character other than
// a letter, a digit, '.', '_' or '-' becomes '-' (as Claude Code names its project dirs).
func ProjectKey(cwd string) string {
	var b strings.Builder
	for _, r := range filepath.Clean(cwd) {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	return b.String()
}

// SessionDir is $STOKE_HOME/projects/<cwd-key>/<session-id>.
func SessionDir(home, cwd, sessionID string) string {
	return filepath.Join(home, "projects", ProjectKey(cwd), sessionID)
}

// SessionInfo is session.json, the session's own small sidecar.
type SessionInfo struct {
	SessionID string    `json:"session_id"`
	CWD       string    `json:"cwd"`
	Model     string    `json:"model"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Dir is where the session lives (not stored).
	Dir string `json:"-"`
}

// ErrUnknownSession: no stored session has that id.
var ErrUnknownSession = errors.New("unknown session")

// ParseSessionID checks that s is a UUID before any path is built from it.
func ParseSessionID(s string) (string, error) {
	u, err := uuid.Parse(s)
	if err != nil || u.String() != strings.ToLower(s) {
		return "", fmt.Errorf("%w: %q is not a session id (a UUID)", ErrUnknownSession, s)
	}
	return u.String(), nil
}

// WriteSessionInfo writes dir/session.json atomically (0600; dir 0700).
func WriteSessionInfo(dir string, info SessionInfo) error {
	data, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return fmt.Errorf("encode session info: %w", err)
	}
	if err := fsx.WriteFileAtomic(filepath.Join(dir, "session.json"), append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("write session info: %w", err)
	}
	return nil
}

// ReadSessionInfo reads dir/session.json.
func ReadSessionInfo(dir string) (SessionInfo, error) {
	data, err := os.ReadFile(filepath.Join(dir, "session.json"))
	if err != nil {
		return SessionInfo{}, fmt.Errorf("read session info: %w", err)
	}
	var info SessionInfo
	if err := json.Unmarshal(data, &info); err != nil {
		return SessionInfo{}, fmt.Errorf("decode session info %s: %w", dir, err)
	}
	info.Dir = dir
	return info, nil
}

// ListSessions returns every stored session under home, newest first. Unreadable session
// directories are skipped.
func ListSessions(home string) ([]SessionInfo, error) {
	dirs, err := filepath.Glob(filepath.Join(home, "projects", "*", "*", "session.json"))
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	out := make([]SessionInfo, 0, len(dirs))
	for _, p := range dirs {
		info, err := ReadSessionInfo(filepath.Dir(p))
		if err != nil {
			continue
		}
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UpdatedAt.After(out[j].UpdatedAt) })
	return out, nil
}

// FindSession returns the stored session id, looked up in cwd's project first.
func FindSession(home, cwd, id string) (SessionInfo, error) {
	id, err := ParseSessionID(id)
	if err != nil {
		return SessionInfo{}, err
	}
	if info, err := ReadSessionInfo(SessionDir(home, cwd, id)); err == nil {
		return info, nil
	}
	matches, _ := filepath.Glob(filepath.Join(home, "projects", "*", id, "session.json"))
	for _, m := range matches {
		if info, err := ReadSessionInfo(filepath.Dir(m)); err == nil {
			return info, nil
		}
	}
	return SessionInfo{}, fmt.Errorf("%w: no stored session %s under %s", ErrUnknownSession, id, home)
}

// LatestSession returns the most recently updated session of cwd.
func LatestSession(home, cwd string) (SessionInfo, error) {
	all, err := ListSessions(home)
	if err != nil {
		return SessionInfo{}, err
	}
	for _, s := range all {
		if filepath.Clean(s.CWD) == filepath.Clean(cwd) {
			return s, nil
		}
	}
	return SessionInfo{}, fmt.Errorf("%w: no stored session for %s", ErrUnknownSession, cwd)
}
