package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrUnsafe: a session directory, or a file in it, is not the user's own or others may
// write it (an *UnsafeError says which). On a shared STOKE_HOME another user could then
// plant the history a resume hands the model, or read the turns appended to a file it
// owns; stoke refuses it, as ssh refuses a loose ~/.ssh.
var ErrUnsafe = errors.New("unsafe session directory")

// UnsafeError names the path and what is wrong with it.
type UnsafeError struct {
	Path string
	Why  string
}

func (e *UnsafeError) Error() string {
	return fmt.Sprintf("%s %s: refused, as ssh refuses a loose ~/.ssh (make it yours and not writable by others, or set STOKE_HOME to a directory of your own)", e.Path, e.Why)
}

// Is makes errors.Is(err, ErrUnsafe) hold.
func (e *UnsafeError) Is(target error) bool { return target == ErrUnsafe }

// checkSafe refuses the session when its directory, the two above it (the project's and
// projects/), its agents/ directory or a file in either is not this user's own or is
// writable by others.
func (s *Session) checkSafe() error {
	project := filepath.Dir(s.dir)
	for _, d := range []string{filepath.Dir(project), project, s.dir} {
		if err := checkPath(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	for _, d := range []string{s.dir, filepath.Join(s.dir, agentsDir)} {
		ents, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		if d != s.dir {
			if err := checkPath(d); err != nil {
				return err
			}
		}
		for _, e := range ents {
			if e.IsDir() && e.Name() == agentsDir && d == s.dir {
				continue
			}
			if err := checkPath(filepath.Join(d, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}

// checkPath refuses p when it is not this user's own or others may write it; a
// symbolic link must be the user's own and lead to what is.
func checkPath(p string) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	if why := unsafeOwner(fi); why != "" {
		return &UnsafeError{Path: p, Why: why}
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		if fi, err = os.Stat(p); err != nil {
			return err
		}
		if why := unsafeOwner(fi); why != "" {
			return &UnsafeError{Path: p, Why: "leads to a file that " + why}
		}
	}
	return nil
}
