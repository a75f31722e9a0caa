package store

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stoke-cli/stoke/agents/llm"
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

func TestProjectKeyOfLongPaths(t *testing.T) {
	t.Parallel()
	if got := ProjectKey("/work/my repo/"); got != "-work-my-repo" {
		t.Errorf("short key = %q", got)
	}
	seg := strings.Repeat("abcdefghij", 6)
	long := "/w/" + strings.Join([]string{seg, seg, seg, seg, seg}, "/") // over 300 bytes
	k1, k2 := ProjectKey(long), ProjectKey(long+"/")
	if len(k1) != 200 || k1 != k2 {
		t.Fatalf("key of a %d-byte path: %q (%d bytes), again %q", len(long), k1, len(k1), k2)
	}
	if !strings.HasPrefix(k1, "-w-"+seg[:20]) || !regexp.MustCompile(`-[0-9a-f]{16}$`).MatchString(k1) {
		t.Errorf("key = %q, want the path's start and a hash", k1)
	}
	if other := ProjectKey(long + "x"); other == k1 || len(other) != 200 {
		t.Errorf("two long paths share a key: %q", other)
	}
	// At exactly 200 bytes a key is kept as it is.
	exact := "/" + strings.Repeat("a", 199)
	if got := ProjectKey(exact); got != "-"+strings.Repeat("a", 199) {
		t.Errorf("200-byte key changed: %q", got)
	}
	// The session of a long path is stored, found and listed.
	home := t.TempDir()
	s := New(home, long, lockID)
	if err := s.WriteInfo(Info{SessionID: lockID, CWD: long}); err != nil {
		t.Fatal(err)
	}
	if st, err := Latest(home, long); err != nil || st.String() != s.String() {
		t.Fatalf("Latest = %v, %v", st.Session, err)
	}
}

func TestLoadInfoRebuildsFromTheTranscript(t *testing.T) {
	t.Parallel()
	home, cwd := t.TempDir(), "/work/repo"
	s := New(home, cwd, lockID)
	created := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	tr, err := s.OpenParent(Info{SessionID: lockID, CWD: cwd, Model: "m1"}, func() time.Time { return created })
	if err != nil {
		t.Fatal(err)
	}
	_ = tr.Append(llm.UserText("hi"))
	_ = tr.Close()
	// Opening it again adds no second meta record.
	tr, _ = s.OpenParent(Info{SessionID: lockID, CWD: "/elsewhere"}, nil)
	_ = tr.Close()
	if data, _ := os.ReadFile(s.ParentTranscript()); strings.Count(string(data), `"type":"meta"`) != 1 {
		t.Fatalf("parent transcript:\n%s", data)
	}
	for name, damage := range map[string]func(){
		"corrupt": func() { _ = os.WriteFile(filepath.Join(s.String(), "session.json"), []byte("{broken"), 0o600) },
		"missing": func() { _ = os.Remove(filepath.Join(s.String(), "session.json")) },
		"emptied": func() { _ = os.WriteFile(filepath.Join(s.String(), "session.json"), nil, 0o600) },
	} {
		damage()
		info, warning, err := s.LoadInfo("")
		if err != nil || info.SessionID != lockID || info.CWD != cwd || info.Model != "m1" || !info.CreatedAt.Equal(created) || info.UpdatedAt.IsZero() {
			t.Errorf("%s: rebuilt %+v, %v", name, info, err)
		}
		if !strings.Contains(warning, "rebuilt from session.jsonl") {
			t.Errorf("%s: warning %q", name, warning)
		}
		if st, err := Find(home, cwd, lockID); err != nil || st.Warning == "" {
			t.Errorf("%s: Find = %+v, %v", name, st, err)
		}
		if all, _ := List(home); len(all) != 1 || !all[0].In(cwd) {
			t.Errorf("%s: List = %+v", name, all)
		}
	}
	// A transcript written before meta records: the working directory comes from the
	// caller when its project key names the directory.
	old := New(home, cwd, "1e9c4b7a-5d3f-4e21-9a8b-7c6d5e4f3a21")
	tr, _ = OpenTranscript(old.ParentTranscript(), nil)
	_ = tr.Append(llm.UserText("hi"))
	_ = tr.Close()
	if info, _, err := old.LoadInfo(cwd); err != nil || info.CWD != cwd {
		t.Errorf("hinted rebuild: %+v, %v", info, err)
	}
	if info, _, err := old.LoadInfo("/other"); err != nil || info.CWD != "" {
		t.Errorf("a hint of another project was used: %+v, %v", info, err)
	}
	// Nothing at all: an unknown session.
	if _, _, err := New(home, cwd, "2e9c4b7a-5d3f-4e21-9a8b-7c6d5e4f3a21").LoadInfo(cwd); !errors.Is(err, ErrUnknownSession) {
		t.Errorf("empty dir: %v", err)
	}
}

func TestConfine(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	s := New(home, "/w", lockID)
	other := New(home, "/w", "1e9c4b7a-5d3f-4e21-9a8b-7c6d5e4f3a21")
	if err := os.MkdirAll(filepath.Join(s.String(), "agents"), 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(s.String(), "agents", "a0123456789abcdef.jsonl")
	if err := os.Symlink(other.TaskTranscript("a0123456789abcdef"), link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		ok   bool
	}{
		{s.TaskTranscript("a1"), true},
		{filepath.Join("agents", "a1.jsonl"), true},
		{filepath.Join(s.String(), "..", filepath.Base(other.String()), "agents", "a1.jsonl"), false},
		{filepath.Join("..", filepath.Base(other.String()), "agents", "a1.jsonl"), false},
		{other.TaskTranscript("a1"), false},
		{s.String(), false},
		{"/etc/passwd", false},
		{link, false},
	} {
		err := s.Confine(tc.path)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrOutside)) {
			t.Errorf("Confine(%q) = %v", tc.path, err)
		}
	}
	if _, err := s.OpenTranscript(other.TaskTranscript("a1"), nil); !errors.Is(err, ErrOutside) {
		t.Errorf("OpenTranscript outside: %v", err)
	}
	if _, err := s.ReadTranscript(link); !errors.Is(err, ErrOutside) {
		t.Errorf("ReadTranscript through a link: %v", err)
	}
	if _, err := os.Stat(other.String()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("something was written outside the session: %v", err)
	}
}

func TestProbeTranscript(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	meta := `{"type":"meta","ts":"2026-01-01T00:00:00Z","task_id":"a1"}` + "\n"
	msg := `{"type":"message","ts":"2026-01-01T00:00:00Z","message":{"role":"user","content":[{"type":"text","text":"hi"}]}}` + "\n"
	tests := []struct {
		name, content string
		want          Probe
	}{
		{"whole", meta + msg, Probe{Owner: "a1", HasMeta: true, Messages: true}},
		{"meta only", meta, Probe{Owner: "a1", HasMeta: true}},
		{"corrupt middle", meta + "{oops\n" + msg, Probe{Owner: "a1", HasMeta: true, Messages: true}},
		{"no meta", msg, Probe{Messages: true}},
		{"empty", "", Probe{}},
		{"torn message", meta + msg[:20], Probe{Owner: "a1", HasMeta: true}},
	}
	for _, tc := range tests {
		got, err := ProbeTranscript(write(strings.ReplaceAll(tc.name, " ", "-")+".jsonl", tc.content))
		if err != nil || got != tc.want {
			t.Errorf("%s: %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
	if _, err := ProbeTranscript(filepath.Join(dir, "missing.jsonl")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
}
