package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/stoke-cli/stoke/agents/internal/fsx"
)

// walk calls fn for the directories and regular files below base (a Resolve result that is
// a directory), directory by directory with names in lexical order. It skips .git, symbolic
// links (it never follows them, so it stays inside the root) and whatever the .gitignore
// files from the root down, and .git/info/exclude, ignore. fn gets the path relative to the
// root with / and whether it is a directory; it returns fs.SkipDir to leave a directory out,
// or another error to stop the walk with it. The walk stops when ctx is done. notes say
// which ignore files were not applied whole (too long, too many patterns of the kind
// matched one by one), for the tool's result.
func (w *Workspace) walk(ctx context.Context, base string, fn func(rel string, isDir bool) error) (notes []string, err error) {
	rel := ""
	if base != w.root {
		rel = w.display(base)
	}
	st := &walkState{fn: fn}
	err = w.walkDir(ctx, base, rel, w.ancestorRules(st, rel), st)
	return st.notes, err
}

// walkState is what one walk carries along.
type walkState struct {
	fn    func(rel string, isDir bool) error
	notes []string
}

// push adds the ignore file at abs (shown as shown), of the directory rel, to rules.
func (w *Workspace) pushIgnore(st *walkState, rules *ignoreRules, rel, abs, shown string) *ignoreRules {
	set := w.ignores.load(abs)
	if set == nil {
		return rules
	}
	if set.truncated {
		st.notes = append(st.notes, fmt.Sprintf("%s is longer than %d bytes: only its first %d bytes are applied, so paths it ignores further down may be listed", shown, maxIgnoreBytes, maxIgnoreBytes))
	}
	if set.dropped > 0 {
		st.notes = append(st.notes, fmt.Sprintf("%s has %d more patterns of the kind matched one by one than the %d applied: those are left out, so paths they ignore may be listed", shown, set.dropped, maxGeneralPatterns))
	}
	return rules.push(rel, set)
}

// ancestorRules returns the ignore rules that apply in the directory rel (relative to the
// root, "" for the root) from outside it: .git/info/exclude and the .gitignore files of the
// directories above rel. rel's own .gitignore is read by the walk.
func (w *Workspace) ancestorRules(st *walkState, rel string) *ignoreRules {
	rules := w.pushIgnore(st, nil, "", filepath.Join(w.root, ".git", "info", "exclude"), ".git/info/exclude")
	if rel == "" {
		return rules
	}
	dir := ""
	for part := range strings.SplitSeq(rel, "/") {
		rules = w.pushIgnore(st, rules, dir, filepath.Join(w.root, filepath.FromSlash(dir), ".gitignore"), joinRel(dir, ".gitignore"))
		dir = joinRel(dir, part)
	}
	return rules
}

func (w *Workspace) walkDir(ctx context.Context, abs, rel string, rules *ignoreRules, st *walkState) error {
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	ents, err := os.ReadDir(abs)
	if err != nil {
		return nil // unreadable or gone: there is nothing to search in it
	}
	for _, e := range ents {
		if e.Name() == ".gitignore" && e.Type().IsRegular() {
			rules = w.pushIgnore(st, rules, rel, filepath.Join(abs, ".gitignore"), joinRel(rel, ".gitignore"))
			break
		}
	}
	for _, e := range ents {
		name, typ := e.Name(), e.Type()
		if name == ".git" {
			continue
		}
		child := joinRel(rel, name)
		switch {
		case typ.IsDir():
			if rules.ignored(child, true) {
				continue
			}
			if err := st.fn(child, true); errors.Is(err, fs.SkipDir) {
				continue
			} else if err != nil {
				return err
			}
			if err := w.walkDir(ctx, filepath.Join(abs, name), child, rules, st); err != nil {
				return err
			}
		case typ.IsRegular():
			if rules.ignored(child, false) {
				continue
			}
			if err := st.fn(child, false); err != nil {
				return err
			}
		}
	}
	return nil
}

func joinRel(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// withNotes appends the walk's notes to a tool's result, one bracketed line each.
func withNotes(content string, notes []string) string {
	for _, n := range notes {
		content += "\n[note: " + n + "]"
	}
	return content
}

// maxIgnoreBytes bounds what is read of one ignore file; the rest is left out (walk's
// notes say so).
const maxIgnoreBytes = 1 << 20

// ignoreCache keeps the compiled ignore files of a workspace while they are unchanged
// (same file, size and modification time), so that a long .gitignore is parsed once,
// not at every grep and glob. It holds at most maxCachedIgnores files. Safe for
// concurrent use.
type ignoreCache struct {
	mu    sync.Mutex
	files map[string]cachedIgnore
}

type cachedIgnore struct {
	fi  os.FileInfo
	set *ignoreSet
}

const maxCachedIgnores = 1024

// load returns the compiled ignore file at path: nil when there is none, or it is not a
// regular file (a FIFO is never opened in a way that blocks) or cannot be read.
func (c *ignoreCache) load(path string) *ignoreSet {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	if c == nil {
		c = new(ignoreCache) // a Workspace made without NewWorkspace: nothing is kept
	}
	c.mu.Lock()
	cached, ok := c.files[path]
	c.mu.Unlock()
	if ok && os.SameFile(cached.fi, fi) && cached.fi.Size() == fi.Size() && cached.fi.ModTime().Equal(fi.ModTime()) {
		return cached.set
	}
	f, err := fsx.OpenRegular(path)
	if err != nil {
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(f, maxIgnoreBytes+1))
	f.Close()
	if err != nil {
		return nil
	}
	truncated := len(data) > maxIgnoreBytes
	if truncated {
		data = data[:maxIgnoreBytes]
	}
	set := compileIgnore(data)
	set.truncated = truncated
	c.mu.Lock()
	if c.files == nil || len(c.files) >= maxCachedIgnores {
		c.files = map[string]cachedIgnore{}
	}
	c.files[path] = cachedIgnore{fi: fi, set: set}
	c.mu.Unlock()
	return set
}
