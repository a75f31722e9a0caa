package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stoke-cli/stoke/agents/catalog"
)

// model-aliases may come from any settings file, an untrusted project's included (a
// model name sends nothing elsewhere, as the model key): entries merge, the project's
// replacing the home's of the same alias; a value that is not a model name is a usage
// error naming the file. The run hands the map to headless.
func TestModelAliasesSettings(t *testing.T) {
	t.Parallel()
	p := newTestProcess(t)
	p.homeSettings(t, "model-aliases:\n  sonnet: gpt-4.1\n  opus: o3\n")
	p.projectSettings(t, "model-aliases:\n  opus: o3-mini\n  Fast: qwen-turbo\n")
	p.env["OPENAI_API_KEY"] = "sk-test"
	got := p.run(t, "-p", "hi")
	if got.code != 0 {
		t.Fatalf("exit %d: %s", got.code, got.stderr)
	}
	want := map[string]string{"sonnet": "gpt-4.1", "opus": "o3-mini", "Fast": "qwen-turbo"}
	if diff := cmp.Diff(want, got.opts.ModelAliases); diff != "" {
		t.Errorf("ModelAliases (-want +got):\n%s", diff)
	}
	if got.stderr != "" {
		t.Errorf("an untrusted project's model-aliases was warned about: %s", got.stderr)
	}

	for _, bad := range []string{"model-aliases: [sonnet]\n", "model-aliases:\n  sonnet: {name: x}\n", "model-aliases:\n  sonnet: \"\"\n"} {
		p := newTestProcess(t)
		path := p.projectSettings(t, bad)
		got := p.run(t, "-p", "hi")
		if got.code != 2 || !strings.Contains(got.stderr, path) || !strings.Contains(got.stderr, "model-aliases") {
			t.Errorf("%q: exit %d, stderr %q; want a usage error naming the file", bad, got.code, got.stderr)
		}
		requireOneErrorLine(t, got.stderr)
	}
}

// checkJSON runs `stoke agents check --json` with args and decodes the report.
func checkJSON(t *testing.T, p *testProcess, args ...string) (checkReport, outcome) {
	t.Helper()
	out := p.runStoke(t, append([]string{"agents", "check", "--json"}, args...)...)
	var r checkReport
	if err := json.Unmarshal([]byte(out.stdout), &r); err != nil {
		t.Fatalf("check --json: exit %d, stderr %q: %v\n%s", out.code, out.stderr, err, out.stdout)
	}
	return r, out
}

// byName returns the definitions of the report named name, in precedence order.
func (r checkReport) byName(name string) []checkDefinition {
	var out []checkDefinition
	for _, d := range r.Definitions {
		if d.Name == name {
			out = append(out, d)
		}
	}
	return out
}

// agents check reads what a run reads: the same sources and precedence, the same trust
// rules, the same model resolution and ceiling; and it starts no MCP server.
func TestAgentsCheck(t *testing.T) {
	t.Parallel()
	p := newTestProcess(t)
	home := filepath.Join(p.userHome, ".stoke")
	mine := writeFile(t, filepath.Join(home, "agents", "reviewer.md"), "---\nname: reviewer\nmodel: haiku\n---\nmine\n")
	claude := writeFile(t, filepath.Join(p.cwd, ".claude", "agents", "reviewer.md"), `---
name: reviewer
description: Reviews.
tools: Read, Grep, WebFetch
model: sonnet
permissionMode: bypassPermissions
maxTurns: 9
mcpServers:
  - github
  - own: {command: sh, args: [-c, "touch mcp-started"]}
hooks:
  PreToolUse:
    - command: ./guard.sh
  SubagentStop:
    - command: ./check.sh
---
Review.
`)
	qwen := writeFile(t, filepath.Join(p.cwd, ".qwen", "agents", "q.md"), "---\nname: q\ntools: [list_directory, read_many_files]\nmodelConfig: {model: fast}\nrunConfig: {max_time_minutes: 2}\n---\nq\n")
	writeFile(t, filepath.Join(p.cwd, "scripts", "check.sh"), "#!/bin/sh\n")
	p.homeSettings(t, "model-aliases: {sonnet: gpt-4.1}\nmcp-servers:\n  github: {command: sh, args: [-c, \"touch github-started\"]}\n")

	r, out := checkJSON(t, p, "--approval-mode", "auto-edit")
	if out.code != 0 {
		t.Fatalf("exit %d, stderr %q", out.code, out.stderr)
	}
	if r.Provider != "openai" || r.ParentModel != defaultOpenAIModel || r.ApprovalMode != "auto-edit" || r.Trusted || r.Bare {
		t.Errorf("report header: %+v", r)
	}
	revs := r.byName("reviewer")
	if len(revs) != 2 || revs[0].Source != mine || revs[1].Source != claude {
		t.Fatalf("reviewer definitions: %+v", revs)
	}
	if revs[0].Used || revs[0].ShadowedBy != claude || !revs[1].Used || !slicesEqual(revs[1].Shadows, []string{mine}) {
		t.Errorf("precedence: mine used %v shadowed by %q; project used %v shadows %q", revs[0].Used, revs[0].ShadowedBy, revs[1].Used, revs[1].Shadows)
	}
	rev := revs[1]
	if rev.Model != "gpt-4.1" || rev.ModelInherited || rev.ModelField.Alias != "sonnet" {
		t.Errorf("model: %q inherited %v field %+v", rev.Model, rev.ModelInherited, rev.ModelField)
	}
	if diff := cmp.Diff([]string{"read_file", "grep"}, rev.Tools); diff != "" || rev.AllTools || !slicesEqual(rev.UnknownTools, []string{"WebFetch"}) {
		t.Errorf("tools %q all %v unknown %q", rev.Tools, rev.AllTools, rev.UnknownTools)
	}
	if rev.Mode != "auto-edit" || rev.MaxTurns != 9 || len(rev.Hooks) != 0 {
		t.Errorf("mode %q, max turns %d, hooks %q: want the run's auto-edit (yolo capped), 9, none (untrusted)", rev.Mode, rev.MaxTurns, rev.Hooks)
	}
	wantMCP := []catalog.MCPUse{
		{Name: "github", Used: true},
		{Name: "own", Inline: true, Note: "the project is not trusted (--trust-project starts its agents' servers)"},
	}
	if diff := cmp.Diff(wantMCP, rev.MCPServers); diff != "" {
		t.Errorf("MCP servers (-want +got):\n%s", diff)
	}
	for _, w := range []string{"stoke has no WebFetch", "stoke does not run PreToolUse hooks", "approval mode yolo ignored", "hooks ignored: the project is not trusted", "mcpServers: own ignored"} {
		if !containsSub(rev.Warnings, w) {
			t.Errorf("no warning %q in %q", w, rev.Warnings)
		}
	}
	q := r.byName("q")
	if len(q) != 1 || q[0].Source != qwen || q[0].Model != defaultOpenAIModel || !q[0].ModelInherited ||
		!slicesEqual(q[0].Tools, []string{"glob", "read_file"}) || q[0].MaxTime != "2m0s" || !containsSub(q[0].Warnings, `model "fast" is an alias`) {
		t.Errorf("q: %+v", q)
	}
	for _, f := range []string{"mcp-started", "github-started"} {
		if _, err := os.Stat(filepath.Join(p.cwd, f)); err == nil {
			t.Errorf("agents check started an MCP server (%s)", f)
		}
	}

	// Trusted: the project's hooks and inline servers count; --bare: only mine.
	r, _ = checkJSON(t, p, "--trust-project")
	if rev := r.byName("reviewer")[1]; !slicesEqual(rev.Hooks, []string{"SubagentStop"}) || !rev.MCPServers[1].Used || rev.Mode != "default" {
		t.Errorf("trusted: hooks %q, own server %+v, mode %q", rev.Hooks, rev.MCPServers[1], rev.Mode)
	}
	r, _ = checkJSON(t, p, "--bare")
	if revs := r.byName("reviewer"); len(revs) != 1 || revs[0].Source != mine || !revs[0].Used || len(r.byName("q")) != 0 {
		t.Errorf("bare: %+v", r.Definitions)
	}
	// The scripted provider: the parent model is the scenario's.
	writeFile(t, filepath.Join(p.cwd, "s.yaml"), "model: scripted-model\nrules:\n  - reply: {text: hi}\n")
	if r, _ = checkJSON(t, p, "--scenario", "s.yaml"); r.Provider != "scripted" || r.ParentModel != "scripted-model" {
		t.Errorf("scripted: provider %q parent model %q", r.Provider, r.ParentModel)
	}
}

// Exit status 1 names the definitions that cannot run; shadowed ones do not count; bad
// usage is 2.
func TestAgentsCheckExitStatus(t *testing.T) {
	t.Parallel()
	p := newTestProcess(t)
	home := filepath.Join(p.userHome, ".stoke")
	writeFile(t, filepath.Join(p.cwd, ".stoke", "agents", "ok.md"), "---\nname: ok\ntools: Read\n---\nx\n")
	out := p.runStoke(t, "agents", "check")
	if out.code != 0 || out.stderr != "" || !strings.Contains(out.stdout, "2 definitions found, 2 in use, 0 cannot run") {
		t.Errorf("a good project: exit %d, stderr %q\n%s", out.code, out.stderr, out.stdout)
	}

	// Mine cannot run, but the project's replaces it: fine.
	writeFile(t, filepath.Join(home, "agents", "web.md"), "---\nname: web\ntools: WebFetch\n---\nx\n")
	writeFile(t, filepath.Join(p.cwd, ".claude", "agents", "web.md"), "---\nname: web\ntools: Read, WebFetch\n---\nx\n")
	if out := p.runStoke(t, "agents", "check"); out.code != 0 {
		t.Errorf("a shadowed definition that cannot run: exit %d, stderr %q", out.code, out.stderr)
	}

	writeFile(t, filepath.Join(p.cwd, ".claude", "agents", "only-web.md"), "---\nname: only-web\ntools: WebFetch, WebSearch\n---\nx\n")
	writeFile(t, filepath.Join(p.cwd, ".claude", "agents", "broken.md"), "---\nname: broken\n")
	out = p.runStoke(t, "agents", "check")
	if out.code != 1 {
		t.Fatalf("exit %d; want 1\n%s", out.code, out.stdout)
	}
	requireOneErrorLine(t, out.stderr)
	if !strings.Contains(out.stderr, "2 agent definition(s) cannot run: .claude/agents/broken.md, .claude/agents/only-web.md") {
		t.Errorf("stderr = %q", out.stderr)
	}
	for _, s := range []string{
		"(no name)  .claude/agents/broken.md (project, skipped, CANNOT RUN)",
		"  error     front matter is not closed by a --- line",
		"only-web  .claude/agents/only-web.md (project, used, CANNOT RUN)",
		"  problem   tools: stoke has none of its tools (WebFetch, WebSearch)",
		"web  " + filepath.Join(home, "agents", "web.md") + " (user, replaced by .claude/agents/web.md)",
		"6 definitions found, 4 in use, 2 cannot run",
	} {
		if !strings.Contains(out.stdout, s+"\n") {
			t.Errorf("text report lacks %q:\n%s", s, out.stdout)
		}
	}
	r, out := checkJSON(t, p)
	if out.code != 1 || r.OK {
		t.Errorf("--json: exit %d, ok %v", out.code, r.OK)
	}

	for _, args := range [][]string{{"agents", "check", "extra"}, {"agents", "check", "--approval-mode", "sometimes"}, {"agents", "check", "--nope"}} {
		out := p.runStoke(t, args...)
		if out.code != 2 {
			t.Errorf("%q: exit %d; want 2", args, out.code)
		}
		requireOneErrorLine(t, out.stderr)
	}
}

func slicesEqual(a, b []string) bool { return cmp.Equal(a, b) }

func containsSub(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
