package tools

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestNewWorkspace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"real/f.txt": "x"})
	if err := os.Symlink(filepath.Join(dir, "real"), filepath.Join(dir, "alias")); err != nil {
		t.Fatal(err)
	}
	w, err := NewWorkspace(filepath.Join(dir, "alias"), ModeDefault)
	if err != nil {
		t.Fatal(err)
	}
	realDir, _ := filepath.EvalSymlinks(filepath.Join(dir, "real"))
	if w.Root() != realDir {
		t.Errorf("Root = %s, want the resolved %s", w.Root(), realDir)
	}
	// An absolute path through the root as given is inside.
	if got, err := w.Resolve(filepath.Join(dir, "alias", "f.txt")); err != nil || got != filepath.Join(realDir, "f.txt") {
		t.Errorf("Resolve via the alias = %q, %v", got, err)
	}
	for _, bad := range []struct {
		name, root string
		mode       Mode
	}{
		{"missing", filepath.Join(dir, "nope"), ModeDefault},
		{"a file", filepath.Join(dir, "real", "f.txt"), ModeDefault},
		{"bad mode", dir, Mode("sudo")},
	} {
		if _, err := NewWorkspace(bad.root, bad.mode); err == nil {
			t.Errorf("NewWorkspace(%s) succeeded", bad.name)
		}
	}
}

// escapeFixture builds root/ and a sibling outside/ holding secret.txt, with links from
// root to outside and to places inside. It returns the workspace (yolo, so nothing is
// refused for approval) and the outside directory.
func escapeFixture(t *testing.T) (*Workspace, string) {
	t.Helper()
	top := t.TempDir()
	root, outside := filepath.Join(top, "root"), filepath.Join(top, "outside")
	writeFiles(t, top, map[string]string{
		"root/sub/in.txt":    "inside\n",
		"root/a/keep.txt":    "a\n",
		"outside/secret.txt": "secret\n",
	})
	links := map[string]string{
		"root/linkdir":  outside,                              // a directory outside
		"root/reldir":   "../outside",                         // the same, relative
		"root/linkfile": filepath.Join(outside, "secret.txt"), // a file outside
		"root/newlink":  filepath.Join(outside, "new.txt"),    // a file outside that does not exist
		"root/sub/deep": "../../outside/secret.txt",           // relative, from a subdirectory
		"root/inlink":   filepath.Join(root, "sub"),           // absolute, inside
		"root/inrel":    "sub/in.txt",                         // relative, inside
		"root/dangling": "sub/none/x.txt",                     // inside, to nothing
		"root/sub/hop":  "../linkdir",                         // inside link to a link outside
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(top, name)); err != nil {
			t.Fatal(err)
		}
	}
	w, err := NewWorkspace(root, ModeYolo)
	if err != nil {
		t.Fatal(err)
	}
	return w, outside
}

func TestResolve(t *testing.T) {
	t.Parallel()
	w, outside := escapeFixture(t)
	root := w.Root()
	tests := []struct {
		path    string
		want    string // relative to root; "" when refused
		wantErr error
	}{
		{"", ".", nil},
		{".", ".", nil},
		{"sub/in.txt", "sub/in.txt", nil},
		{"./sub//in.txt", "sub/in.txt", nil},
		{"sub/../a/keep.txt", "a/keep.txt", nil},
		{filepath.Join(root, "sub", "in.txt"), "sub/in.txt", nil},
		{"new/dirs/file.txt", "new/dirs/file.txt", nil},
		{"inlink/in.txt", "sub/in.txt", nil},
		{"inrel", "sub/in.txt", nil},
		{"inlink/new.txt", "sub/new.txt", nil},
		{"..", "", ErrOutsideWorkspace},
		{"../outside/secret.txt", "", ErrOutsideWorkspace},
		{"a/../../outside/secret.txt", "", ErrOutsideWorkspace},
		{filepath.Join(outside, "secret.txt"), "", ErrOutsideWorkspace},
		{"/etc/passwd", "", ErrOutsideWorkspace},
		{root + "-sibling/x", "", ErrOutsideWorkspace},
		{"linkdir/secret.txt", "", ErrOutsideWorkspace},
		{"linkdir", "", ErrOutsideWorkspace},
		{"reldir/secret.txt", "", ErrOutsideWorkspace},
		{"linkdir/new/file.txt", "", ErrOutsideWorkspace},
		{"linkfile", "", ErrOutsideWorkspace},
		{"newlink", "", ErrOutsideWorkspace},
		{"sub/deep", "", ErrOutsideWorkspace},
		{"sub/hop/secret.txt", "", ErrOutsideWorkspace},
		{"dangling", "", ErrDanglingSymlink},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			t.Parallel()
			got, err := w.Resolve(tt.path)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Resolve = %q, %v; want %v", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if want := filepath.Join(root, tt.want); got != want {
				t.Errorf("Resolve = %s, want %s", got, want)
			}
		})
	}
}

// TestToolsRefuseEscapes puts every escape to every tool that takes a path, in yolo mode,
// and checks that each is refused and that nothing outside changed.
func TestToolsRefuseEscapes(t *testing.T) {
	t.Parallel()
	files := []string{
		"../outside/secret.txt",
		"a/../../outside/secret.txt",
		"OUTSIDE/secret.txt", // OUTSIDE stands for the absolute path of outside/
		"linkdir/secret.txt",
		"reldir/secret.txt",
		"linkfile",
		"newlink",
		"sub/deep",
		"sub/hop/secret.txt",
		"linkdir/created.txt",
	}
	dirs := []string{"..", "../outside", "a/../../outside", "OUTSIDE", "/", "linkdir", "reldir", "sub/hop", "linkdir/new"}
	patterns := []string{"../outside/*", "../**", "OUTSIDE/*", "OUTSIDE/**/*.txt", "linkdir/*", "reldir/**", "sub/hop/*"}
	type toolCall struct {
		tool string
		args obj
	}
	var calls []toolCall
	for _, p := range files {
		calls = append(calls,
			toolCall{NameReadFile, obj{"file_path": p}},
			toolCall{NameWriteFile, obj{"file_path": p, "content": "pwned\n"}},
			toolCall{NameEdit, obj{"file_path": p, "old_string": "secret", "new_string": "pwned"}},
			toolCall{NameEdit, obj{"file_path": p, "old_string": "", "new_string": "pwned"}},
			toolCall{NameGrep, obj{"pattern": "secret", "path": p}},
		)
	}
	for _, p := range dirs {
		calls = append(calls,
			toolCall{NameGlob, obj{"pattern": "*", "path": p}},
			toolCall{NameGrep, obj{"pattern": "secret", "path": p}},
		)
	}
	for _, p := range patterns {
		calls = append(calls, toolCall{NameGlob, obj{"pattern": p}})
	}
	for _, c := range calls {
		t.Run(fmt.Sprintf("%s%v", c.tool, c.args), func(t *testing.T) {
			t.Parallel()
			w, outside := escapeFixture(t)
			for k, v := range c.args {
				if s, ok := v.(string); ok {
					c.args[k] = strings.Replace(s, "OUTSIDE", outside, 1)
				}
			}
			res := call(t, w, c.tool, c.args)
			if !res.IsError || !strings.Contains(res.Content, "outside the workspace") {
				t.Errorf("%s(%v) = %+v, want refused as outside the workspace", c.tool, c.args, res)
			}
			checkOutside(t, outside, res)
		})
	}
	// Walks do not follow links either.
	for _, c := range []toolCall{
		{NameGlob, obj{"pattern": "**"}},
		{NameGrep, obj{"pattern": "secret"}},
		{NameGrep, obj{"pattern": "."}},
	} {
		t.Run(fmt.Sprintf("walk %s%v", c.tool, c.args), func(t *testing.T) {
			t.Parallel()
			w, outside := escapeFixture(t)
			res := call(t, w, c.tool, c.args)
			if res.IsError || strings.Contains(res.Content, "secret.txt") || strings.Contains(res.Content, "link") {
				t.Errorf("%s(%v) = %+v, want no error and nothing through links", c.tool, c.args, res)
			}
			checkOutside(t, outside, res)
		})
	}
}

func checkOutside(t *testing.T, outside string, res Result) {
	t.Helper()
	if strings.Contains(res.Content, "secret\n") || strings.Contains(res.Content, ":1:secret") {
		t.Errorf("the result shows the outside file: %q", res.Content)
	}
	ents, _ := os.ReadDir(outside)
	if got := readOutside(t, outside); len(ents) != 1 || got != "secret\n" {
		t.Errorf("outside changed: %d entries, secret.txt = %q", len(ents), got)
	}
}

func readOutside(t *testing.T, outside string) string {
	b, err := os.ReadFile(filepath.Join(outside, "secret.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Links that stay inside the root work for reads and writes.
func TestSymlinksInside(t *testing.T) {
	t.Parallel()
	w, _ := escapeFixture(t)
	if res := call(t, w, NameReadFile, obj{"file_path": "inrel"}); res.IsError || !strings.Contains(res.Content, "inside") {
		t.Errorf("read through an inside link: %+v", res)
	}
	if res := call(t, w, NameWriteFile, obj{"file_path": "inlink/made.txt", "content": "m"}); res.IsError {
		t.Errorf("write through an inside directory link: %+v", res)
	}
	if got := readBack(t, w, "sub/made.txt"); got != "m" {
		t.Errorf("sub/made.txt = %q", got)
	}
	if res := call(t, w, NameEdit, obj{"file_path": "inrel", "old_string": "inside", "new_string": "edited"}); res.IsError {
		t.Errorf("edit through an inside link: %+v", res)
	}
	if got := readBack(t, w, "sub/in.txt"); got != "edited\n" {
		t.Errorf("sub/in.txt = %q", got)
	}
	if fi, err := os.Lstat(filepath.Join(w.Root(), "inrel")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link itself was replaced: %v %v", fi, err)
	}
	if res := call(t, w, NameGrep, obj{"pattern": "edited", "path": "inlink"}); res.IsError || res.Content != "sub/in.txt:1:edited" {
		t.Errorf("grep through an inside link: %+v", res)
	}
	if res := call(t, w, NameReadFile, obj{"file_path": "dangling"}); !res.IsError || !strings.Contains(res.Content, "symbolic link to nothing") {
		t.Errorf("read of a dangling link: %+v", res)
	}
}

func TestToolsAllowList(t *testing.T) {
	t.Parallel()
	w := newWorkspace(t, ModeDefault, nil)
	tests := []struct {
		name        string
		allow       []string
		want        []string
		wantUnknown []string
	}{
		{"empty is all", nil, WorkspaceToolNames(), nil},
		{"stoke names", []string{"grep", "read_file"}, []string{"read_file", "grep"}, nil},
		{"claude names", []string{"Read", "Write", "Edit", "Glob", "Grep", "Bash"}, WorkspaceToolNames(), nil},
		{"aliases and duplicates", []string{"MultiEdit", "LS", "Edit", "edit"}, []string{"edit", "glob"}, nil},
		{"unknown names", []string{"Read", "WebFetch", "Bash(git:*)", "task"}, []string{"read_file"}, []string{"WebFetch", "Bash(git:*)", "task"}},
		{"only unknown", []string{"Nope"}, nil, []string{"Nope"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ts, unknown := w.Tools(tt.allow)
			var names []string
			for _, tool := range ts {
				names = append(names, tool.Spec().Name)
			}
			if !slices.Equal(names, tt.want) || !slices.Equal(unknown, tt.wantUnknown) {
				t.Errorf("Tools(%q) = %q, unknown %q; want %q, %q", tt.allow, names, unknown, tt.want, tt.wantUnknown)
			}
		})
	}
}

// Every schema compiles and every description is there.
func TestSpecs(t *testing.T) {
	t.Parallel()
	w := newWorkspace(t, ModeYolo, map[string]string{"f.txt": "x\n"})
	ts, _ := w.Tools(nil)
	set := NewSet(ts...)
	for _, sp := range set.Specs() {
		if sp.Description == "" || strings.Contains(sp.Description, "%!") {
			t.Errorf("%s: description %q", sp.Name, sp.Description)
		}
		// Arguments the schema refuses never reach the tool.
		if res := set.Run(t.Context(), Call{Name: sp.Name, Input: []byte(`{"bogus":1}`)}); !res.IsError || !strings.Contains(res.Content, "invalid arguments") {
			t.Errorf("%s accepted bad arguments: %+v", sp.Name, res)
		}
	}
}
