package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
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
		Runs struct {
			Using string
			Steps []struct {
				ID, Name, Shell, Run string
				Env                  map[string]string
			}
		}
		Outputs map[string]struct{ Value string }
	}
	if err := yaml.Unmarshal(raw, &action); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	if action.Runs.Using != "composite" || action.Outputs["result"].Value == "" {
		t.Fatalf("action.yml: runs.using %q, outputs %v", action.Runs.Using, action.Outputs)
	}
	var script string
	for _, s := range action.Runs.Steps {
		if s.ID == "run" {
			script = s.Run
		}
	}
	if script == "" {
		t.Fatal("action.yml has no step with id run")
	}
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
			"HOME=" + filepath.Join(dir, "home"), "STOKE_HOME=" + filepath.Join(dir, ".stoke"), "GOCOVERDIR=" + h.coverDir,
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
