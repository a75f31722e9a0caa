//go:build unix

package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A hard link is another name for a file's content: below yolo the file tools refuse a
// file with more than one, so a link made to .git/config (or to a file outside the
// workspace) is neither written nor read through.
func TestHardLinksRefused(t *testing.T) {
	t.Parallel()
	files := map[string]string{".git/config": "[core]\n", "plain.txt": "a\n"}
	calls := []struct {
		tool string
		args obj
	}{
		{NameWriteFile, obj{"file_path": "cfg", "content": "[core]\n\tfsmonitor = touch PWNED\n"}},
		{NameEdit, obj{"file_path": "cfg", "old_string": "[core]", "new_string": "[core]\n\tfsmonitor = touch PWNED"}},
		{NameReadFile, obj{"file_path": "cfg"}},
	}
	for _, mode := range []Mode{ModeDefault, ModeAutoEdit, ModeYolo} {
		for _, c := range calls {
			t.Run(string(mode)+"/"+c.tool, func(t *testing.T) {
				t.Parallel()
				approve := ApproverFunc(func(context.Context, Call, Kind) (bool, json.RawMessage, string) { return true, nil, "" })
				w := newWorkspace(t, mode, files, WithApprover(approve))
				if err := os.Link(filepath.Join(w.Root(), ".git", "config"), filepath.Join(w.Root(), "cfg")); err != nil {
					t.Skip("no hard links here:", err)
				}
				res := call(t, w, c.tool, c.args)
				if mode == ModeYolo {
					if res.IsError {
						t.Fatalf("yolo refused: %s", res.Content)
					}
					return
				}
				if !res.IsError || !strings.Contains(res.Content, "cfg has 2 hard links") {
					t.Fatalf("not refused: %+v", res)
				}
				if got := readBack(t, w, ".git/config"); got != "[core]\n" {
					t.Errorf(".git/config changed through the link: %q", got)
				}
				// a file with one name is as before
				if res := call(t, w, NameReadFile, obj{"file_path": "plain.txt"}); res.IsError {
					t.Errorf("plain.txt: %s", res.Content)
				}
			})
		}
	}
}
