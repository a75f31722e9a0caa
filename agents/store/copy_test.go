package store

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stoke-cli/stoke/agents/llm"
)

const forkID = "9e9c4b7a-5d3f-4e21-9a8b-7c6d5e4f3a21"

// sampleSession stores a session with a parent transcript, one task's transcript and
// sidecar, a lock and a worktree dir, and returns it with its Info.
func sampleSession(t *testing.T, home, cwd string) (*Session, Info) {
	t.Helper()
	info := Info{SessionID: lockID, CWD: cwd, Model: "m1", CreatedAt: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	s := New(home, cwd, lockID)
	l, err := s.Lock(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	if err := s.WriteInfo(info); err != nil {
		t.Fatal(err)
	}
	tr, err := s.OpenParent(info, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = tr.Append(llm.UserText("keep NONCE-1"))
	_ = tr.Close()
	tt, err := s.OpenTranscript(s.TaskTranscript("a0123456789abcdef"), nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = tt.Write(Record{Type: RecordMeta, TaskID: "a0123456789abcdef"})
	_ = tt.Append(llm.UserText("Remember NONCE-1"))
	_ = tt.Close()
	if err := s.WriteSidecar("a0123456789abcdef", []byte(`{"parent_session_id":"`+lockID+`"}`+"\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.WorktreeDir(); err != nil {
		t.Fatal(err)
	}
	return s, info
}

// files maps every regular file under dir (relative path) to its content.
func files(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestFork(t *testing.T) {
	t.Parallel()
	home, cwd := t.TempDir(), "/work/repo"
	src, _ := sampleSession(t, home, cwd)
	before := files(t, src.String())
	info := Info{SessionID: forkID, CWD: cwd, Model: "m1", ForkedFrom: lockID}
	fork, warnings, err := Fork(src, home, cwd, info, func(name string, data []byte) ([]byte, error) {
		return bytes.ReplaceAll(data, []byte(lockID), []byte(forkID)), nil
	})
	if err != nil || len(warnings) != 0 {
		t.Fatalf("Fork: %v %v", err, warnings)
	}
	if got := files(t, src.String()); len(got) != len(before) {
		t.Fatalf("the original changed: %v", got)
	} else {
		for k, v := range before {
			if got[k] != v {
				t.Errorf("the original's %s changed", k)
			}
		}
	}
	got := files(t, fork.String())
	for _, name := range []string{"session.json", "session.jsonl", "agents/a0123456789abcdef.jsonl", "agents/a0123456789abcdef.meta.json"} {
		if _, ok := got[name]; !ok {
			t.Errorf("the fork has no %s: %v", name, got)
		}
	}
	if _, ok := got["session.lock"]; ok {
		t.Error("the lock was copied")
	}
	if got["agents/a0123456789abcdef.jsonl"] != before["agents/a0123456789abcdef.jsonl"] {
		t.Error("the task transcript is not a copy")
	}
	if !strings.Contains(got["agents/a0123456789abcdef.meta.json"], forkID) {
		t.Errorf("the sidecar was not rewritten: %s", got["agents/a0123456789abcdef.meta.json"])
	}
	parent := got["session.jsonl"]
	if strings.Count(parent, `"type":"meta"`) != 1 || !strings.Contains(parent, `"session_id":"`+forkID+`"`) || strings.Contains(parent, lockID) ||
		!strings.HasSuffix(parent, strings.SplitN(before["session.jsonl"], "\n", 2)[1]) {
		t.Errorf("the fork's parent transcript:\n%s", parent)
	}
	st, err := Find(home, cwd, forkID)
	if err != nil || st.Info.ForkedFrom != lockID {
		t.Errorf("the fork is not stored: %+v, %v", st.Info, err)
	}
	// The same id again: refused, nothing changes.
	if _, _, err := Fork(src, home, cwd, info, nil); !errors.Is(err, ErrExists) {
		t.Errorf("fork onto a stored id: %v", err)
	}
}

// A fork that fails leaves nothing behind: no session, no temporary directory.
func TestForkFailureLeavesNothing(t *testing.T) {
	t.Parallel()
	home, cwd := t.TempDir(), "/work/repo"
	src, _ := sampleSession(t, home, cwd)
	boom := errors.New("boom")
	_, warnings, err := Fork(src, home, "/other/dir", Info{SessionID: forkID}, func(string, []byte) ([]byte, error) { return nil, boom })
	if err != nil || len(warnings) != 1 {
		t.Fatalf("a sidecar that cannot be rewritten is left out with a warning: %v %v", err, warnings)
	}
	if err := os.RemoveAll(New(home, "/other/dir", forkID).String()); err != nil {
		t.Fatal(err)
	}
	// Make the copy fail: the parent transcript cannot be read (it is a directory).
	if err := os.Remove(src.ParentTranscript()); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(src.ParentTranscript(), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Fork(src, home, "/third", Info{SessionID: forkID}, func(_ string, d []byte) ([]byte, error) { return d, nil }); err == nil {
		t.Fatal("fork with an unreadable transcript succeeded")
	}
	if _, err := os.Stat(filepath.Join(home, "projects", ProjectKey("/third"))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed fork left its project dir: %v", err)
	}
}

// The temporary directory an import or fork killed half way left (its process gone) is
// removed by the next one of the same session id; another process's is kept.
func TestStageRemovesStaleTemporaries(t *testing.T) {
	t.Parallel()
	home, cwd := t.TempDir(), "/work/repo"
	src, _ := sampleSession(t, home, cwd)
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Skipf("cannot start a process: %v", err)
	}
	project := filepath.Dir(New(home, "/fork/dir", forkID).String())
	stale := filepath.Join(project, ".tmp-"+forkID+"-"+strconv.Itoa(gone.Process.Pid)+"-123")
	live := filepath.Join(project, ".tmp-"+forkID+"-1-456")
	for _, d := range []string{stale, live} {
		if err := os.MkdirAll(filepath.Join(d, "agents"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := Fork(src, home, "/fork/dir", Info{SessionID: forkID}, func(_ string, d []byte) ([]byte, error) { return d, nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the stale temporary directory is still there: %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("a running process's temporary directory was removed: %v", err)
	}
}
