package store

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The layout is the contract of DESIGN.md § On disk: other tools read these paths.
func TestSessionLayout(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	const id = "11111111-2222-3333-4444-555555555555"
	s := New(home, "/work/my repo", id)
	dir := filepath.Join(home, "projects", "-work-my-repo", id)
	tests := []struct{ got, want string }{
		{s.String(), dir},
		{s.ParentTranscript(), filepath.Join(dir, "session.jsonl")},
		{s.TaskTranscript("a0123456789abcdef"), filepath.Join(dir, "agents", "a0123456789abcdef.jsonl")},
		{s.Rel(filepath.Join(dir, "agents", "x.jsonl")), filepath.Join("agents", "x.jsonl")},
		{s.Rel("/elsewhere/x.jsonl"), "/elsewhere/x.jsonl"},
		{s.Abs(filepath.Join("agents", "x.jsonl")), filepath.Join(dir, "agents", "x.jsonl")},
		{s.Abs("/elsewhere/x.jsonl"), "/elsewhere/x.jsonl"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
	if s.Exists() {
		t.Fatal("a session nothing was written to exists")
	}
	if err := s.WriteSidecar("a0123456789abcdef", []byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, "agents", "a0123456789abcdef.meta.json"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("sidecar: %v %v", st, err)
	}
	wt, err := s.WorktreeDir()
	if err != nil || wt != filepath.Join(dir, "worktrees") {
		t.Fatalf("worktree dir %q, %v", wt, err)
	}
	if st, err := os.Stat(wt); err != nil || !st.IsDir() || st.Mode().Perm() != 0o700 {
		t.Fatalf("worktree dir not made 0700: %v %v", st, err)
	}
}

// A name that is not a plain file name never reaches a path.
func TestSidecarNamesAreChecked(t *testing.T) {
	t.Parallel()
	s := At(t.TempDir())
	for _, name := range []string{"", "../x", "a/b", "a.b", ".", string(make([]byte, 65))} {
		if err := s.WriteSidecar(name, nil); !errors.Is(err, ErrBadName) {
			t.Errorf("WriteSidecar(%q): %v", name, err)
		}
		if _, err := s.ReadSidecar(name); !errors.Is(err, ErrBadName) {
			t.Errorf("ReadSidecar(%q): %v", name, err)
		}
	}
	for _, name := range []string{"b2", "a1"} {
		if err := s.WriteSidecar(name, []byte(name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(s.String(), "agents", "odd name.meta.json"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	names, err := s.SidecarNames()
	if err != nil || len(names) != 3 || names[0] != "a1" || names[1] != "b2" || names[2] != "odd name" {
		t.Fatalf("names = %q, %v", names, err)
	}
	if data, err := s.ReadSidecar("a1"); err != nil || string(data) != "a1" {
		t.Fatalf("read %q, %v", data, err)
	}
}

func TestFindListLatest(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	sessions := []struct {
		id, cwd string
		updated time.Duration
	}{
		{"11111111-0000-4000-8000-000000000001", "/a", 1},
		{"11111111-0000-4000-8000-000000000002", "/a", 3},
		{"11111111-0000-4000-8000-000000000003", "/b", 2},
	}
	for _, s := range sessions {
		info := Info{SessionID: s.id, CWD: s.cwd, CreatedAt: base, UpdatedAt: base.Add(s.updated * time.Minute)}
		if err := New(home, s.cwd, s.id).WriteInfo(info); err != nil {
			t.Fatal(err)
		}
	}
	all, err := List(home)
	if err != nil || len(all) != 3 || all[0].Info.SessionID != sessions[1].id || all[2].Info.SessionID != sessions[0].id {
		t.Fatalf("List = %+v, %v", all, err)
	}
	latest, err := Latest(home, "/a")
	if err != nil || latest.Info.SessionID != sessions[1].id || !latest.Exists() {
		t.Fatalf("Latest = %+v, %v", latest, err)
	}
	// Found in another project's directory too.
	found, err := Find(home, "/a", sessions[2].id)
	if err != nil || found.Info.CWD != "/b" || found.String() != New(home, "/b", sessions[2].id).String() {
		t.Fatalf("Find = %+v, %v", found, err)
	}
	for _, bad := range []string{"nope", "11111111-0000-4000-8000-00000000000F", "11111111-0000-4000-8000-000000000009"} {
		if _, err := Find(home, "/a", bad); !errors.Is(err, ErrUnknownSession) {
			t.Errorf("Find(%q): %v", bad, err)
		}
	}
	if _, err := Latest(home, "/c"); !errors.Is(err, ErrUnknownSession) {
		t.Errorf("Latest of a project without sessions: %v", err)
	}
}
