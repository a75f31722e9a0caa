package cmd

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"
	"go.yaml.in/yaml/v3"

	"github.com/stoke-cli/stoke/agents/catalog"
	"github.com/stoke-cli/stoke/agents/llm/openai/openaitest"
	"github.com/stoke-cli/stoke/agents/llm/scripted"
	"github.com/stoke-cli/stoke/headless"
)

// corpusDir holds agent files written for these tests in the formats people keep them
// (Claude Code's .claude/agents, Qwen Code's .qwen/agents), and want-models.txt.
const corpusDir = "testdata/agentcorpus"

// corpusAliases are the model-aliases of the corpus runs (want-models.txt assumes them).
const corpusAliases = `model-aliases:
  sonnet: gpt-4.1
  opus: o3
  haiku: gpt-4.1-mini
  fast: gpt-4.1-nano
  claude-3-5-sonnet-20241022: gpt-4.1
`

// corpusParentModel is the parent's model in the corpus runs.
const corpusParentModel = "gpt-4o"

// wantModels reads want-models.txt: agent name -> the model its requests must name.
func wantModels(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(corpusDir, "want-models.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, model, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("want-models.txt: bad line %q", line)
		}
		want[name] = model
	}
	return want
}

// corpusProject copies the corpus's agent directories into p's project.
func corpusProject(t *testing.T, p *testProcess) { copyCorpus(t, p.cwd) }

// copyCorpus copies the corpus's agent directories into project.
func copyCorpus(tb testing.TB, project string) {
	tb.Helper()
	for _, dir := range []string{".claude/agents", ".qwen/agents"} {
		entries, err := os.ReadDir(filepath.Join(corpusDir, dir))
		if err != nil {
			tb.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(project, dir), 0o755); err != nil {
			tb.Fatal(err)
		}
		for _, e := range entries {
			data, err := os.ReadFile(filepath.Join(corpusDir, dir, e.Name()))
			if err == nil {
				err = os.WriteFile(filepath.Join(project, dir, e.Name()), data, 0o644)
			}
			if err != nil {
				tb.Fatal(err)
			}
		}
	}
}

// runStoke runs stoke in-process for real (headless.Run) in p.
func (p *testProcess) runStoke(t *testing.T, args ...string) outcome {
	t.Helper()
	deps, out, errOut := p.deps()
	code := execute(t.Context(), deps, headless.Run, args)
	return outcome{code: code, stdout: out.String(), stderr: errOut.String()}
}

// launchAll is a scenario whose parent launches one task of each of types in its first
// step, then answers; every subagent answers at once.
func launchAll(t *testing.T, types []string) *scripted.Model {
	t.Helper()
	var calls []scripted.ToolCall
	for _, typ := range types {
		calls = append(calls, scripted.ToolCall{Name: "task", Input: map[string]any{
			"description": "try " + typ, "prompt": "Say hello.", "subagent_type": typ,
		}})
	}
	s := scripted.Scenario{Name: "corpus", Rules: []scripted.Rule{
		{Agent: "parent", When: &scripted.Conditions{Step: 1}, Reply: scripted.Reply{ToolCalls: calls, Literal: true}},
		{Agent: "parent", Reply: scripted.Reply{Text: "All launched."}},
		{Reply: scripted.Reply{Text: "Hello."}},
	}}
	data, err := yaml.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scripted.Parse("corpus", data)
	if err != nil {
		t.Fatal(err)
	}
	return scripted.New(sc)
}

// agentType is the type a request's system prompt names (its last line, "Agent type: X.").
var agentType = regexp.MustCompile(`Agent type: (\S+)\.\s*$`)

// modelsByAgent reads the mock's requests: the models each agent's requests named.
func modelsByAgent(t *testing.T, reqs [][]byte) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, body := range reqs {
		r := gjson.ParseBytes(body)
		who := "parent"
		if m := agentType.FindStringSubmatch(r.Get(`messages.#(role=="system").content`).String()); m != nil {
			who = m[1]
		}
		if model := r.Get("model").String(); !slices.Contains(out[who], model) {
			out[who] = append(out[who], model)
		}
	}
	return out
}

// The corpus loads whole: `stoke agents check` finds every file, skips none, and says
// none cannot run; and a subagent launched from each sends the OpenAI mock its resolved
// model name, never an alias.
func TestAgentCorpusRunsUnchanged(t *testing.T) {
	t.Parallel()
	want := wantModels(t)
	p := newTestProcess(t)
	corpusProject(t, p)
	p.homeSettings(t, corpusAliases)

	check := p.runStoke(t, "agents", "check", "--json", "--model", corpusParentModel)
	if check.code != 0 {
		t.Fatalf("agents check: exit %d, stderr %q\n%s", check.code, check.stderr, check.stdout)
	}
	var report checkReport
	if err := json.Unmarshal([]byte(check.stdout), &report); err != nil {
		t.Fatal(err)
	}
	checked := map[string]string{}
	for _, d := range report.Definitions {
		if d.Scope != catalog.ScopeProject {
			continue
		}
		if d.Error != "" || !d.Used || len(d.CannotRun) > 0 {
			t.Errorf("%s (%s): error %q, used %v, cannot run %q", d.Name, d.Source, d.Error, d.Used, d.CannotRun)
		}
		checked[d.Name] = d.Model
	}
	if diff := cmp.Diff(want, checked); diff != "" {
		t.Errorf("agents check models (-want +got):\n%s", diff)
	}

	types := slices.Sorted(func(yield func(string) bool) {
		for name := range want {
			if !yield(name) {
				return
			}
		}
	})
	srv := openaitest.New(launchAll(t, types))
	defer srv.Close()
	p.env["OPENAI_API_KEY"] = "sk-test"
	run := p.runStoke(t, "-p", "Launch every agent.", "--provider", "openai", "--base-url", srv.URL(),
		"--model", corpusParentModel, "--output-format", "stream-json")
	if run.code != 0 {
		t.Fatalf("run: exit %d, stderr:\n%s", run.code, run.stderr)
	}
	got := modelsByAgent(t, srv.Requests())
	for who, models := range got {
		for _, m := range models {
			if catalog.IsModelAlias(m) || m == "inherit" || strings.Contains(m, ":") {
				t.Errorf("%s sent the model %q to the provider", who, m)
			}
		}
	}
	wantSent := map[string][]string{"parent": {corpusParentModel}}
	for name, model := range want {
		wantSent[name] = []string{model}
	}
	if diff := cmp.Diff(wantSent, got); diff != "" {
		t.Errorf("models sent, by agent (-want +got):\n%s", diff)
	}
	// Every launch completed (the mock answered each agent under its own type).
	var completed int
	for line := range strings.SplitSeq(strings.TrimSpace(run.stdout), "\n") {
		if r := gjson.Parse(line); r.Get("subtype").String() == "task_notification" && r.Get("status").String() == "completed" {
			completed++
		}
	}
	if completed != len(want) {
		t.Errorf("%d tasks completed; want %d", completed, len(want))
	}
}

// Without model-aliases, every alias falls back to the parent's model: nothing but model
// names reach the provider, and each file whose alias is not mapped gets one warning
// naming it.
func TestAgentCorpusUnmappedAliases(t *testing.T) {
	t.Parallel()
	p := newTestProcess(t)
	corpusProject(t, p)
	types := []string{"code-reviewer", "security-auditor", "test-runner", "quick-summarizer", "docs-writer", "web-researcher"}
	srv := openaitest.New(launchAll(t, types))
	defer srv.Close()
	p.env["OPENAI_API_KEY"] = "sk-test"
	run := p.runStoke(t, "-p", "Launch.", "--provider", "openai", "--base-url", srv.URL(), "--model", corpusParentModel)
	if run.code != 0 {
		t.Fatalf("run: exit %d, stderr:\n%s", run.code, run.stderr)
	}
	want := map[string][]string{"parent": {corpusParentModel}, "web-researcher": {"qwen3-coder-plus"}}
	for _, typ := range types[:5] {
		want[typ] = []string{corpusParentModel}
	}
	if diff := cmp.Diff(want, modelsByAgent(t, srv.Requests())); diff != "" {
		t.Errorf("models sent, by agent (-want +got):\n%s", diff)
	}
	// Every corpus file whose model is one of the aliases gets exactly one warning.
	modelLine := regexp.MustCompile(`(?m)^\s*model:\s*"?([A-Za-z0-9_.:\[\]-]+)`)
	aliased := 0
	for _, dir := range []string{".claude/agents", ".qwen/agents"} {
		files, _ := filepath.Glob(filepath.Join(p.cwd, dir, "*.md"))
		for _, file := range files {
			data, _ := os.ReadFile(file)
			m := modelLine.FindSubmatch(data)
			if m == nil || !slices.Contains([]string{"sonnet", "opus", "haiku", "fast"}, string(m[1])) {
				continue
			}
			aliased++
			re := regexp.MustCompile(regexp.QuoteMeta(file) + `: model \\"` + string(m[1]) + `\\" is an alias that model-aliases does not map: the agent runs on the parent's model`)
			if n := len(re.FindAllString(run.stderr, -1)); n != 1 {
				t.Errorf("%s: %d warnings naming it; want 1", file, n)
			}
		}
	}
	if n := strings.Count(run.stderr, "is an alias that model-aliases does not map"); n != aliased || aliased < 15 {
		t.Errorf("%d alias warnings; want one per aliased corpus file (%d):\n%s", n, aliased, run.stderr)
	}
}

// A definition's max turns and max time reach the subagent's runtime: an agent that
// keeps calling tools stops after its maxTurns model calls, and one whose model does
// not answer within runConfig.max_time_minutes fails with the time limit.
func TestAgentRunConfigLimits(t *testing.T) {
	t.Parallel()
	p := newTestProcess(t)
	writeFile(t, filepath.Join(p.cwd, ".claude", "agents", "looper.md"),
		"---\nname: looper\ndescription: loops\ntools: Glob\nmaxTurns: 2\n---\nLoop.\n")
	writeFile(t, filepath.Join(p.cwd, ".qwen", "agents", "sleeper.md"),
		"---\nname: sleeper\ndescription: sleeps\nrunConfig:\n  max_turns: 50\n  max_time_minutes: 0.005\n---\nSleep.\n")
	writeFile(t, filepath.Join(p.cwd, "scenario.yaml"), `name: limits
rules:
  - agent: parent
    when: {step: 1}
    reply:
      tool_calls:
        - {name: task, input: {description: loop, prompt: go, subagent_type: looper}}
        - {name: task, input: {description: sleep, prompt: go, subagent_type: sleeper}}
  - agent: parent
    reply: {text: done}
  - agent: looper
    reply:
      tool_calls:
        - {name: glob, input: {pattern: "*"}}
  - agent: sleeper
    reply: {text: woke, delay: 10m}
`)
	run := p.runStoke(t, "-p", "go", "--scenario", "scenario.yaml", "--output-format", "stream-json")
	if run.code != 0 {
		t.Fatalf("run: exit %d, stderr:\n%s", run.code, run.stderr)
	}
	types, outcomes := map[string]string{}, map[string]string{}
	looperCalls := 0
	for line := range strings.SplitSeq(strings.TrimSpace(run.stdout), "\n") {
		r := gjson.Parse(line)
		switch {
		case r.Get("type").String() == "assistant" && r.Get("subagent_type").String() == "looper":
			looperCalls++
		case r.Get("subtype").String() == "task_started":
			types[r.Get("task_id").String()] = r.Get("subagent_type").String()
		case r.Get("subtype").String() == "task_notification":
			outcomes[types[r.Get("task_id").String()]] = r.Get("status").String() + " " + r.Get("reason").String()
		}
	}
	if looperCalls != 2 {
		t.Errorf("looper made %d model calls; want 2 (maxTurns)", looperCalls)
	}
	if diff := cmp.Diff(map[string]string{"looper": "failed max_turns", "sleeper": "failed error"}, outcomes); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if !strings.Contains(run.stdout, "reached the agent's time limit (runConfig.max_time_minutes): 300ms") {
		t.Errorf("the parent was not told of the sleeper's time limit:\n%s", run.stdout)
	}
}

// BenchmarkLoadCorpus measures what loading the corpus (36 agent files, aliases resolved)
// adds to a run's start.
func BenchmarkLoadCorpus(b *testing.B) {
	project := b.TempDir()
	copyCorpus(b, project)
	o := catalog.LoadOptions{ProjectDir: project, ModelAliases: map[string]string{"sonnet": "gpt-4.1"}, Provider: "openai"}
	b.ReportAllocs()
	for b.Loop() {
		c, _ := catalog.LoadDefinitions(o)
		if len(c) != 37 {
			b.Fatalf("%d definitions", len(c))
		}
	}
}
