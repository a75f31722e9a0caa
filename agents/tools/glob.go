package tools

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/stoke-cli/stoke/agents/llm"
)

//go:embed glob.md
var globDescription string

type globTool struct{ w *Workspace }

// globInput is glob's arguments.
type globInput struct {
	Pattern string `json:"pattern" jsonschema:"The glob pattern, e.g. \"**/*.go\"."`
	Path    string `json:"path,omitempty" jsonschema:"The directory to search in, relative to the workspace root or absolute inside it. Default: the root."`
}

func globSchema() json.RawMessage {
	return InputSchema[globInput](func(s *jsonschema.Schema) { minLength(s, "pattern", 1) })
}

func (t globTool) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name:        NameGlob,
		Description: Description(globDescription, t.w.limits.GlobResults),
		Parameters:  t.w.schemas.get(NameGlob, globSchema),
	}
}

func (t globTool) Run(ctx context.Context, call Call) Result {
	var args globInput
	if err := decodeArgs(call, &args); err != nil {
		return Errorf("%v", err)
	}
	if args.Pattern == "" {
		return missing(NameGlob, "pattern")
	}
	// The pattern's leading part without wildcards names a directory to start in; an
	// absolute pattern names it alone.
	dir, pattern := doublestar.SplitPattern(filepath.ToSlash(args.Pattern))
	switch {
	case filepath.IsAbs(args.Pattern):
		if dir == "" {
			dir = "/"
		}
	case dir != ".":
		dir = filepath.Join(args.Path, dir)
	default:
		dir = args.Path
	}
	if !doublestar.ValidatePattern(pattern) {
		return Errorf("%s: invalid pattern %q", NameGlob, args.Pattern)
	}
	base, err := t.w.Resolve(dir)
	if err != nil {
		return Errorf("%s: %v", NameGlob, err)
	}
	shown := t.w.display(base)
	if fi, err := os.Stat(base); err != nil {
		return fileError(NameGlob, shown, err)
	} else if !fi.IsDir() {
		return Errorf("%s: %s is not a directory", NameGlob, shown)
	}

	// Without **, a pattern of n components matches nothing deeper than n.
	depth := 0
	if !strings.Contains(pattern, "**") {
		depth = strings.Count(pattern, "/") + 1
	}
	prefix := ""
	if base != t.w.root {
		prefix = shown + "/"
	}
	limit := t.w.limits.GlobResults
	var found []string
	notes, err := t.w.walk(ctx, base, func(rel string, isDir bool) error {
		sub := strings.TrimPrefix(rel, prefix)
		if doublestar.MatchUnvalidated(pattern, sub) {
			if len(found) == limit {
				return errCapped
			}
			if isDir {
				rel += "/"
			}
			found = append(found, rel)
		}
		if isDir && depth > 0 && strings.Count(sub, "/")+1 >= depth {
			return fs.SkipDir
		}
		return nil
	})
	capped := errors.Is(err, errCapped)
	if err != nil && !capped {
		return Errorf("%s: cancelled: %v", NameGlob, err)
	}
	if len(found) == 0 {
		return Result{Content: withNotes(fmt.Sprintf("no paths match %q in %s", args.Pattern, shown), notes)}
	}
	slices.Sort(found)
	var b strings.Builder
	for i, p := range found {
		if b.Len()+len(p)+1 > t.w.limits.OutputChars {
			found, capped = found[:i], true
			break
		}
		b.WriteString(p)
		b.WriteByte('\n')
	}
	if capped {
		fmt.Fprintf(&b, "[%d paths shown; there are more: narrow the pattern or the path]", len(found))
	}
	return Result{Content: withNotes(strings.TrimSuffix(b.String(), "\n"), notes)}
}
