package tools

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// walk calls fn for the directories and regular files below base (a Resolve result that is
// a directory), directory by directory with names in lexical order. It skips .git, symbolic
// links (it never follows them, so it stays inside the root) and whatever the .gitignore
// files from the root down, and .git/info/exclude, ignore. fn gets the path relative to the
// root with / and whether it is a directory; it returns fs.SkipDir to leave a directory out,
// or another error to stop the walk with it. The walk stops when ctx is done.
func (w *Workspace) walk(ctx context.Context, base string, fn func(rel string, isDir bool) error) error {
	rel := ""
	if base != w.root {
		rel = w.display(base)
	}
	return w.walkDir(ctx, base, rel, w.ancestorRules(rel), fn)
}

// ancestorRules returns the ignore rules that apply in the directory rel (relative to the
// root, "" for the root) from outside it: .git/info/exclude and the .gitignore files of the
// directories above rel. rel's own .gitignore is read by the walk.
func (w *Workspace) ancestorRules(rel string) *ignoreRules {
	var rules *ignoreRules
	if data, err := os.ReadFile(filepath.Join(w.root, ".git", "info", "exclude")); err == nil {
		rules = rules.push("", data)
	}
	if rel == "" {
		return rules
	}
	dir := ""
	for part := range strings.SplitSeq(rel, "/") {
		if data, err := os.ReadFile(filepath.Join(w.root, filepath.FromSlash(dir), ".gitignore")); err == nil {
			rules = rules.push(dir, data)
		}
		dir = joinRel(dir, part)
	}
	return rules
}

func (w *Workspace) walkDir(ctx context.Context, abs, rel string, rules *ignoreRules, fn func(string, bool) error) error {
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	ents, err := os.ReadDir(abs)
	if err != nil {
		return nil // unreadable or gone: there is nothing to search in it
	}
	for _, e := range ents {
		if e.Name() == ".gitignore" && e.Type().IsRegular() {
			if data, err := os.ReadFile(filepath.Join(abs, ".gitignore")); err == nil {
				rules = rules.push(rel, data)
			}
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
			if err := fn(child, true); errors.Is(err, fs.SkipDir) {
				continue
			} else if err != nil {
				return err
			}
			if err := w.walkDir(ctx, filepath.Join(abs, name), child, rules, fn); err != nil {
				return err
			}
		case typ.IsRegular():
			if rules.ignored(child, false) {
				continue
			}
			if err := fn(child, false); err != nil {
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
