package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestActionRunStep runs the "Run stoke" step of the composite GitHub Action (action.yml)
// in bash, as a runner would, against the built stoke and a scripted scenario: the answer
// lands in the result output and the exit code in exit-code, and a prompt holding shell
// syntax, or starting with "-", reaches stoke as text.
func TestActionRunStep(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	raw, err := os.ReadFile(filepath.Join("..", "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var action struct {
		Runs    struct{ Using string }
		Outputs map[string]struct{ Value string }
	}
	if err := yaml.Unmarshal(raw, &action); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	if action.Runs.Using != "composite" || action.Outputs["result"].Value == "" {
		t.Fatalf("action.yml: runs.using %q, outputs %v", action.Runs.Using, action.Outputs)
	}
	script := actionStep(t, "run")
	// A prompt with shell syntax, and one that starts with "-" as a YAML list of
	// instructions does (after -p it would read as a flag).
	for _, prompt := range []string{`hello $(touch pwned) "quoted"`, "- list the files\n- then the tests"} {
		dir := t.TempDir()
		scenario := "rules:\n  - reply:\n      text: \"You said: {{ lastUser }}\"\n"
		if err := os.WriteFile(filepath.Join(dir, "s.yaml"), []byte(scenario), 0o644); err != nil {
			t.Fatal(err)
		}
		outputs := filepath.Join(dir, "github-output")
		cmd := exec.Command(bash, "-e", "-c", script)
		cmd.Dir = dir
		cmd.Env = []string{
			"PATH=" + h.binDir + string(os.PathListSeparator) + "/usr/bin:/bin",
			"HOME=" + filepath.Join(dir, "home"), "STOKE_HOME=" + filepath.Join(t.TempDir(), ".stoke"), "GOCOVERDIR=" + h.coverDir,
			"GITHUB_OUTPUT=" + outputs, "RUNNER_TEMP=" + dir,
			"STOKE_PROMPT_INPUT=" + prompt, "STOKE_PROVIDER_INPUT=scripted", "STOKE_MODEL_INPUT=",
			"STOKE_FORMAT_INPUT=text", "STOKE_ARGS_INPUT=--scenario s.yaml  --max-turns 3",
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("prompt %q: the run step failed: %v\n%s", prompt, err, out)
		}
		got, err := os.ReadFile(outputs)
		if err != nil {
			t.Fatal(err)
		}
		text := string(got)
		if !strings.Contains(text, "\nYou said: "+prompt+"\n") || !strings.HasPrefix(text, "result<<STOKE_") || !strings.HasSuffix(text, "exit-code=0\n") {
			t.Errorf("prompt %q: GITHUB_OUTPUT holds:\n%s", prompt, text)
		}
		if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
			t.Error("the prompt was run as shell")
		}
	}
}

// TestActionReportStep runs the "Run stoke" step, then the "Report" step of action.yml in
// bash, as a runner would: the run's Markdown report lands in the job summary, the HTML
// report in RUNNER_TEMP, named in the step's outputs (for the artifact upload), also when
// the run failed; a run that stored no session leaves no report and no error.
func TestActionReportStep(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	run, report := actionStep(t, "run"), actionStep(t, "report")
	for _, tt := range []struct {
		name, args string
		code       string // the run step's exit code
		drawn      bool
	}{
		{"a run that succeeds", "--scenario s.yaml", "0", true},
		{"a run that fails", "--scenario s.yaml --max-turns 1", "1", true},
		{"no session stored", "--scenario s.yaml --no-session-persistence", "0", false},
	} {
		dir := t.TempDir()
		scenario := "rules:\n  - when: {step: 1}\n    reply:\n      tool_calls:\n        - {name: glob, input: {pattern: '*.yaml'}}\n  - reply: {text: done}\n"
		if err := os.WriteFile(filepath.Join(dir, "s.yaml"), []byte(scenario), 0o644); err != nil {
			t.Fatal(err)
		}
		summary, outputs := filepath.Join(dir, "summary.md"), filepath.Join(dir, "github-output")
		state := t.TempDir() // HOME and STOKE_HOME outside the working directory, as stoke requires
		env := []string{
			"PATH=" + h.binDir + string(os.PathListSeparator) + "/usr/bin:/bin",
			"HOME=" + filepath.Join(state, "home"), "STOKE_HOME=" + filepath.Join(state, ".stoke"), "GOCOVERDIR=" + h.coverDir,
			"GITHUB_OUTPUT=" + outputs, "GITHUB_STEP_SUMMARY=" + summary, "RUNNER_TEMP=" + dir,
			"STOKE_PROMPT_INPUT=list them", "STOKE_PROVIDER_INPUT=scripted", "STOKE_MODEL_INPUT=",
			"STOKE_FORMAT_INPUT=text", "STOKE_ARGS_INPUT=" + tt.args,
		}
		cmd := exec.Command(bash, "-e", "-c", run)
		cmd.Dir, cmd.Env = dir, env
		_ = cmd.Run() // the step fails when stoke does; the report step runs anyway (if: always())
		cmd = exec.Command(bash, "-e", "-c", report)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: the report step failed: %v\n%s", tt.name, err, out)
		}
		got, _ := os.ReadFile(outputs)
		if !strings.Contains(string(got), "exit-code="+tt.code+"\n") {
			t.Fatalf("%s: the run step's outputs:\n%s", tt.name, got)
		}
		md, _ := os.ReadFile(summary)
		html := regexp.MustCompile(`(?m)^html=(.*)$`).FindStringSubmatch(string(got))
		session := regexp.MustCompile(`(?m)^session=([0-9a-f-]{36})$`).FindStringSubmatch(string(got))
		if !tt.drawn {
			if html != nil || len(md) > 0 {
				t.Errorf("%s: a report without a session: %s\n%s", tt.name, got, md)
			}
			continue
		}
		if html == nil || session == nil || !strings.Contains(string(md), "```mermaid\ngantt\n") || !strings.Contains(string(md), "## stoke session `"+session[1]+"`") {
			t.Fatalf("%s: outputs\n%s\nsummary\n%s", tt.name, got, md)
		}
		page, err := os.ReadFile(html[1])
		if err != nil || !strings.Contains(string(page), "<code>glob</code>") || filepath.Base(html[1]) != "stoke-report-"+session[1]+".html" {
			t.Errorf("%s: the HTML report %s: %v", tt.name, html[1], err)
		}
	}
}

// TestActionInstallStep runs the "Install stoke" step of action.yml in bash with a go
// command that records what it was asked: the version input wins; without it, the tag the
// action is pinned to (github.action_ref) is installed, and latest when the action is used
// by branch or commit.
func TestActionInstallStep(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	script := actionStep(t, "install")
	tests := []struct{ version, ref, want string }{
		{"", "v0.2.0", "install github.com/stoke-cli/stoke@v0.2.0"},
		{"v0.1.5", "v0.2.0", "install github.com/stoke-cli/stoke@v0.1.5"},
		{"latest", "v0.2.0", "install github.com/stoke-cli/stoke@latest"},
		{"", "main", "install github.com/stoke-cli/stoke@latest"},
		{"", "0123456789abcdef0123456789abcdef01234567", "install github.com/stoke-cli/stoke@latest"},
		{"", "", "install github.com/stoke-cli/stoke@latest"},
	}
	for _, tt := range tests {
		dir := t.TempDir()
		fakeGo := "#!/bin/sh\nif [ \"$1\" = env ]; then echo /gopath; else echo \"$*\" >> \"" + filepath.Join(dir, "go-calls") + "\"; fi\n"
		if err := os.WriteFile(filepath.Join(dir, "go"), []byte(fakeGo), 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bash, "-e", "-c", script)
		cmd.Dir = dir
		cmd.Env = []string{
			"PATH=" + dir + string(os.PathListSeparator) + "/usr/bin:/bin", "GITHUB_PATH=" + filepath.Join(dir, "github-path"),
			"STOKE_VERSION=" + tt.version, "STOKE_ACTION_REF=" + tt.ref,
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("version %q, ref %q: the install step failed: %v\n%s", tt.version, tt.ref, err, out)
		}
		calls, _ := os.ReadFile(filepath.Join(dir, "go-calls"))
		path, _ := os.ReadFile(filepath.Join(dir, "github-path"))
		if string(calls) != tt.want+"\n" || string(path) != "/gopath/bin\n" {
			t.Errorf("version %q, ref %q: go %q, GITHUB_PATH %q; want %q", tt.version, tt.ref, calls, path, tt.want)
		}
	}
}

// actionStep returns the run script of the step of action.yml with the given id.
func actionStep(t *testing.T, id string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var action struct {
		Runs struct{ Steps []struct{ ID, Run string } }
	}
	if err := yaml.Unmarshal(raw, &action); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	for _, s := range action.Runs.Steps {
		if s.ID == id && s.Run != "" {
			return s.Run
		}
	}
	t.Fatalf("action.yml has no step with id %s", id)
	return ""
}
