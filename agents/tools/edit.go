package tools

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/stoke-cli/stoke/agents/llm"
)

//go:embed edit.md
var editDescription string

type editTool struct{ w *Workspace }

// editInput is edit's arguments; the strings are pointers to tell an absent one from an
// empty one.
type editInput struct {
	FilePath   string  `json:"file_path" jsonschema:"The file to edit: relative to the workspace root, or absolute inside it."`
	OldString  *string `json:"old_string" jsonschema:"The exact text to replace."`
	NewString  *string `json:"new_string" jsonschema:"The text to put in its place (must differ from old_string)."`
	ReplaceAll bool    `json:"replace_all,omitempty" jsonschema:"Replace every occurrence of old_string, not just one."`
}

func editSchema() json.RawMessage {
	return InputSchema[editInput](func(s *jsonschema.Schema) {
		minLength(s, "file_path", 1)
		s.Properties["replace_all"].Default = json.RawMessage("false")
	})
}

func (t editTool) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name:        NameEdit,
		Description: Description(editDescription),
		Parameters:  t.w.schemas.get(NameEdit, editSchema),
	}
}

func (t editTool) Run(ctx context.Context, call Call) Result {
	var args editInput
	if err := decodeArgs(call, &args); err != nil {
		return Errorf("%v", err)
	}
	switch {
	case args.FilePath == "":
		return missing(NameEdit, "file_path")
	case args.OldString == nil:
		return missing(NameEdit, "old_string")
	case args.NewString == nil:
		return missing(NameEdit, "new_string")
	}
	old, repl := *args.OldString, *args.NewString
	if old == repl {
		return Errorf("%s: old_string and new_string are the same; there is nothing to change", NameEdit)
	}
	abs, err := t.w.Resolve(args.FilePath)
	if err != nil {
		return Errorf("%s: %v", NameEdit, err)
	}
	shown := t.w.display(abs)
	t.w.edits.Lock()
	defer t.w.edits.Unlock()
	if err := ctx.Err(); err != nil {
		return Errorf("%s: cancelled: %v", NameEdit, context.Cause(ctx))
	}
	root, err := t.w.open()
	if err != nil {
		return Errorf("%s: %v", NameEdit, err)
	}
	defer root.Close()
	name := t.w.relName(abs)

	fi, err := root.Stat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist) && old == "":
		if _, err := t.w.writeText(ctx, root, name, abs, []byte(repl)); err != nil {
			return fileError(NameEdit, shown, err)
		}
		return Result{Content: fmt.Sprintf("created %s (%d bytes)", shown, len(repl))}
	case err != nil:
		return fileError(NameEdit, shown, err)
	case fi.IsDir():
		return Errorf("%s: %s is a directory, not a file", NameEdit, shown)
	case !fi.Mode().IsRegular():
		return Errorf("%s: %s is not a regular file (%v)", NameEdit, shown, fi.Mode().Type())
	}
	data, err := t.w.readText(ctx, root, name, abs)
	if err != nil {
		return fileError(NameEdit, shown, err)
	}
	if isBinary(data) {
		return Errorf("%s: %s is a binary file; only text files can be edited", NameEdit, shown)
	}
	text := string(data)
	if old == "" {
		if text != "" {
			return Errorf("%s: %s exists and is not empty; an empty old_string only creates a file. Give the text to replace, or use write_file to replace the whole file", NameEdit, shown)
		}
		if _, err := t.w.writeText(ctx, root, name, abs, []byte(repl)); err != nil {
			return fileError(NameEdit, shown, err)
		}
		return Result{Content: fmt.Sprintf("wrote %s (%d bytes)", shown, len(repl))}
	}

	n := strings.Count(text, old)
	if n == 0 && strings.Contains(text, "\r\n") && strings.Contains(old, "\n") && !strings.Contains(old, "\r\n") {
		// The model sees lines without their \r; match the file's line endings.
		crlf := strings.NewReplacer("\n", "\r\n")
		old, repl = crlf.Replace(old), crlf.Replace(repl)
		n = strings.Count(text, old)
	}
	switch {
	case n == 0:
		return Errorf("%s: old_string was not found in %s (0 matches); it must match the file exactly, whitespace and indentation included. Read the file again to see its current content", NameEdit, shown)
	case n > 1 && !args.ReplaceAll:
		return Errorf("%s: old_string occurs %d times in %s; it must match exactly once. Include more surrounding lines to make it unique, or set replace_all to replace all %d", NameEdit, n, shown, n)
	}
	at := strings.Index(text, old)
	replaced := strings.Replace(text, old, repl, -1)
	if !args.ReplaceAll {
		replaced = text[:at] + repl + text[at+len(old):]
	}
	if _, err := t.w.writeText(ctx, root, name, abs, []byte(replaced)); err != nil {
		return fileError(NameEdit, shown, err)
	}
	var b strings.Builder
	if n == 1 {
		fmt.Fprintf(&b, "replaced 1 occurrence in %s; the lines around it now read:\n", shown)
	} else {
		fmt.Fprintf(&b, "replaced %d occurrences in %s; the lines around the first now read:\n", n, shown)
	}
	snippet(&b, replaced, at, len(repl), t.w.limits.LineChars)
	return Result{Content: strings.TrimSuffix(b.String(), "\n")}
}

// snippet writes, numbered, the lines of text around text[at:at+n] (the new text): up to
// three before and after, and at most 20 of the new text itself.
func snippet(b *strings.Builder, text string, at, n, lineChars int) {
	const around, most = 3, 20
	first := strings.Count(text[:at], "\n") + 1
	span := strings.Count(text[at:at+n], "\n") + 1
	from := max(first-around, 1)
	to := first + min(span, most) - 1 + around
	start := strings.LastIndexByte(text[:at], '\n') + 1 // of line first
	for l := first; l > from; l-- {
		start = strings.LastIndexByte(text[:start-1], '\n') + 1
	}
	rest := text[start:]
	for i := from; i <= to && rest != ""; i++ {
		line, after, _ := strings.Cut(rest, "\n")
		shown, cut := cutRunes([]byte(strings.TrimSuffix(line, "\r")), lineChars)
		s := validText(string(shown))
		if cut {
			s += " [… cut]"
		}
		numbered(b, i, s)
		rest = after
	}
}
