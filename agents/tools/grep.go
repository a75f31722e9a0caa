package tools

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/stoke-cli/stoke/agents/llm"
)

// grepMaxFileSize: larger files are not searched.
const grepMaxFileSize = 64 << 20

//go:embed grep.md
var grepDescription string

type grepTool struct{ w *Workspace }

// grepInput is grep's arguments.
type grepInput struct {
	Pattern string `json:"pattern" jsonschema:"The regular expression to search for."`
	Path    string `json:"path,omitempty" jsonschema:"The directory or file to search, relative to the workspace root or absolute inside it. Default: the root."`
	Glob    string `json:"glob,omitempty" jsonschema:"Only search files matching this glob, e.g. \"*.go\"."`
}

func grepSchema() json.RawMessage {
	return InputSchema[grepInput](func(s *jsonschema.Schema) { minLength(s, "pattern", 1) })
}

func (t grepTool) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name:        NameGrep,
		Description: Description(grepDescription, t.w.limits.GrepMatches),
		Parameters:  t.w.schemas.get(NameGrep, grepSchema),
	}
}

func (t grepTool) Run(ctx context.Context, call Call) Result {
	var args grepInput
	if err := decodeArgs(call, &args); err != nil {
		return Errorf("%v", err)
	}
	if args.Pattern == "" {
		return missing(NameGrep, "pattern")
	}
	// (?m): ^ and $ match at line ends, because whole files are searched at once.
	re, err := regexp.Compile("(?m)" + args.Pattern)
	if err != nil {
		return Errorf("%s: invalid regular expression: %s", NameGrep, oneLine(err.Error()))
	}
	if args.Glob != "" && !doublestar.ValidatePattern(args.Glob) {
		return Errorf("%s: invalid glob %q", NameGrep, args.Glob)
	}
	base, err := t.w.Resolve(args.Path)
	if err != nil {
		return Errorf("%s: %v", NameGrep, err)
	}
	shown := t.w.display(base)
	fi, err := os.Stat(base)
	if err != nil {
		return fileError(NameGrep, shown, err)
	}
	g := grep{w: t.w, re: re, limit: t.w.limits.GrepMatches, lineChars: t.w.limits.GrepLineChars}
	var lines, notes []string
	capped := false
	switch {
	case fi.Mode().IsRegular():
		s := g.searcher()
		found, err := s.file(base, shown)
		if err != nil {
			return Errorf("%s: %s: %v", NameGrep, shown, err)
		}
		if found.binary {
			return Result{Content: fmt.Sprintf("%s is a binary file; it was not searched", shown)}
		}
		lines, capped = found.lines, found.capped
	case fi.IsDir():
		g.glob = args.Glob
		lines, notes, capped, err = g.tree(ctx, base)
		if err != nil {
			return Errorf("%s: cancelled: %v", NameGrep, err)
		}
	default:
		return Errorf("%s: %s is not a regular file or directory", NameGrep, shown)
	}
	if len(lines) == 0 {
		return Result{Content: withNotes(fmt.Sprintf("no matches for %q in %s", args.Pattern, shown), notes)}
	}
	var b strings.Builder
	for i, l := range lines {
		if b.Len()+len(l)+1 > t.w.limits.OutputChars {
			lines, capped = lines[:i], true
			break
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	if capped {
		fmt.Fprintf(&b, "[stopped after %d matching lines; there may be more: narrow the pattern, the path or the glob]", len(lines))
	}
	return Result{Content: withNotes(strings.TrimSuffix(b.String(), "\n"), notes)}
}

// grep is one search.
type grep struct {
	w         *Workspace
	re        *regexp.Regexp
	glob      string // filter on paths below the base; without / on names
	limit     int    // matching lines in all
	lineChars int
}

// matches is what one file, or one batch of files, gave.
type matches struct {
	seq    int      // the batch's place in the walk
	lines  []string // path:line:text
	capped bool     // there are more matching lines than limit
	binary bool     // the file is binary, and was not searched
}

// tree searches the files below base: one goroutine walks and hands out the files in
// numbered batches (files of one directory), workers search the batches in parallel, and
// this goroutine puts the results back in walk order, so the output is the first limit
// matching lines in walk order whatever the timing. Once they are known, the walk and the
// workers stop.
func (g grep) tree(ctx context.Context, base string) (out, notes []string, capped bool, err error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	const batchSize = 64
	jobs := make(chan fileBatch, 16)
	results := make(chan matches, 16)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(jobs)
		prefix := ""
		if base != g.w.root {
			prefix = g.w.display(base) + "/"
		}
		b := fileBatch{}
		send := func() error {
			if len(b.names) == 0 {
				return nil
			}
			select {
			case jobs <- b:
				b = fileBatch{seq: b.seq + 1}
				return nil
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
		var err error
		notes, err = g.w.walk(ctx, base, func(rel string, isDir bool) error {
			if isDir || !g.selects(strings.TrimPrefix(rel, prefix)) {
				return nil
			}
			i := strings.LastIndexByte(rel, '/')
			dir, name := rel[:max(i, 0)], rel[i+1:]
			if len(b.names) > 0 && (dir != b.dir || len(b.names) == batchSize) {
				if err := send(); err != nil {
					return err
				}
			}
			b.dir = dir
			b.names = append(b.names, name)
			return nil
		})
		if err == nil {
			_ = send()
		}
	})
	var workers sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		workers.Go(func() {
			s := g.searcher()
			for b := range jobs {
				if ctx.Err() != nil {
					return
				}
				m := s.batch(b)
				select {
				case results <- m:
				case <-ctx.Done():
					return
				}
			}
		})
	}
	wg.Go(func() {
		workers.Wait()
		close(results)
	})

	pending := map[int]matches{}
	next := 0
	for m := range results {
		if capped {
			continue // draining
		}
		pending[m.seq] = m
		for {
			p, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			next++
			out = append(out, p.lines...)
			if len(out) >= g.limit || p.capped {
				// Enough: stop the walk and the workers; there may be more.
				capped, out = true, out[:min(len(out), g.limit)]
				cancel(errCapped)
				break
			}
		}
	}
	wg.Wait()
	if !capped && ctx.Err() != nil {
		return out, notes, false, context.Cause(ctx)
	}
	return out, notes, capped, nil
}

// fileBatch is files of one directory, numbered in walk order.
type fileBatch struct {
	seq   int
	dir   string // relative to the root, with /; "" for the root
	names []string
}

// selects reports whether the glob filter lets the file at sub (below the base) through.
func (g grep) selects(sub string) bool {
	if g.glob == "" {
		return true
	}
	if !strings.Contains(g.glob, "/") {
		sub = sub[strings.LastIndexByte(sub, '/')+1:]
	}
	return doublestar.MatchUnvalidated(g.glob, sub)
}

// searcher searches files one at a time, reusing its buffer; one per goroutine.
type searcher struct {
	g       grep
	buf     []byte
	literal []byte // the whole pattern, when it is a literal string
}

func (g grep) searcher() *searcher {
	s := &searcher{g: g, buf: make([]byte, 0, 64<<10)}
	if lit, complete := g.re.LiteralPrefix(); complete && lit != "" {
		s.literal = []byte(lit)
	}
	return s
}

// batch returns the matching lines of a batch of files, at most limit.
func (s *searcher) batch(b fileBatch) matches {
	m := matches{seq: b.seq}
	d, err := openDir(filepath.Join(s.g.w.root, filepath.FromSlash(b.dir)))
	if err != nil {
		return m // gone or unreadable: nothing to search
	}
	defer d.close()
	for _, name := range b.names {
		found, err := s.read(d, name, joinRel(b.dir, name))
		if err != nil {
			continue // an unreadable file has no matches
		}
		m.lines = append(m.lines, found.lines...)
		if found.capped || len(m.lines) >= s.g.limit {
			m.capped = true
			break
		}
	}
	return m
}

// file returns the matching lines of the file at abs.
func (s *searcher) file(abs, rel string) (matches, error) {
	d, err := openDir(filepath.Dir(abs))
	if err != nil {
		return matches{}, unwrapPath(err)
	}
	defer d.close()
	return s.read(d, filepath.Base(abs), rel)
}

// read returns the matching lines of one file (none for a binary file).
func (s *searcher) read(d dirFile, name, rel string) (matches, error) {
	var err error
	s.buf, err = d.read(s.buf, name, grepMaxFileSize)
	if err != nil {
		return matches{}, err
	}
	if isBinary(s.buf) {
		return matches{binary: true}, nil
	}
	return s.search(s.buf, rel), nil
}

func (s *searcher) search(data []byte, rel string) matches {
	var m matches
	line, counted := 1, 0 // the number of the line that starts at counted
	for pos := 0; pos < len(data); {
		var start, end int
		if s.literal != nil {
			i := bytes.Index(data[pos:], s.literal)
			if i < 0 {
				break
			}
			start, end = pos+i, pos+i+len(s.literal)
		} else {
			loc := s.g.re.FindIndex(data[pos:])
			if loc == nil {
				break
			}
			start, end = pos+loc[0], pos+loc[1]
		}
		ls := bytes.LastIndexByte(data[pos:start], '\n') + 1 + pos
		le := len(data)
		if i := bytes.IndexByte(data[start:], '\n'); i >= 0 {
			le = start + i
		}
		// A match may span lines (\s matches a newline); then the line must match alone.
		if end <= le || s.g.re.Match(data[ls:le]) {
			if len(m.lines) == s.g.limit {
				m.capped = true
				break
			}
			line += bytes.Count(data[counted:ls], []byte{'\n'})
			counted = ls
			text, cut := cutRunes(bytes.TrimSuffix(data[ls:le], []byte{'\r'}), s.g.lineChars)
			l := rel + ":" + strconv.Itoa(line) + ":" + validText(string(text))
			if cut {
				l += " [… cut]"
			}
			m.lines = append(m.lines, l)
		}
		pos = le + 1
	}
	return m
}
