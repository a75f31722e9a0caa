package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
)

// The guard keeps what Landlock cannot keep inside a writable workspace: a directory a
// command may create files in hands the same right to every directory below it, so
// .git/hooks/ gets new hooks, .git/config is replaced (unlinked and written anew, or
// renamed over), .git itself renamed and another put in its place, and .mcp.json or
// .stoke/ created where they did not exist. Before and after every command stoke looks
// at these paths (metadata only, unless they changed) and puts back what a sandboxed
// process changed: a changed file gets its old content in a new file (which also cuts
// a hard link made to it), a new entry is removed, a moved .git is moved back. Changes
// made while no sandboxed process can run (stoke's own tools between commands) become
// the new reference instead.

// Caps on what the guard keeps of one workspace to put it back.
const (
	guardFileBytes  = 1 << 20 // one file
	guardTotalBytes = 8 << 20 // all files
	guardEntries    = 4096
)

// protectedTrees are the workspace's configuration directories, kept whole.
func protectedTrees() []string { return []string{".stoke", ".claude", ".qwen"} }

// gitFiles are the files in .git from which git runs commands or takes its configuration.
func gitFiles() []string { return []string{"config", "config.worktree", "commondir"} }

// entry is what the guard knows of one path.
type entry struct {
	typ   fs.FileMode // fs.ModeDir, fs.ModeSymlink, 0 (regular) or another type bit
	perm  fs.FileMode
	id    fileID
	size  int64
	mtime int64
	link  string // a symbolic link's target
	data  []byte // a regular file's content, when kept
	kept  bool   // data holds the content (or the entry needs none)
}

// same reports whether e and o are the same entry, unchanged.
func (e entry) same(o entry) bool {
	if e.typ != o.typ || e.perm != o.perm || !e.id.sameFile(o.id) {
		return false
	}
	if e.typ == fs.ModeDir {
		return true // its entries are compared one by one
	}
	return e.size == o.size && e.mtime == o.mtime && e.id.ctime == o.id.ctime && e.link == o.link
}

// snapshot is a workspace's protected paths (slash, relative to the root); a path that
// does not exist is absent.
type snapshot map[string]entry

// guard holds the reference snapshot of every workspace a command ran in.
type guard struct {
	mu   sync.Mutex
	base map[string]snapshot
}

func newGuard() *guard { return &guard{base: map[string]snapshot{}} }

// check compares root's protected paths with the reference. When a sandboxed process
// may have made the differences (suspicious), they are put back and described, one
// line each; otherwise what is there becomes the reference.
func (g *guard) check(root string, suspicious bool) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.checkLocked(root, suspicious)
}

func (g *guard) checkLocked(root string, suspicious bool) []string {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil
	}
	defer r.Close()
	base, known := g.base[root]
	cur := scan(r, false)
	if known && equal(base, cur) {
		return nil
	}
	if !known || !suspicious {
		g.base[root] = scan(r, true)
		return nil
	}
	notes := restore(r, base, cur)
	g.base[root] = scan(r, true)
	return notes
}

// all checks every workspace a command ran in.
func (g *guard) all(suspicious bool) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var notes []string
	for _, root := range slicesSorted(g.base) {
		notes = append(notes, g.checkLocked(root, suspicious)...)
	}
	return notes
}

func slicesSorted(m map[string]snapshot) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func equal(a, b snapshot) bool {
	if len(a) != len(b) {
		return false
	}
	for k, e := range a {
		o, ok := b[k]
		if !ok || !e.same(o) {
			return false
		}
	}
	return true
}

// scanner walks the protected paths of one workspace.
type scanner struct {
	r     *os.Root
	keep  bool
	out   snapshot
	total int
}

// scan returns root's protected paths; keep reads the content of the regular files.
func scan(r *os.Root, keep bool) snapshot {
	s := &scanner{r: r, keep: keep, out: snapshot{}}
	if e, ok := s.add(".git"); ok {
		switch e.typ {
		case fs.ModeDir:
			for _, f := range gitFiles() {
				s.add(".git/" + f)
			}
			s.tree(".git/hooks")
			for _, m := range s.names(".git/modules") {
				sub := ".git/modules/" + m
				for _, f := range gitFiles() {
					s.add(sub + "/" + f)
				}
				s.tree(sub + "/hooks")
			}
		}
	}
	for _, t := range protectedTrees() {
		s.tree(t)
	}
	s.add(".mcp.json")
	return s.out
}

// add records rel when it exists.
func (s *scanner) add(rel string) (entry, bool) {
	if len(s.out) >= guardEntries {
		return entry{}, false
	}
	fi, err := s.r.Lstat(rel)
	if err != nil {
		return entry{}, false
	}
	e := entry{typ: fi.Mode().Type(), perm: fi.Mode().Perm(), id: idOf(fi), size: fi.Size(), mtime: fi.ModTime().UnixNano(), kept: true}
	switch e.typ {
	case fs.ModeSymlink:
		e.link, _ = s.r.Readlink(rel)
	case 0:
		e.kept = false
		if s.keep && fi.Size() <= guardFileBytes && s.total+int(fi.Size()) <= guardTotalBytes {
			if data, err := s.read(rel); err == nil {
				e.data, e.kept = data, true
				s.total += len(data)
			}
		}
	}
	s.out[rel] = e
	return e, true
}

func (s *scanner) read(rel string) ([]byte, error) {
	f, err := s.r.OpenFile(rel, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, guardFileBytes+1))
}

// tree records rel and, when it is a directory, everything below it.
func (s *scanner) tree(rel string) {
	e, ok := s.add(rel)
	if !ok || e.typ != fs.ModeDir {
		return
	}
	for _, n := range s.names(rel) {
		s.tree(rel + "/" + n)
	}
}

// names lists the directory rel, sorted.
func (s *scanner) names(rel string) []string { return listDir(s.r, rel) }

// restore puts back in r what differs between base and cur, and describes it.
func restore(r *os.Root, base, cur snapshot) []string {
	var notes []string
	if n := relocateGit(r, base, cur); n != "" {
		notes = append(notes, n)
		cur = scan(r, false)
	}
	paths := make([]string, 0, len(base)+len(cur))
	for p := range base {
		paths = append(paths, p)
	}
	for p := range cur {
		if _, ok := base[p]; !ok {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	var removed, failed []string
	var changed []string
	gone := func(p string) bool { // below a path already removed
		for _, d := range removed {
			if strings.HasPrefix(p, d+"/") {
				return true
			}
		}
		return false
	}
	for _, p := range paths {
		b, inBase := base[p]
		c, inCur := cur[p]
		switch {
		case gone(p) && !inBase:
			continue
		case inBase && inCur && b.same(c):
			continue
		case !inBase:
			if err := r.RemoveAll(p); err != nil {
				failed = append(failed, p)
				continue
			}
			removed = append(removed, p)
		default:
			if inCur && (c.typ != b.typ || b.typ != fs.ModeDir) {
				if err := r.RemoveAll(p); err != nil {
					failed = append(failed, p)
					continue
				}
				removed = append(removed, p)
			}
			if err := put(r, p, b); err != nil {
				failed = append(failed, p)
				continue
			}
			changed = append(changed, p)
		}
	}
	if len(changed) > 0 {
		notes = append(notes, "[sandbox: the command changed protected configuration; stoke put back "+strings.Join(changed, ", ")+"]")
	}
	if extra := slices.DeleteFunc(slices.Clone(removed), func(p string) bool { _, ok := base[p]; return ok }); len(extra) > 0 {
		notes = append(notes, "[sandbox: the command created protected configuration; stoke removed "+strings.Join(extra, ", ")+"]")
	}
	if len(failed) > 0 {
		notes = append(notes, "[sandbox: the command changed protected configuration that stoke could not put back: "+strings.Join(failed, ", ")+"]")
	}
	return notes
}

// put recreates the entry e at rel.
func put(r *os.Root, rel string, e entry) error {
	if !e.kept {
		return errors.New("not kept")
	}
	switch e.typ {
	case fs.ModeDir:
		if fi, err := r.Lstat(rel); err == nil && fi.IsDir() {
			return r.Chmod(rel, e.perm)
		}
		if err := r.Mkdir(rel, e.perm); err != nil {
			return err
		}
		return r.Chmod(rel, e.perm)
	case fs.ModeSymlink:
		return r.Symlink(e.link, rel)
	case 0:
		f, err := r.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, e.perm)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, bytes.NewReader(e.data))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = r.Chmod(rel, e.perm)
		}
		return err
	}
	return fmt.Errorf("%s: cannot recreate a %v", rel, e.typ)
}

// relocateGit moves the workspace's .git back when a command renamed it (within the
// workspace, to its top level or one level down) and put another in its place; the
// other is moved aside to .git.sandbox-rejected. It returns the note, or "".
func relocateGit(r *os.Root, base, cur snapshot) string {
	b, ok := base[".git"]
	if !ok || b.typ != fs.ModeDir {
		return ""
	}
	if c, ok := cur[".git"]; ok && c.id.sameFile(b.id) {
		return ""
	}
	where := findDir(r, b.id)
	if where == "" {
		return ""
	}
	aside := ""
	if _, err := r.Lstat(".git"); err == nil {
		aside = freeName(r, ".git.sandbox-rejected")
		if err := r.Rename(".git", aside); err != nil {
			return ""
		}
	}
	if err := r.Rename(where, ".git"); err != nil {
		return ""
	}
	note := "[sandbox: the command moved .git to " + where + "; stoke moved it back"
	if aside != "" {
		note += " and moved the .git the command made to " + aside
	}
	return note + "]"
}

// findDir looks for the directory id at the top of the workspace and one level down.
func findDir(r *os.Root, id fileID) string {
	top := listDir(r, ".")
	for _, n := range top {
		if fi, err := r.Lstat(n); err == nil && fi.IsDir() && idOf(fi).sameFile(id) {
			return n
		}
	}
	for _, n := range top {
		for _, m := range listDir(r, n) {
			p := path.Join(n, m)
			if fi, err := r.Lstat(p); err == nil && fi.IsDir() && idOf(fi).sameFile(id) {
				return p
			}
		}
	}
	return ""
}

// listDir lists the directory rel of r, sorted (nothing when it is not one).
func listDir(r *os.Root, rel string) []string {
	fi, err := r.Lstat(rel)
	if err != nil || !fi.IsDir() {
		return nil
	}
	f, err := r.Open(rel)
	if err != nil {
		return nil
	}
	defer f.Close()
	names, _ := f.Readdirnames(-1)
	slices.Sort(names)
	return names
}

// freeName returns name, or name.N, whichever does not exist yet.
func freeName(r *os.Root, name string) string {
	for i := 0; ; i++ {
		n := name
		if i > 0 {
			n = fmt.Sprintf("%s.%d", name, i)
		}
		if _, err := r.Lstat(n); errors.Is(err, fs.ErrNotExist) {
			return n
		}
	}
}
