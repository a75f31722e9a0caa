package headless

import (
	"bufio"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

const branchScenario = `
rules:
  - agent: parent
    when: {last_user_contains: "please proceed"}
    reply:
      tool_calls:
        - name: send_message
          input: {task_id: '{{ lastMatch "task_id: (a[0-9a-f]{16})" }}', message: "more"}
  - agent: parent
    when: {last_user_contains: "<turn>2</turn>"}
    reply: {text: "second turn done"}
  - agent: parent
    when: {last_user_contains: "<turn>1</turn>"}
    reply: {text: "noted"}
  - agent: parent
    when: {last_user_matches: "running in the background|continued on|revived from"}
    reply: {text: "waiting"}
  - agent: parent
    when: {last_user_contains: "launch"}
    reply:
      tool_calls:
        - name: task
          input: {description: keep, prompt: "keep this", run_in_background: true}
  - agent: general-purpose
    reply: {text: "kept"}
`

// A checkout of another branch between parent turns releases the resident agents: the
// next send_message revives the agent instead of continuing it hot.
func TestBranchSwitchReleasesResidents(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	for _, tc := range []struct {
		name     string
		checkout bool
		want     string
	}{{"same branch", false, "resident"}, {"branch switched", true, "revived"}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo := t.TempDir()
			for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "root"}} {
				if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
					t.Fatalf("git %v: %v %s", args, err, out)
				}
			}
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			o := opts(t, model(t, branchScenario), nil)
			o.Stdout, o.CWD, o.Prompt, o.InputFormat, o.Stdin = outW, repo, "", InputStreamJSON, inR
			done := make(chan error, 1)
			go func() { done <- Run(t.Context(), o); outW.Close() }()

			lines := bufio.NewScanner(outR)
			var all []string
			// readUntilNotified reads until the parent has read the agent's notification:
			// a task_notification line, then the result of the turn that read it (the
			// notification may be read inside the first turn or in a turn of its own).
			readUntilNotified := func() {
				notified := false
				for lines.Scan() {
					all = append(all, lines.Text())
					switch gjson.Get(lines.Text(), "type").String() + "/" + gjson.Get(lines.Text(), "subtype").String() {
					case "system/task_notification":
						notified = true
					case "result/success":
						if notified {
							return
						}
					}
				}
			}
			io.WriteString(inW, `{"type":"user","message":{"role":"user","content":"launch"}}`+"\n")
			readUntilNotified()
			if tc.checkout {
				if out, err := exec.Command("git", "-C", repo, "checkout", "-q", "-b", "other").CombinedOutput(); err != nil {
					t.Fatalf("checkout: %v %s", err, out)
				}
			}
			io.WriteString(inW, `{"type":"user","message":{"role":"user","content":"please proceed"}}`+"\n")
			inW.Close()
			for lines.Scan() {
				all = append(all, lines.Text())
			}
			if err := <-done; err != nil {
				t.Fatalf("Run: %v\n%s", err, strings.Join(all, "\n"))
			}
			var conts []string
			for _, l := range all {
				if gjson.Get(l, "subtype").String() == "task_started" {
					conts = append(conts, gjson.Get(l, "continuation").String())
				}
			}
			if len(conts) != 2 || conts[1] != tc.want {
				t.Errorf("continuations = %v, want [fresh %s]", conts, tc.want)
			}
		})
	}
}
