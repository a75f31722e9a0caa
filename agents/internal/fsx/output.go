package fsx

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Output is a file that appears at its path only once it is complete: a reader of the
// path sees the previous file or the whole new one, never a part, and a writer killed
// half way (SIGKILL, a crash) leaves no debris under a name.
//
// Where the system allows it (Linux, a file system with O_TMPFILE, /proc mounted) the
// file is created unnamed in the path's directory and linked in by Commit. Elsewhere it
// is a temporary file named TempPattern(path) beside the path, renamed by Commit; the
// next CreateOutput of the same path removes those a process that no longer runs left
// behind (RemoveStale).
type Output struct {
	*os.File
	path string
	tmp  string // the temporary name; "" while unnamed
	perm os.FileMode
	done bool
}

// TempPattern is the glob of the temporary names of outputs to path:
// ".BASE.tmp-PID-RANDOM" in the same directory.
func TempPattern(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
}

// tempName is a temporary name for an output to path, with this process's pid.
func tempName(path string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp-"+strconv.Itoa(os.Getpid())+"-"+hex.EncodeToString(b[:]))
}

// RemoveStale removes the temporary files of outputs to path whose writer no longer
// runs on this machine (the pid in their name is gone), and returns how many it removed.
// A temporary file of a running writer (or a name it cannot read a pid from) is kept.
func RemoveStale(path string) int {
	names, _ := filepath.Glob(TempPattern(path))
	n := 0
	prefix := "." + filepath.Base(path) + ".tmp-"
	for _, name := range names {
		pidText, _, ok := strings.Cut(strings.TrimPrefix(filepath.Base(name), prefix), "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 || pid == os.Getpid() || !ProcessGone(pid) {
			continue
		}
		if os.Remove(name) == nil {
			n++
		}
	}
	return n
}

// CreateOutput starts the file that Commit puts at path, mode perm, after removing the
// debris of earlier outputs to path (RemoveStale). The directory must exist.
func CreateOutput(path string, perm os.FileMode) (*Output, error) {
	RemoveStale(path)
	return createOutput(path, perm)
}

// createOutput is CreateOutput without the removal of debris: the file has mode perm
// exactly (whatever the umask).
func createOutput(path string, perm os.FileMode) (*Output, error) {
	o := &Output{path: path, perm: perm}
	if o.File = openUnnamed(filepath.Dir(path), perm); o.File == nil {
		o.tmp = tempName(path)
		f, err := OpenFile(o.tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if err != nil {
			return nil, fmt.Errorf("create temp file: %w", err)
		}
		o.File = f
	}
	if err := o.Chmod(perm); err != nil {
		o.Abort()
		return nil, fmt.Errorf("chmod temp file: %w", err)
	}
	return o, nil
}

// Commit syncs the file and puts it at its path (replacing what was there), then syncs
// the directory: the file and its name are durable.
func (o *Output) Commit() error { return o.commit(Durable) }

// commit puts the file at its path, syncing what d says.
func (o *Output) commit(d Durability) error {
	if o.done {
		return errors.New("output already committed or aborted")
	}
	o.done = true
	var err error
	if d != Unsynced {
		err = o.Sync()
	}
	if err == nil && o.tmp == "" {
		tmp := tempName(o.path)
		if err = linkUnnamed(o.File, tmp); err == nil {
			o.tmp = tmp
		}
	}
	if cerr := o.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(o.tmp, o.path)
	}
	if err != nil {
		if o.tmp != "" {
			_ = os.Remove(o.tmp)
		}
		return fmt.Errorf("commit %s: %w", o.path, err)
	}
	if d != Durable {
		return nil
	}
	return SyncDir(filepath.Dir(o.path))
}

// Abort drops the file: nothing appears at the path. After Commit it does nothing.
func (o *Output) Abort() {
	if o.done {
		return
	}
	o.done = true
	_ = o.Close()
	if o.tmp != "" {
		_ = os.Remove(o.tmp)
	}
}
