package tools

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/stoke-cli/stoke/agents/llm"
)

//go:embed readfile.md
var readFileDescription string

type readFileTool struct{ w *Workspace }

// readFileInput is read_file's arguments.
type readFileInput struct {
	FilePath string `json:"file_path" jsonschema:"The file to read: relative to the workspace root, or absolute inside it."`
	Offset   int    `json:"offset,omitempty" jsonschema:"The first line to read, 1-based (0 also means the first line)."`
	Limit    int    `json:"limit,omitempty" jsonschema:"The number of lines to read."`
}

func readFileSchema() json.RawMessage {
	return InputSchema[readFileInput](func(s *jsonschema.Schema) {
		minLength(s, "file_path", 1)
		bounds(s, "offset", 0, nil)
		bounds(s, "limit", 1, nil)
	})
}

func (t readFileTool) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name:        NameReadFile,
		Description: Description(readFileDescription, t.w.limits.ReadLines, t.w.limits.LineChars),
		Parameters:  t.w.schemas.get(NameReadFile, readFileSchema),
	}
}

func (t readFileTool) Run(ctx context.Context, call Call) Result {
	var args readFileInput
	if err := decodeArgs(call, &args); err != nil {
		return Errorf("%v", err)
	}
	if args.FilePath == "" {
		return missing(NameReadFile, "file_path")
	}
	lim := t.w.limits
	first := max(args.Offset, 1)
	count := lim.ReadLines
	if args.Limit > 0 {
		count = args.Limit
	}

	abs, err := t.w.Resolve(args.FilePath)
	if err != nil {
		return Errorf("%s: %v", NameReadFile, err)
	}
	shown := t.w.display(abs)
	root, err := t.w.open()
	if err != nil {
		return Errorf("%s: %v", NameReadFile, err)
	}
	defer root.Close()
	name := t.w.relName(abs)
	fi, err := root.Stat(name)
	switch {
	case err != nil:
		return fileError(NameReadFile, shown, err)
	case fi.IsDir():
		return Errorf("%s: %s is a directory, not a file; list it with glob (pattern \"*\", path %q)", NameReadFile, shown, shown)
	case !fi.Mode().IsRegular():
		return Errorf("%s: %s is not a regular file (%v)", NameReadFile, shown, fi.Mode().Type())
	}
	f, err := t.w.textReader(ctx, root, name, abs)
	if err != nil {
		return fileError(NameReadFile, shown, err)
	}
	defer f.Close()

	br := bufio.NewReaderSize(f, 64<<10)
	head, err := br.Peek(sniffLen)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return fileError(NameReadFile, shown, err)
	}
	if isBinary(head) {
		return Errorf("%s: %s is a binary file (%d bytes); only text files can be read", NameReadFile, shown, fi.Size())
	}
	if len(head) == 0 {
		if first > 1 {
			return Errorf("%s: offset %d is past the end of %s, which is empty", NameReadFile, first, shown)
		}
		return Result{Content: fmt.Sprintf("[%s is empty]", shown)}
	}

	var out strings.Builder
	var line []byte
	n, last := 0, 0 // lines read; the last line shown
	more := false   // lines follow the window
	cut := false    // the output was cut at ReadChars
	for {
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return Errorf("%s: cancelled: %v", NameReadFile, context.Cause(ctx))
			}
		}
		var full bool
		var err error
		line, full, err = readLine(br, line[:0], lim.LineChars)
		if err != nil && !errors.Is(err, io.EOF) {
			return fileError(NameReadFile, shown, err)
		}
		if len(line) == 0 && !full && errors.Is(err, io.EOF) {
			break // the end, after a final newline
		}
		n++
		if n >= first+count {
			more = true
			break
		}
		if n >= first {
			text := validText(string(bytes.TrimSuffix(line, []byte{'\r'})))
			if full {
				text += fmt.Sprintf(" [… line cut at %d characters]", lim.LineChars)
			}
			if out.Len() > 0 && out.Len()+len(text)+8 > lim.ReadChars {
				more, cut = true, true
				break
			}
			numbered(&out, n, text)
			last = n
		}
		if errors.Is(err, io.EOF) {
			break
		}
	}
	if n < first {
		return Errorf("%s: offset %d is past the end of %s, which has %d lines", NameReadFile, first, shown, n)
	}
	if more {
		why := ""
		if cut {
			why = " (the output is cut to stay short)"
		}
		fmt.Fprintf(&out, "[lines %d-%d of %s shown%s; more follow: read on with offset=%d]\n", first, last, shown, why, last+1)
	}
	return Result{Content: strings.TrimSuffix(out.String(), "\n")}
}

// readLine reads one line without its newline into buf, keeping at most max bytes of it
// (cut at a rune boundary); full reports that the line was longer. At the end of the input
// it returns io.EOF with the last, unterminated line, if any.
func readLine(br *bufio.Reader, buf []byte, max int) (line []byte, full bool, err error) {
	for {
		frag, err := br.ReadSlice('\n')
		frag = bytes.TrimSuffix(frag, []byte{'\n'})
		if room := max - len(buf); room > 0 {
			keep, c := cutRunes(frag, room)
			buf = append(buf, keep...)
			full = full || c
		} else if len(frag) > 0 {
			full = true
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return buf, full, err
		}
	}
}
