package hooks

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stoke-cli/stoke/agents/secrets"
)

func hook(command string) Hook { return Hook{Command: command, Timeout: 20 * time.Second} }

func TestRunSendsInputOnStdin(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		ev    Event
		input any
		want  map[string]any
	}{
		{
			name: "SubagentStop adds the stop keys and Claude's names",
			ev:   SubagentStop,
			input: Input{
				SessionID: "s-1", CWD: "/w", TaskID: "t-1", SubagentType: "reviewer", Turn: 2,
				Continuation: "resident", LastMessage: "found 3 bugs\n\"quoted\" ✓", StopHookActive: true,
			},
			want: map[string]any{
				"hook_event_name": "SubagentStop", "session_id": "s-1", "cwd": "/w", "task_id": "t-1",
				"subagent_type": "reviewer", "turn": 2.0, "continuation": "resident",
				"agent_id": "t-1", "agent_type": "reviewer",
				"last_message": "found 3 bugs\n\"quoted\" ✓", "last_assistant_message": "found 3 bugs\n\"quoted\" ✓",
				"stop_hook_active": true,
			},
		},
		{
			name:  "SubagentStart has no stop keys",
			ev:    SubagentStart,
			input: Input{SessionID: "s-1", CWD: "/w", TaskID: "t-1", SubagentType: "general-purpose", Turn: 1, Continuation: "fresh"},
			want: map[string]any{
				"hook_event_name": "SubagentStart", "session_id": "s-1", "cwd": "/w", "task_id": "t-1",
				"subagent_type": "general-purpose", "turn": 1.0, "continuation": "fresh",
				"agent_id": "t-1", "agent_type": "general-purpose",
			},
		},
		{
			name:  "Stop of the parent: empty task, stop keys present when false",
			ev:    Stop,
			input: Input{SessionID: "s-1", CWD: "/w", Turn: 3, TranscriptPath: "/t/session.jsonl"},
			want: map[string]any{
				"hook_event_name": "Stop", "session_id": "s-1", "cwd": "/w", "task_id": "",
				"subagent_type": "", "turn": 3.0, "continuation": "", "transcript_path": "/t/session.jsonl",
				"last_message": "", "last_assistant_message": "", "stop_hook_active": false,
			},
		},
		{
			name:  "any value is sent as its JSON",
			ev:    Stop,
			input: map[string]any{"custom": []int{1, 2}},
			want:  map[string]any{"custom": []any{1.0, 2.0}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			r := &Runner{Dir: dir}
			out, err := r.Run(t.Context(), tt.ev, []Hook{hook(`cat > input.json`)}, tt.input)
			if err != nil || out.Block || len(out.Failures) > 0 {
				t.Fatalf("Run = %+v, %v; want a quiet success", out, err)
			}
			data, err := os.ReadFile(filepath.Join(dir, "input.json"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasSuffix(data, []byte("}\n")) || bytes.Count(data, []byte("\n")) != 1 {
				t.Errorf("stdin = %q; want one JSON line", data)
			}
			var got map[string]any
			if err := json.Unmarshal(data, &got); err != nil {
				t.Fatalf("stdin is not JSON: %v: %q", err, data)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("stdin (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunDirAndEnvironment(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := &Runner{Dir: dir, Env: []string{"PATH=" + os.Getenv("PATH"), "GREETING=hi"}}
	cmd := `printf '%s\n' "$PWD" "$STOKE_PROJECT_DIR" "$CLAUDE_PROJECT_DIR" "$GREETING" "${HOME:-unset}" > env.txt`
	if _, err := r.Run(t.Context(), Stop, []Hook{hook(cmd)}, Input{}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "env.txt"))
	if err != nil {
		t.Fatal(err)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 5 {
		t.Fatalf("env.txt = %q", data)
	}
	if pwd, _ := filepath.EvalSymlinks(lines[0]); pwd != real {
		t.Errorf("working directory = %q; want %q", lines[0], dir)
	}
	want := []string{dir, dir, "hi", "unset"}
	if diff := cmp.Diff(want, lines[1:]); diff != "" {
		t.Errorf("environment (-want +got):\n%s", diff)
	}
}

func TestRunOutcomes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		shell    string // "" is bash
		hooks    []string
		want     Outcome
		failures []string // substrings, one per failure, in order
	}{
		{
			name:  "exit 0 with plain output decides nothing",
			hooks: []string{`echo all good; echo noise >&2`},
		},
		{
			name:  "exit 2 blocks with the stderr reason",
			hooks: []string{`echo ignored; echo '  Tests fail: fix them first.  ' >&2; exit 2`},
			want:  Outcome{Block: true, Reason: "Tests fail: fix them first."},
		},
		{
			name:  "exit 2 without a reason still blocks",
			hooks: []string{`exit 2`},
			want:  Outcome{Block: true, Reason: `blocked by hook "exit 2" (exit code 2, no reason on stderr)`},
		},
		{
			name:  "JSON decision block on stdout",
			hooks: []string{`printf '%s\n' '{"decision":"block","reason":"run the linter","extra":1}'`},
			want:  Outcome{Block: true, Reason: "run the linter"},
		},
		{
			name:  "JSON without a block only gives context",
			hooks: []string{`echo '{"decision":"approve","hookSpecificOutput":{"hookEventName":"SubagentStart","additionalContext":"use make"}}'`},
			want:  Outcome{AdditionalContext: "use make"},
		},
		{
			name:  "stdout that only looks like JSON is plain output",
			hooks: []string{`echo '{"decision":"block"'`},
		},
		{
			name:  "a failing hook is reported, not fatal, and the others still count",
			hooks: []string{`echo boom >&2; echo more >&2; exit 1`, `exit 0`, `echo first >&2; exit 2`, `echo '{"decision":"block","reason":"second"}'`},
			want:  Outcome{Block: true, Reason: "first\nsecond"},
			failures: []string{
				`Stop hook "echo boom >&2; echo more >&2; exit 1": exit status 1: boom`,
			},
		},
		{
			name:     "the shell cannot start",
			shell:    "/nonexistent/shell",
			hooks:    []string{`exit 0`},
			failures: []string{`Stop hook "exit 0": start: `},
		},
		{
			name:     "a hook that cannot be found",
			hooks:    []string{`./missing-script.sh`},
			failures: []string{`exit status 127: `},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var logs bytes.Buffer
			r := &Runner{Shell: tt.shell, Dir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(&logs, nil))}
			hs := make([]Hook, len(tt.hooks))
			for i, c := range tt.hooks {
				hs[i] = hook(c)
			}
			got, err := r.Run(t.Context(), Stop, hs, Input{SessionID: "s"})
			if err != nil {
				t.Fatalf("Run error = %v; hook failures must not be errors", err)
			}
			failures := got.Failures
			got.Failures = nil
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Outcome (-want +got):\n%s", diff)
			}
			if len(failures) != len(tt.failures) {
				t.Fatalf("Failures = %q; want %d", failures, len(tt.failures))
			}
			for i, f := range tt.failures {
				if !strings.Contains(failures[i], f) {
					t.Errorf("Failures[%d] = %q; want it to contain %q", i, failures[i], f)
				}
			}
			if n := strings.Count(logs.String(), "hook failed"); n != len(tt.failures) {
				t.Errorf("logged %d failures; want %d:\n%s", n, len(tt.failures), logs.String())
			}
		})
	}
}

func TestRunCapsOutputAndIgnoresUnreadStdin(t *testing.T) {
	t.Parallel()
	r := &Runner{Dir: t.TempDir()}
	big := strings.Repeat("x", 1<<20)
	// The hook never reads its 1 MiB of stdin (more than a pipe holds), and writes 256 KiB of reason.
	out, err := r.Run(t.Context(), SubagentStop, []Hook{hook(`head -c 262144 /dev/zero | tr '\0' r >&2; exit 2`)}, Input{LastMessage: big})
	if err != nil {
		t.Fatal(err)
	}
	if !out.Block || len(out.Failures) != 0 {
		t.Fatalf("Outcome = Block %v, Failures %q; want a block", out.Block, out.Failures)
	}
	if !strings.HasSuffix(out.Reason, "[output truncated]") || len(out.Reason) > outputCap+len("\n[output truncated]") {
		t.Errorf("reason is %d bytes ending %q; want it capped near %d", len(out.Reason), out.Reason[max(0, len(out.Reason)-30):], outputCap)
	}
}

func TestRunNoHooks(t *testing.T) {
	t.Parallel()
	var r Runner
	out, err := r.Run(t.Context(), Stop, nil, make(chan int)) // input is not even encodable
	if err != nil || out.Block || out.Failures != nil {
		t.Errorf("Run with no hooks = %+v, %v; want nothing", out, err)
	}
	if _, err := r.Run(t.Context(), Stop, []Hook{hook("true")}, make(chan int)); err == nil {
		t.Error("Run with unencodable input: want an error")
	}
}

// Hooks run without the provider keys and the denied variables, and what they hand back
// has the run's key redacted.
func TestRunSecrets(t *testing.T) {
	t.Parallel()
	const key = "sk-live-0123456789abcdef"
	dir := t.TempDir()
	policy := secrets.New(secrets.Config{Deny: []string{"CI_*"}, Values: []string{key}})
	r := &Runner{Dir: dir, Secrets: policy, Env: []string{
		"PATH=" + os.Getenv("PATH"), "OPENAI_API_KEY=" + key, "ANTHROPIC_API_KEY=a", "STOKE_API_KEY=s",
		"CI_JOB_TOKEN=t", "KEEP=kept",
	}}
	blocker := hook(`env > env.txt; echo "reason with ` + key + `" >&2; exit 2`)
	out, err := r.Run(t.Context(), Stop, []Hook{blocker}, Input{})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "env.txt"))
	if err != nil {
		t.Fatal(err)
	}
	env := string(data)
	for _, v := range []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "STOKE_API_KEY", "CI_JOB_TOKEN"} {
		if strings.Contains(env, v+"=") {
			t.Errorf("hook environment has %s", v)
		}
	}
	if !strings.Contains(env, "KEEP=kept") {
		t.Errorf("hook environment lost KEEP:\n%s", env)
	}
	if !out.Block || strings.Contains(out.Reason, key) || !strings.Contains(out.Reason, secrets.Redacted) {
		t.Errorf("outcome = %+v", out)
	}
}
