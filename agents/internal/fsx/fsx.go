// Package fsx writes files so that a crash leaves either the old or the new content, and
// opens them without running out of descriptors: a bounded number at once (Handles), and
// an open that fails for want of descriptors is retried (OpenFile).
package fsx

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Durability is what WriteFileAtomic makes durable (synced to stable storage) before it
// returns. Whatever it is, the file is replaced whole: readers, and a crash of the
// process, see the old content or the new one.
type Durability int

const (
	// Durable: the new content and its name (the temporary file, then the directory,
	// are synced).
	Durable Durability = iota
	// DataDurable: the new content is synced before the rename; the rename becomes
	// durable with the directory's next sync (until then a crash of the machine may
	// bring back the old content, never a torn one).
	DataDurable
	// Unsynced: nothing is synced. After a crash of the machine (not of the process) the
	// file may hold the old content, or be empty or partial: the caller keeps what it
	// needs durable elsewhere.
	Unsynced
)

// WriteFileAtomic writes data to path with mode perm, durably: a temporary file in the
// same directory is written, synced and renamed over path, then the directory is synced.
// The directory is created (0700) when missing.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	return ReplaceFile(path, data, perm, Durable)
}

// ReplaceFile writes data to path with mode perm through a file in the same directory
// that is then renamed over path (an Output: unnamed until then where the system allows,
// so a crash leaves no temporary file behind), syncing what d says. The directory is
// created (0700) when missing.
func ReplaceFile(path string, data []byte, perm os.FileMode, d Durability) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create dir: %w", err)
	}
	o, err := createOutput(path, perm)
	if err != nil {
		return err
	}
	if _, err := o.Write(data); err != nil {
		o.Abort()
		return fmt.Errorf("write temp file: %w", err)
	}
	return o.commit(d)
}

// SyncDir fsyncs a directory so that a rename or a new file in it is durable.
func SyncDir(dir string) error {
	d, err := OpenFile(dir, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("open dir: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync dir: %w", err)
	}
	return nil
}

// OpenFile is os.OpenFile, retried while it fails for want of file descriptors (EMFILE,
// ENFILE): other files of the process are closing, and a write must not be lost to a
// passing peak. It gives up after about 30 seconds.
func OpenFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	var f *os.File
	err := retry(func() (err error) {
		f, err = os.OpenFile(name, flag, perm)
		return err
	})
	return f, err
}

// retry runs op until it succeeds, fails otherwise than for want of descriptors, or the
// retries are spent (backing off from 1 ms to 250 ms, about 30 s in all).
func retry(op func() error) error {
	delay := time.Millisecond
	for waited := time.Duration(0); ; waited += delay {
		err := op()
		if !errors.Is(err, syscall.EMFILE) && !errors.Is(err, syscall.ENFILE) || waited > 30*time.Second {
			return err
		}
		time.Sleep(delay)
		delay = min(2*delay, 250*time.Millisecond)
	}
}

// Handles bounds how many files are open at once through it: Do waits for one of n
// handles. A nil *Handles bounds nothing. Safe for concurrent use.
type Handles struct {
	sem chan struct{}
}

// NewHandles returns a bound of n files open at once.
func NewHandles(n int) *Handles { return &Handles{sem: make(chan struct{}, n)} }

// Do runs f holding one handle: f opens, uses and closes its files (a temporary file and
// its directory count as one).
func (h *Handles) Do(f func() error) error {
	if h == nil {
		return f()
	}
	h.sem <- struct{}{}
	defer func() { <-h.sem }()
	return f()
}

// DirSync syncs one directory for many writers: a writer that needs the directory's
// entries durable (a rename, a new file) calls Sync after its change; one fsync serves
// every change made before it began (group commit), and none is made when nothing
// changed since the last. Safe for concurrent use.
type DirSync struct {
	dir    string
	fsyncs *atomic.Int64 // counts the fsyncs made (nil: not counted)

	mu      sync.Mutex
	cond    *sync.Cond
	changes uint64 // counts Changed calls
	synced  uint64 // changes covered by the last completed sync
	running bool
}

// NewDirSync returns the syncer of dir; fsyncs, when not nil, counts the fsyncs it makes.
func NewDirSync(dir string, fsyncs *atomic.Int64) *DirSync {
	d := &DirSync{dir: dir, fsyncs: fsyncs}
	d.cond = sync.NewCond(&d.mu)
	return d
}

// Changed records a change of the directory's entries that a later Sync must cover.
func (d *DirSync) Changed() {
	d.mu.Lock()
	d.changes++
	d.mu.Unlock()
}

// Sync makes every change recorded before it durable: it waits for a sync in flight
// that began after the last of them, or runs one.
func (d *DirSync) Sync() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	want := d.changes
	for d.synced < want {
		if d.running {
			d.cond.Wait()
			continue
		}
		d.running = true
		upto := d.changes
		d.mu.Unlock()
		err := SyncDir(d.dir)
		if d.fsyncs != nil {
			d.fsyncs.Add(1)
		}
		d.mu.Lock()
		d.running = false
		if err == nil {
			d.synced = max(d.synced, upto)
		}
		d.cond.Broadcast()
		if err != nil {
			return err
		}
	}
	return nil
}
