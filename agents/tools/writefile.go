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

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/stoke-cli/stoke/agents/llm"
)

//go:embed writefile.md
var writeFileDescription string

type writeFileTool struct{ w *Workspace }

// writeFileInput is write_file's arguments; Content is a pointer to tell an absent
// content from an empty file.
type writeFileInput struct {
	FilePath string  `json:"file_path" jsonschema:"The file to write: relative to the workspace root, or absolute inside it."`
	Content  *string `json:"content" jsonschema:"The whole new content of the file."`
}

func writeFileSchema() json.RawMessage {
	return InputSchema[writeFileInput](func(s *jsonschema.Schema) { minLength(s, "file_path", 1) })
}

func (t writeFileTool) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name:        NameWriteFile,
		Description: Description(writeFileDescription),
		Parameters:  t.w.schemas.get(NameWriteFile, writeFileSchema),
	}
}

func (t writeFileTool) Run(ctx context.Context, call Call) Result {
	var args writeFileInput
	if err := decodeArgs(call, &args); err != nil {
		return Errorf("%v", err)
	}
	if args.FilePath == "" {
		return missing(NameWriteFile, "file_path")
	}
	if args.Content == nil {
		return missing(NameWriteFile, "content")
	}
	abs, err := t.w.Resolve(args.FilePath)
	if err != nil {
		return Errorf("%s: %v", NameWriteFile, err)
	}
	shown := t.w.display(abs)
	t.w.edits.Lock()
	defer t.w.edits.Unlock()
	if err := ctx.Err(); err != nil {
		return Errorf("%s: cancelled: %v", NameWriteFile, context.Cause(ctx))
	}
	root, err := t.w.open()
	if err != nil {
		return Errorf("%s: %v", NameWriteFile, err)
	}
	defer root.Close()
	name := t.w.relName(abs)
	created, err := t.w.writeText(ctx, root, name, abs, []byte(*args.Content))
	if err != nil {
		return fileError(NameWriteFile, shown, err)
	}
	verb := "overwrote"
	if created {
		verb = "created"
	}
	return Result{Content: fmt.Sprintf("%s %s (%d bytes)", verb, shown, len(*args.Content))}
}

// writeFile writes data to name under root, creating missing parent directories; an
// existing file keeps its mode. It reports whether the file is new.
func writeFile(root *os.Root, name string, data []byte) (created bool, err error) {
	fi, err := root.Stat(name)
	switch {
	case err == nil && fi.IsDir():
		return false, errors.New("is a directory")
	case err == nil && !fi.Mode().IsRegular():
		return false, fmt.Errorf("is not a regular file (%v)", fi.Mode().Type())
	case errors.Is(err, fs.ErrNotExist):
		created = true
		if dir := filepath.Dir(name); dir != "." {
			if err := root.MkdirAll(dir, 0o755); err != nil {
				return false, err
			}
		}
	case err != nil:
		return false, err
	}
	return created, root.WriteFile(name, data, 0o644)
}
