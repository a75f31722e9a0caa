package fsx

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

func TestWriteFileAtomic(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "a", "b")
	path := filepath.Join(dir, "x.json")
	for _, content := range []string{"first", "second"} {
		if err := WriteFileAtomic(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Fatalf("read %q, %v; want %q", got, err, content)
		}
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mode = %v, %v", st.Mode(), err)
	}
	dst, err := os.Stat(dir)
	if err != nil || dst.Mode().Perm() != 0o700 {
		t.Fatalf("dir mode = %v, %v", dst.Mode(), err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("temp files left behind: %v", entries)
	}
}

// An open that fails for want of descriptors is retried until it succeeds; any other
// failure is returned at once.
func TestRetryOnEMFILE(t *testing.T) {
	t.Parallel()
	calls := 0
	err := retry(func() error {
		calls++
		if calls < 3 {
			return &os.PathError{Op: "open", Path: "x", Err: syscall.EMFILE}
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("retry: %v after %d calls, want success after 3", err, calls)
	}
	calls = 0
	err = retry(func() error { calls++; return os.ErrNotExist })
	if !errors.Is(err, os.ErrNotExist) || calls != 1 {
		t.Fatalf("retry of another error: %v after %d calls", err, calls)
	}
}

// Handles never lets more than n functions run at once.
func TestHandlesBound(t *testing.T) {
	t.Parallel()
	h := NewHandles(3)
	var now, peak atomic.Int32
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			_ = h.Do(func() error {
				n := now.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				runtime.Gosched()
				now.Add(-1)
				return nil
			})
		})
	}
	wg.Wait()
	if p := peak.Load(); p > 3 || p < 1 {
		t.Fatalf("peak %d functions at once, want 1..3", p)
	}
}

// DirSync syncs only when entries changed, and one sync covers every change made before
// it: many writers at once share few fsyncs.
func TestDirSyncGroupCommit(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	d := NewDirSync(t.TempDir(), &n)
	if err := d.Sync(); err != nil || n.Load() != 0 {
		t.Fatalf("sync with no change: %v, %d fsyncs", err, n.Load())
	}
	d.Changed()
	if err := d.Sync(); err != nil || n.Load() != 1 {
		t.Fatalf("sync after a change: %v, %d fsyncs", err, n.Load())
	}
	if err := d.Sync(); err != nil || n.Load() != 1 {
		t.Fatalf("second sync: %v, %d fsyncs", err, n.Load())
	}
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			d.Changed()
			if err := d.Sync(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := n.Load() - 1; got < 1 || got > 64 {
		t.Fatalf("%d fsyncs for 64 writers", got)
	}
	t.Logf("64 writers, %d fsyncs", n.Load()-1)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.synced != d.changes {
		t.Fatalf("changes %d, synced %d", d.changes, d.synced)
	}
}
