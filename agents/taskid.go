package agents

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// TaskID names a subagent: "a" followed by 16 lower-case hex digits. IDs are generated,
// and an ID from input is checked with ParseTaskID before any path is built from it.
type TaskID string

// NewTaskID returns a random task id.
func NewTaskID() TaskID {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+).
	return TaskID("a" + hex.EncodeToString(b[:]))
}

// ParseTaskID checks that s has the generated form.
func ParseTaskID(s string) (TaskID, error) {
	if len(s) != 17 || s[0] != 'a' {
		return "", fmt.Errorf("%w: %q", ErrBadTaskID, s)
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return "", fmt.Errorf("%w: %q", ErrBadTaskID, s)
		}
	}
	return TaskID(s), nil
}
