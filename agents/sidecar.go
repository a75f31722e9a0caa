package agents

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"

	"github.com/stoke-cli/stoke/agents/store"
)

// SidecarVersion is the format version written in every sidecar.
const SidecarVersion = 1

// Sidecar is agents/<task-id>.meta.json: the task row as stored, with the facts a restore
// checks. Transcript is stored relative to the session directory, so that a session
// directory is self-contained and can be resumed from a copy on another machine. The
// store keeps the file; this package owns what it holds.
type Sidecar struct {
	Version   int    `json:"version"`
	Isolation string `json:"isolation"`
	CWD       string `json:"cwd"`
	Row
}

// EncodeSidecar returns the bytes of s as stored: the current version, and the
// transcript path made relative by rel (nil keeps it).
func EncodeSidecar(s Sidecar, rel func(string) string) ([]byte, error) {
	if _, err := ParseTaskID(string(s.TaskID)); err != nil {
		return nil, fmt.Errorf("encode sidecar: %w", err)
	}
	s.Version = SidecarVersion
	if rel != nil && s.Transcript != "" {
		s.Transcript = rel(s.Transcript)
	}
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode sidecar: %w", err)
	}
	return append(data, '\n'), nil
}

// ErrBadSidecar: a sidecar is corrupt, truncated, or does not match its file name.
var ErrBadSidecar = errors.New("bad sidecar")

// ReadSidecar reads and checks the sidecar stored under name in sess: name must be a
// well-formed task id, and the id inside must match. The transcript path comes back
// absolute. A sidecar that does not decode — a crash of the machine can leave one empty,
// since sidecars are written without a sync of their own (store.Session.WriteSidecar) —
// is rebuilt from the row its transcript recorded at the task's last turn boundary.
func ReadSidecar(sess *store.Session, name string) (Sidecar, error) {
	id, err := ParseTaskID(name)
	if err != nil {
		return Sidecar{}, fmt.Errorf("%w: it is stored under %q, which is not a task id", ErrBadSidecar, name)
	}
	data, err := sess.ReadSidecar(name)
	if err != nil {
		return Sidecar{}, err
	}
	s, err := DecodeSidecar(data, id, sess.Abs)
	if err == nil || !errors.Is(err, ErrBadSidecar) {
		return s, err
	}
	if loaded, lerr := sess.ReadTranscript(sess.TaskTranscript(name)); lerr == nil && loaded.LastRow != nil {
		if rebuilt, rerr := DecodeSidecar(loaded.LastRow, id, sess.Abs); rerr == nil {
			return rebuilt, nil
		}
	}
	return Sidecar{}, err
}

// DecodeSidecar parses a sidecar for task id; abs resolves its relative transcript path
// (nil keeps it).
func DecodeSidecar(data []byte, id TaskID, abs func(string) string) (Sidecar, error) {
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
	if !s.Status.known() {
		return Sidecar{}, fmt.Errorf("%w: %s: unknown status %q", ErrBadSidecar, id, s.Status)
	}
	if abs != nil && s.Transcript != "" && !filepath.IsAbs(s.Transcript) {
		s.Transcript = abs(s.Transcript)
	}
	return s, nil
}

// ReadSidecars returns every readable sidecar of sess, oldest first, and a warning for
// each one that could not be read.
func ReadSidecars(sess *store.Session) ([]Sidecar, []string) {
	names, err := sess.SidecarNames()
	if err != nil {
		return nil, []string{err.Error()}
	}
	var out []Sidecar
	var warnings []string
	for _, name := range names {
		s, err := ReadSidecar(sess, name)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("skipping the sidecar of %s: %v", name, err))
			continue
		}
		out = append(out, s)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out, warnings
}

// ForkSidecar returns how a sidecar of session src is copied into its fork newID
// (store.Fork): a row of src now belongs to the fork, and its transcript path stays
// relative to the session directory, so that it names the fork's copy. Rows of another
// session are copied as they are (a resume leaves them out).
func ForkSidecar(src *store.Session, srcID, newID string) store.SidecarFunc {
	return func(name string, data []byte) ([]byte, error) {
		id, err := ParseTaskID(name)
		if err != nil {
			return nil, fmt.Errorf("%w: %q is not a task id", ErrBadSidecar, name)
		}
		s, err := DecodeSidecar(data, id, src.Abs)
		if err != nil {
			return nil, err
		}
		if s.ParentSessionID == srcID {
			s.ParentSessionID = newID
		}
		return EncodeSidecar(s, src.Rel)
	}
}

// BindSidecar returns how an imported session's sidecars are bound to working directory
// cwd (store.Import): a row of the session that ran in the session's working directory
// as the archive recorded it now runs in cwd, so that it is continuable there. Other rows
// keep theirs (and stay blocked).
func BindSidecar(cwd string) func(from store.Info, name string, data []byte) ([]byte, error) {
	return func(from store.Info, name string, data []byte) ([]byte, error) {
		id, err := ParseTaskID(name)
		if err != nil {
			return nil, fmt.Errorf("%w: %q is not a task id", ErrBadSidecar, name)
		}
		s, err := DecodeSidecar(data, id, nil)
		if err != nil {
			return nil, err
		}
		if s.ParentSessionID == from.SessionID && s.CWD != "" && from.CWD != "" && filepath.Clean(s.CWD) == filepath.Clean(from.CWD) {
			s.CWD = filepath.Clean(cwd)
		}
		// A sidecar written when transcript paths were stored absolute names the task's
		// transcript in the exporting machine's session directory: here it is the one the
		// archive brought. Any other path is kept, and the roster blocks it.
		if own, ok := store.ForeignTaskTranscript(s.Transcript, from.SessionID, string(id)); ok {
			s.Transcript = own
		}
		return EncodeSidecar(s, nil)
	}
}
