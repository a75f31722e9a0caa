package agents

import (
	"path/filepath"
	"strings"
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
