package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
)

// actionFile is what the tests read of action.yml.
type actionFile struct {
	Inputs  map[string]struct{ Default string }
	Outputs map[string]struct{ Value string }
	Runs    struct {
		Using string
		Steps []actionStepDef
	}
}

type actionStepDef struct {
	ID, Name, Uses, If, Run string
	Env                     map[string]string
	With                    map[string]string
}

func readAction(t *testing.T) actionFile {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var action actionFile
	if err := yaml.Unmarshal(raw, &action); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	return action
}

// actionStep returns the run script of the step of action.yml with the given id.
func actionStep(t *testing.T, id string) string {
	t.Helper()
	for _, s := range readAction(t).Runs.Steps {
		if s.ID == id && s.Run != "" {
			return s.Run
		}
	}
	t.Fatalf("action.yml has no step with id %s", id)
	return ""
}

// runStep runs a step's script in bash in dir with env (and a minimal PATH after
// pathFirst), as a runner would, and returns its combined output.
func runStep(t *testing.T, script, dir, pathFirst string, env ...string) (string, error) {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	cmd := exec.Command(bash, "-e", "-c", script)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + pathFirst + string(os.PathListSeparator) + "/usr/bin:/bin"}, env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// stepOutputs parses the name=value lines of a GITHUB_OUTPUT file.
func stepOutputs(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			out[k] = v
		}
	}
	return out
}

// TestActionShape: the steps come in the order that makes the release download, the
// cache and the build fallback work, Go is set up only when stoke must be built, and no
// script has an input pasted into it (an expression in a run script would let an input
// run as shell).
func TestActionShape(t *testing.T) {
	action := readAction(t)
	if action.Runs.Using != "composite" || action.Outputs["result"].Value == "" || action.Outputs["exit-code"].Value == "" {
		t.Fatalf("action.yml: runs.using %q, outputs %v", action.Runs.Using, action.Outputs)
	}
	var order []string
	for _, s := range action.Runs.Steps {
		name := s.ID
		if s.Uses != "" {
			name = s.Uses
		}
		order = append(order, name)
		if strings.Contains(s.Run, "${{") {
			t.Errorf("step %s pastes an expression into its script", name)
		}
	}
	want := []string{"resolve", "actions/cache@v4", "download", "actions/setup-go@v5", "build", "install", "run", "report", "actions/upload-artifact@v4"}
	if diff := cmp.Diff(want, order); diff != "" {
		t.Fatalf("steps (-want +got):\n%s", diff)
	}
	steps := action.Runs.Steps
	notBuilt := "steps.cache.outputs.cache-hit != 'true' && steps.download.outputs.installed != 'true'"
	if steps[1].With["path"] != "${{ steps.resolve.outputs.dir }}" || steps[1].With["key"] != "${{ steps.resolve.outputs.key }}" ||
		steps[1].If != "steps.resolve.outputs.cacheable == 'true'" || steps[2].If != "steps.cache.outputs.cache-hit != 'true'" ||
		steps[3].If != notBuilt || steps[4].If != notBuilt || steps[5].If != "" || steps[6].If != "" {
		t.Errorf("the cache, download, build and run conditions: %+v", steps[1:])
	}
	for _, in := range []string{"allowed-tools", "disallowed-tools", "append-system-prompt", "max-turns", "max-budget-usd", "model", "sandbox", "args"} {
		d, ok := action.Inputs[in]
		if !ok || d.Default != "" {
			t.Errorf("input %s: declared %v, default %q", in, ok, d.Default)
		}
	}
}

// actionValues are input values that a shell would mangle: spaces, both quotes, $(...),
// a backslash, a leading dash, a glob, a second line.
var actionValues = struct{ allowed, disallowed, appendPrompt, args string }{
	allowed:      "Read\nBash(git log:*)\r\nBash(echo \"a b\" 'c')\n\n",
	disallowed:   "Bash(rm -rf:*)",
	appendPrompt: "Be brief: say \"hi\" & don't run $(touch pwned) \\n *.go\n- second line",
	args:         "--session-id\n0f3c9a52-4b1e-4c2f-9a8d-2b7e6c1d5f40\n--mcp-config\n{\"mcpServers\": {\"x y\": {\"command\": \"echo\"}}}\n--system-prompt\n  two  spaces, then \"quotes\"  \n",
}

// TestActionRunStepArgs runs the "Run stoke" step with a stoke that records its
// arguments: every input arrives as the argument it was written as, spaces, quotes,
// $(...) and leading dashes included; rules and args lines one argument each; empty
// inputs add nothing.
func TestActionRunStepArgs(t *testing.T) {
	script := actionStep(t, "run")
	tests := []struct {
		name string
		env  []string
		want []string
	}{
		{"empty inputs", []string{"STOKE_PROMPT_INPUT=hi", "STOKE_FORMAT_INPUT=text"},
			[]string{"--prompt=hi", "--output-format=text", "--progress=plain"}},
		{"every input", []string{
			"STOKE_PROMPT_INPUT=- review $(this) \"now\"", "STOKE_FORMAT_INPUT=json", "STOKE_PROVIDER_INPUT=anthropic",
			"STOKE_MODEL_INPUT=claude sonnet", "STOKE_ALLOWED_TOOLS_INPUT=" + actionValues.allowed,
			"STOKE_DISALLOWED_TOOLS_INPUT=" + actionValues.disallowed, "STOKE_APPEND_SYSTEM_PROMPT_INPUT=" + actionValues.appendPrompt,
			"STOKE_MAX_TURNS_INPUT=7", "STOKE_MAX_BUDGET_USD_INPUT=0.25", "STOKE_SANDBOX_INPUT=read-only",
			"STOKE_ARGS_INPUT=" + actionValues.args,
		}, []string{
			"--prompt=- review $(this) \"now\"", "--output-format=json", "--progress=plain", "--provider=anthropic",
			"--model=claude sonnet", "--append-system-prompt=" + actionValues.appendPrompt, "--max-turns=7",
			"--max-budget-usd=0.25", "--sandbox=read-only",
			"--allowedTools=Read", "--allowedTools=Bash(git log:*)", "--allowedTools=Bash(echo \"a b\" 'c')",
			"--disallowedTools=Bash(rm -rf:*)",
			"--session-id", "0f3c9a52-4b1e-4c2f-9a8d-2b7e6c1d5f40", "--mcp-config", `{"mcpServers": {"x y": {"command": "echo"}}}`,
			"--system-prompt", "  two  spaces, then \"quotes\"  ",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			argsFile := filepath.Join(dir, "argv")
			fake := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\0' \"$a\"; done > '" + argsFile + "'\necho answer\n"
			bin := filepath.Join(dir, "bin")
			if err := os.Mkdir(bin, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(bin, "stoke"), []byte(fake), 0o755); err != nil {
				t.Fatal(err)
			}
			out, err := runStep(t, script, dir, bin, append(tt.env, "GITHUB_OUTPUT="+filepath.Join(dir, "out"), "RUNNER_TEMP="+dir)...)
			if err != nil {
				t.Fatalf("the run step failed: %v\n%s", err, out)
			}
			raw, err := os.ReadFile(argsFile)
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00")
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("stoke's arguments (-want +got):\n%s", diff)
			}
			if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
				t.Error("an input was run as shell")
			}
		})
	}
}

// TestActionRunStep runs the "Run stoke" step against the built stoke and a scripted
// scenario: the answer lands in the result output and the exit code in exit-code; a
// prompt holding shell syntax, or starting with "-", and an appended system prompt with
// quotes reach the model as written; args lines are flags and values.
func TestActionRunStep(t *testing.T) {
	script := actionStep(t, "run")
	appendPrompt := `<<Say "hi" & don't $(touch pwned) 'now'>>`
	for _, prompt := range []string{`hello $(touch pwned) "quoted"`, "- list the files\n- then the tests"} {
		dir := t.TempDir()
		scenario := "rules:\n  - reply:\n      text: 'You said: {{ lastUser }} | told: {{ match `<<(.*)>>` }}'\n"
		if err := os.WriteFile(filepath.Join(dir, "s.yaml"), []byte(scenario), 0o644); err != nil {
			t.Fatal(err)
		}
		outputs := filepath.Join(dir, "github-output")
		out, err := runStep(t, script, dir, h.binDir,
			"HOME="+filepath.Join(dir, "home"), "STOKE_HOME="+filepath.Join(t.TempDir(), ".stoke"), "GOCOVERDIR="+h.coverDir,
			"GITHUB_OUTPUT="+outputs, "RUNNER_TEMP="+dir,
			"STOKE_PROMPT_INPUT="+prompt, "STOKE_PROVIDER_INPUT=scripted", "STOKE_MODEL_INPUT=",
			"STOKE_FORMAT_INPUT=text", "STOKE_ARGS_INPUT=--scenario\ns.yaml\n", "STOKE_MAX_TURNS_INPUT=3",
			"STOKE_APPEND_SYSTEM_PROMPT_INPUT="+appendPrompt, "STOKE_ALLOWED_TOOLS_INPUT=Bash(git log:*)\nRead")
		if err != nil {
			t.Fatalf("prompt %q: the run step failed: %v\n%s", prompt, err, out)
		}
		got, err := os.ReadFile(outputs)
		if err != nil {
			t.Fatal(err)
		}
		text := string(got)
		want := "\nYou said: " + prompt + " | told: " + strings.Trim(appendPrompt, "<>") + "\n"
		if !strings.Contains(text, want) || !strings.HasPrefix(text, "result<<STOKE_") || !strings.HasSuffix(text, "exit-code=0\n") {
			t.Errorf("prompt %q: GITHUB_OUTPUT holds:\n%s\nwant %q in it", prompt, text, want)
		}
		if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
			t.Error("an input was run as shell")
		}
	}
}

// TestActionReportStep runs the "Run stoke" step, then the "Report" step of action.yml in
// bash, as a runner would: the run's Markdown report lands in the job summary, the HTML
// report in RUNNER_TEMP, named in the step's outputs (for the artifact upload), also when
// the run failed; a run that stored no session leaves no report and no error.
func TestActionReportStep(t *testing.T) {
	run, report := actionStep(t, "run"), actionStep(t, "report")
	for _, tt := range []struct {
		name, args string // args: one flag or value per line, as the action takes them
		code       string // the run step's exit code
		drawn      bool
	}{
		{"a run that succeeds", "--scenario\ns.yaml", "0", true},
		{"a run that fails", "--scenario\ns.yaml\n--max-turns\n1", "1", true},
		{"no session stored", "--scenario\ns.yaml\n--no-session-persistence", "0", false},
	} {
		dir := t.TempDir()
		scenario := "rules:\n  - when: {step: 1}\n    reply:\n      tool_calls:\n        - {name: glob, input: {pattern: '*.yaml'}}\n  - reply: {text: done}\n"
		if err := os.WriteFile(filepath.Join(dir, "s.yaml"), []byte(scenario), 0o644); err != nil {
			t.Fatal(err)
		}
		summary, outputs := filepath.Join(dir, "summary.md"), filepath.Join(dir, "github-output")
		state := t.TempDir() // HOME and STOKE_HOME outside the working directory, as stoke requires
		env := []string{
			"HOME=" + filepath.Join(state, "home"), "STOKE_HOME=" + filepath.Join(state, ".stoke"), "GOCOVERDIR=" + h.coverDir,
			"GITHUB_OUTPUT=" + outputs, "GITHUB_STEP_SUMMARY=" + summary, "RUNNER_TEMP=" + dir,
			"STOKE_PROMPT_INPUT=list them", "STOKE_PROVIDER_INPUT=scripted", "STOKE_MODEL_INPUT=",
			"STOKE_FORMAT_INPUT=text", "STOKE_ARGS_INPUT=" + tt.args,
		}
		_, _ = runStep(t, run, dir, h.binDir, env...) // the step fails when stoke does; the report step runs anyway (if: always())
		if out, err := runStep(t, report, dir, h.binDir, env...); err != nil {
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

// TestActionResolveStep runs the "Resolve the stoke version" step: the version input
// wins; without it, the tag the action is pinned to, and none (build the action's own
// source) when it is used by branch or commit; the cache key names the version, or the
// source's hash, so that a new commit on a branch is a new key; latest is not cached.
func TestActionResolveStep(t *testing.T) {
	script := actionStep(t, "resolve")
	src := t.TempDir()
	writeSrc := func(text string) {
		if err := os.WriteFile(filepath.Join(src, "main.go"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeSrc("package main\n")
	run := func(version, ref, runnerOS, arch string) map[string]string {
		dir := t.TempDir()
		out, err := runStep(t, script, dir, "", "GITHUB_OUTPUT="+filepath.Join(dir, "out"), "GITHUB_ACTION_PATH="+src,
			"RUNNER_TOOL_CACHE=/tc", "RUNNER_OS="+runnerOS, "RUNNER_ARCH="+arch, "STOKE_VERSION="+version, "STOKE_ACTION_REF="+ref)
		if err != nil {
			t.Fatalf("version %q, ref %q: %v\n%s", version, ref, err, out)
		}
		return stepOutputs(t, filepath.Join(dir, "out"))
	}
	tests := []struct {
		version, ref, os, arch string
		want                   map[string]string
	}{
		{"", "v0.2.0", "Linux", "X64", map[string]string{"version": "v0.2.0", "os": "linux", "arch": "amd64", "cacheable": "true",
			"key": "stoke-v0.2.0-linux-amd64", "dir": "/tc/stoke-action/v0.2.0-linux-amd64"}},
		{"v0.1.5", "v0.2.0", "macOS", "ARM64", map[string]string{"version": "v0.1.5", "os": "darwin", "arch": "arm64", "cacheable": "true",
			"key": "stoke-v0.1.5-darwin-arm64", "dir": "/tc/stoke-action/v0.1.5-darwin-arm64"}},
		{"latest", "v0.2.0", "Windows", "X64", map[string]string{"version": "latest", "os": "windows", "arch": "amd64", "cacheable": "false",
			"key": "stoke-latest-windows-amd64", "dir": "/tc/stoke-action/latest-windows-amd64"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, run(tt.version, tt.ref, tt.os, tt.arch)); diff != "" {
			t.Errorf("version %q, ref %q (-want +got):\n%s", tt.version, tt.ref, diff)
		}
	}
	// By branch or commit: no version, the source's hash in the key.
	for _, ref := range []string{"main", "0123456789abcdef0123456789abcdef01234567", ""} {
		got := run("", ref, "Linux", "X64")
		if got["version"] != "" || got["cacheable"] != "true" || !strings.HasPrefix(got["key"], "stoke-src-") || len(got["key"]) != len("stoke-src-")+16+len("-linux-amd64") {
			t.Errorf("ref %q: %v", ref, got)
		}
	}
	before := run("", "main", "Linux", "X64")["key"]
	writeSrc("package main\n\nfunc main() {}\n")
	if after := run("", "main", "Linux", "X64")["key"]; after == before {
		t.Errorf("the key %s did not change with the source", after)
	}
}

// TestActionDownloadStep runs the "Download the release" step with a curl that serves a
// release made here: a tag with a release installs its binary after checking it against
// checksums.txt; a tag without one (curl fails, as on a 404) falls back to the build; an
// archive that does not match its checksum fails the step; no tag, or latest, downloads
// nothing.
func TestActionDownloadStep(t *testing.T) {
	script := actionStep(t, "download")
	release := t.TempDir()
	archive := tarGz(t, map[string]string{"stoke": "#!/bin/sh\necho released stoke\n", "LICENSE": "MIT"})
	name := "stoke_0.2.0_linux_amd64.tar.gz"
	writeRelease := func(sum []byte) {
		if err := os.WriteFile(filepath.Join(release, name), archive, 0o644); err != nil {
			t.Fatal(err)
		}
		checksums := hex.EncodeToString(sum) + "  " + name + "\n" + strings.Repeat("0", 64) + "  stoke_0.2.0_darwin_arm64.tar.gz\n"
		if err := os.WriteFile(filepath.Join(release, "checksums.txt"), []byte(checksums), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	good := sha256.Sum256(archive)
	tests := []struct {
		name, version string
		sum           []byte
		installed     string // "" for a failed step
		curls         int
	}{
		{"a release", "v0.2.0", good[:], "true", 2},
		{"no release for the tag", "v0.3.0", good[:], "false", 1},
		{"a checksum that does not match", "v0.2.0", make([]byte, 32), "", 2},
		{"the action's source", "", good[:], "false", 0},
		{"latest", "latest", good[:], "false", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			writeRelease(tt.sum)
			dir := t.TempDir()
			bin := filepath.Join(dir, "bin")
			calls := filepath.Join(dir, "curl-calls")
			// A curl that serves the release of v0.2.0 only, and fails (as -f does on a 404)
			// for anything else.
			fakeCurl := "#!/bin/sh\nfor a; do url=$a; done\necho \"$url\" >> '" + calls + "'\n" +
				"case \"$url\" in https://github.com/stoke-cli/stoke/releases/download/v0.2.0/*) cp '" + release + "'/\"${url##*/}\" . ;; *) exit 22 ;; esac\n"
			if err := os.MkdirAll(bin, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(bin, "curl"), []byte(fakeCurl), 0o755); err != nil {
				t.Fatal(err)
			}
			stokeDir := filepath.Join(dir, "tool", "stoke")
			out, err := runStep(t, script, dir, bin, "GITHUB_OUTPUT="+filepath.Join(dir, "out"),
				"STOKE_VERSION="+tt.version, "STOKE_OS=linux", "STOKE_ARCH=amd64", "STOKE_DIR="+stokeDir)
			if tt.installed == "" {
				if err == nil || !strings.Contains(out, "::error::"+name+" does not match checksums.txt") {
					t.Errorf("the step succeeded or said %q", out)
				}
				if _, err := os.Stat(filepath.Join(stokeDir, "stoke")); err == nil {
					t.Error("a binary that does not match its checksum was installed")
				}
				return
			}
			if err != nil {
				t.Fatalf("the step failed: %v\n%s", err, out)
			}
			if got := stepOutputs(t, filepath.Join(dir, "out"))["installed"]; got != tt.installed {
				t.Errorf("installed=%s, want %s\n%s", got, tt.installed, out)
			}
			if data, _ := os.ReadFile(calls); strings.Count(string(data), "\n") != tt.curls {
				t.Errorf("curl calls %q, want %d", data, tt.curls)
			}
			_, statErr := os.Stat(filepath.Join(stokeDir, "stoke"))
			if (statErr == nil) != (tt.installed == "true") {
				t.Errorf("installed %s, but the binary: %v", tt.installed, statErr)
			}
			if tt.installed == "false" && tt.curls > 0 && !strings.Contains(out, "::notice::no release archive") {
				t.Errorf("no notice of the fallback: %q", out)
			}
			if _, err := os.Stat(filepath.Join(stokeDir, "LICENSE")); err == nil {
				t.Error("more than the binary was extracted")
			}
		})
	}
}

// TestActionBuildStep runs the "Build stoke" step with a go command that records how it
// was called: a version is installed from the module proxy into the cached directory; the
// action's own source (no version) is built where the action is checked out.
func TestActionBuildStep(t *testing.T) {
	script := actionStep(t, "build")
	for _, tt := range []struct{ version, want string }{
		{"v0.2.0", "GOBIN=DIR install github.com/stoke-cli/stoke@v0.2.0 (in WORK)"},
		{"latest", "GOBIN=DIR install github.com/stoke-cli/stoke@latest (in WORK)"},
		{"", "GOBIN= build -trimpath -o DIR/ . (in SRC)"},
	} {
		dir := t.TempDir()
		src := filepath.Join(dir, "src")
		bin := filepath.Join(dir, "bin")
		for _, d := range []string{src, bin} {
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		calls := filepath.Join(dir, "go-calls")
		fakeGo := "#!/bin/sh\necho \"GOBIN=$GOBIN $* (in $(pwd))\" >> '" + calls + "'\n"
		if err := os.WriteFile(filepath.Join(bin, "go"), []byte(fakeGo), 0o755); err != nil {
			t.Fatal(err)
		}
		stokeDir := filepath.Join(dir, "tool")
		if out, err := runStep(t, script, dir, bin, "GITHUB_ACTION_PATH="+src, "STOKE_VERSION="+tt.version, "STOKE_DIR="+stokeDir); err != nil {
			t.Fatalf("version %q: %v\n%s", tt.version, err, out)
		}
		data, _ := os.ReadFile(calls)
		got := strings.NewReplacer(stokeDir, "DIR", src, "SRC", dir, "WORK").Replace(strings.TrimSpace(string(data)))
		if got != tt.want {
			t.Errorf("version %q: go %q, want %q", tt.version, got, tt.want)
		}
		if fi, err := os.Stat(stokeDir); err != nil || !fi.IsDir() {
			t.Errorf("version %q: the directory to build into is missing", tt.version)
		}
	}
}

// TestActionInstallStep: the directory stoke was put in joins GITHUB_PATH, and the step
// shows the version it installed.
func TestActionInstallStep(t *testing.T) {
	dir := t.TempDir()
	stokeDir := filepath.Join(dir, "tool")
	if err := os.Mkdir(stokeDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stokeDir, "stoke"), []byte("#!/bin/sh\necho \"stoke 9.9.9 ($*)\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := runStep(t, actionStep(t, "install"), dir, "", "GITHUB_PATH="+filepath.Join(dir, "path"), "STOKE_DIR="+stokeDir)
	if err != nil || !strings.Contains(out, "stoke 9.9.9 (version)") {
		t.Fatalf("the step: %v\n%s", err, out)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "path")); string(data) != stokeDir+"\n" {
		t.Errorf("GITHUB_PATH %q", data)
	}
}

// tarGz packs files (name → content, executable) as a release archive does.
func tarGz(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(files[name])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(files[name])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
