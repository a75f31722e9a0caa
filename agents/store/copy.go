package store

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/stoke-cli/stoke/agents/internal/fsx"
)

// ErrExists: a session of that id is already stored.
var ErrExists = errors.New("session already exists")

// SidecarFunc rewrites the content of a sidecar (stored under name) as it is copied into
// another session; the agents package, which owns what a sidecar holds, provides it. An
// error leaves the sidecar out of the copy.
type SidecarFunc func(name string, data []byte) ([]byte, error)

// Fork copies session src into a new session id of working directory cwd under home, and
// returns it: the parent's transcript (its meta record naming the fork), every task
// transcript as it is, and every sidecar through sidecar. The lock file and worktrees stay
// behind, and src is only read. The fork is assembled in a temporary directory and moved
// into place at the end, so that a failure leaves no partial session. warnings name the
// sidecars left out.
func Fork(src *Session, home, cwd string, info Info, sidecar SidecarFunc) (fork *Session, warnings []string, err error) {
	fork, err = stage(home, cwd, info.SessionID, func(tmp string) error {
		parent, err := os.Open(src.ParentTranscript())
		switch {
		case errors.Is(err, os.ErrNotExist):
			parent = nil
		case err != nil:
			return fmt.Errorf("fork: %w", err)
		}
		if parent != nil {
			defer parent.Close()
		}
		if err := writeParent(filepath.Join(tmp, parentTranscript), parent, info); err != nil {
			return fmt.Errorf("fork: %w", err)
		}
		entries, err := os.ReadDir(filepath.Join(src.dir, agentsDir))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("fork: %w", err)
		}
		for _, e := range entries {
			name := e.Name()
			if !e.Type().IsRegular() {
				continue
			}
			srcPath, dstPath := filepath.Join(src.dir, agentsDir, name), filepath.Join(tmp, agentsDir, name)
			switch {
			case taskFile(name, transcriptSuffix):
				if err := copyFile(dstPath, srcPath); err != nil {
					return fmt.Errorf("fork: %w", err)
				}
			case taskFile(name, sidecarSuffix):
				data, err := os.ReadFile(srcPath)
				if err == nil {
					data, err = sidecar(strings.TrimSuffix(name, sidecarSuffix), data)
				}
				if err != nil {
					warnings = append(warnings, fmt.Sprintf("sidecar %s left out of the fork: %v", name, err))
					continue
				}
				if err := writeFile(dstPath, bytes.NewReader(data)); err != nil {
					return fmt.Errorf("fork: %w", err)
				}
			}
		}
		return writeInfo(tmp, info)
	})
	return fork, warnings, err
}

// stage makes the session id of cwd under home: fill writes its files into a temporary
// directory beside where it goes, which is then renamed into place. On error nothing is
// left behind. The session must not exist yet.
func stage(home, cwd, id string, fill func(tmp string) error) (*Session, error) {
	if _, err := ParseSessionID(id); err != nil {
		return nil, err
	}
	if Taken(home, id) {
		return nil, fmt.Errorf("%w: session %s is already stored under %s", ErrExists, id, home)
	}
	s := New(home, cwd, id)
	project := filepath.Dir(s.dir)
	made, err := mkdirs(project)
	if err != nil {
		return nil, fmt.Errorf("create project dir: %w", err)
	}
	removeStaleStages(project, id)
	tmp, err := os.MkdirTemp(project, ".tmp-"+id+"-"+strconv.Itoa(os.Getpid())+"-")
	if err == nil {
		err = os.Chmod(tmp, 0o700)
	}
	if err == nil {
		err = os.Mkdir(filepath.Join(tmp, agentsDir), 0o700)
	}
	if err == nil {
		err = fill(tmp)
	}
	if err == nil {
		err = fsx.SyncDir(filepath.Join(tmp, agentsDir))
	}
	if err == nil {
		err = fsx.SyncDir(tmp)
	}
	if err == nil {
		if _, serr := os.Lstat(s.dir); serr == nil {
			err = fmt.Errorf("%w: %s", ErrExists, s.dir)
		}
	}
	if err == nil {
		err = os.Rename(tmp, s.dir)
	}
	if err == nil {
		err = fsx.SyncDir(project)
	}
	if err != nil {
		if tmp != "" {
			_ = os.RemoveAll(tmp)
		}
		for i := len(made) - 1; i >= 0; i-- {
			_ = os.Remove(made[i]) // only when still empty
		}
		return nil, err
	}
	return s, nil
}

// removeStaleStages removes the temporary directories an import or fork of session id
// left in project when it was killed: ".tmp-ID-PID-RANDOM" of a process that is gone.
func removeStaleStages(project, id string) {
	dirs, _ := filepath.Glob(filepath.Join(project, ".tmp-"+id+"-*"))
	for _, d := range dirs {
		pidText, _, ok := strings.Cut(strings.TrimPrefix(filepath.Base(d), ".tmp-"+id+"-"), "-")
		if pid, err := strconv.Atoi(pidText); ok && err == nil && pid > 0 && pid != os.Getpid() && fsx.ProcessGone(pid) {
			_ = os.RemoveAll(d)
		}
	}
}

// mkdirs creates dir and its missing parents (0700) and returns the ones it created,
// outermost first.
func mkdirs(dir string) ([]string, error) {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		}
		missing = append([]string{d}, missing...)
		if filepath.Dir(d) == d {
			break
		}
	}
	return missing, os.MkdirAll(dir, 0o700)
}

// taskFile reports whether name is a task's file: a safe name and the suffix.
func taskFile(name, suffix string) bool {
	base, ok := strings.CutSuffix(name, suffix)
	return ok && safeName(base)
}

// writeParent writes the parent transcript at path: a meta record for info, then every
// line of src (nil: none) except a meta record on its first line.
func writeParent(path string, src io.Reader, info Info) error {
	meta, err := json.Marshal(Record{Type: RecordMeta, Time: info.CreatedAt.UTC(), SessionID: info.SessionID, CWD: info.CWD, Model: info.Model})
	if err != nil {
		return err
	}
	r := io.Reader(bytes.NewReader(append(meta, '\n')))
	if src != nil {
		br := bufio.NewReaderSize(src, 64<<10)
		first, err := br.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return err
		}
		var rec Record
		if json.Unmarshal(first, &rec) == nil && rec.Type == RecordMeta {
			first = nil
		} else if len(first) > 0 && first[len(first)-1] != '\n' {
			first = nil // a torn only line
		}
		r = io.MultiReader(r, bytes.NewReader(first), br)
	}
	return writeFile(path, r)
}

// writeInfo writes session.json into dir.
func writeInfo(dir string, info Info) error {
	data, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return fmt.Errorf("encode session info: %w", err)
	}
	return writeFile(filepath.Join(dir, infoFile), bytes.NewReader(append(data, '\n')))
}

// copyFile copies the regular file src to dst.
func copyFile(dst, src string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	return writeFile(dst, f)
}

// writeFile creates dst (0600; it must not exist) with r's content and syncs it.
func writeFile(dst string, r io.Reader) error {
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
