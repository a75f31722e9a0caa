package headless

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stoke-cli/stoke/agents/sandbox"
	"github.com/stoke-cli/stoke/agents/tools"
)

// shellWrites: the parent writes a file with the shell tool and reports the result.
const shellWrites = `
rules:
  - agent: parent
    when: {step: 1}
    reply:
      tool_calls:
        - name: shell
          input: {command: "echo x > made.txt"}
  - agent: parent
    reply: {text: "{{ lastToolResult }}"}
`

// The run's sandbox confines the parent's shell commands and is reported in init; a
// run without one reports none and runs them as before.
func TestRunSandbox(t *testing.T) {
	t.Parallel()
	for _, sandboxed := range []bool{false, true} {
		t.Run(map[bool]string{false: "none", true: "read-only"}[sandboxed], func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			o := opts(t, model(t, shellWrites), &out)
			o.ApprovalMode = tools.ModeYolo
			if sandboxed {
				sb, err := sandbox.New(sandbox.Config{Mode: sandbox.ModeReadOnly, TempRoot: t.TempDir()}, o.CWD)
				if err != nil {
					t.Fatal(err)
				}
				defer sb.Close()
				o.Sandbox = sb
			}
			if err := Run(t.Context(), o); err != nil {
				t.Fatalf("Run: %v", err)
			}
			ls := lines(t, out.String())
			init := ls[0].Get("sandbox")
			_, statErr := os.Stat(filepath.Join(o.CWD, "made.txt"))
			result := ls[len(ls)-1].Get("result").String()
			if !sandboxed {
				if init.Exists() || statErr != nil {
					t.Errorf("no sandbox: init.sandbox %s, made.txt %v", init.Raw, statErr)
				}
				return
			}
			if init.Get("mode").String() != "read-only" || !init.Get("enforced").Exists() || !init.Get("reason").Exists() {
				t.Errorf("init.sandbox = %s", init.Raw)
			}
			if !sandbox.Probe().Enforced {
				return
			}
			if statErr == nil || !strings.Contains(result, "Permission denied") || !strings.Contains(result, "[sandbox read-only:") {
				t.Errorf("read-only: made.txt %v, result %q", statErr, result)
			}
		})
	}
}
