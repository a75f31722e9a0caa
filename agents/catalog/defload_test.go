package catalog

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stoke-cli/stoke/agents/mcp"
)

// Inspect reports every definition with its source and precedence, and which one of a
// name a run uses.
func TestInspectPrecedence(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	home := filepath.Join(root, "home", ".stoke")
	project := filepath.Join(root, "project")
	user := writeDefFile(t, filepath.Join(home, "agents"), "r.md", defFile("reviewer", "user"))
	gp := writeDefFile(t, filepath.Join(home, "agents"), "gp.md", defFile(GeneralPurpose, "user gp"))
	claude := writeDefFile(t, filepath.Join(project, ".claude", "agents"), "r.md", defFile("reviewer", "claude"))
	stoke := writeDefFile(t, filepath.Join(project, ".stoke", "agents"), "r.md", defFile("reviewer", "stoke"))
	qwen := writeDefFile(t, filepath.Join(project, ".qwen", "agents"), "only.md", defFile("only-qwen", "qwen"))

	in := Inspect(LoadOptions{ProjectDir: project, UserStokeHome: home})
	type row struct {
		Name, Source, Scope, ShadowedBy string
		Rank                            int
	}
	var got []row
	for _, f := range in.Found {
		got = append(got, row{f.Definition.Name, f.Definition.Source, f.Scope, f.ShadowedBy, f.Rank})
	}
	want := []row{
		{GeneralPurpose, "built-in", ScopeBuiltin, gp, 0},
		{GeneralPurpose, gp, ScopeUser, "", 1},
		{"reviewer", user, ScopeUser, stoke, 1},
		{"only-qwen", qwen, ScopeProject, "", 2},
		{"reviewer", claude, ScopeProject, stoke, 3},
		{"reviewer", stoke, ScopeProject, "", 4},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("found (-want +got):\n%s", diff)
	}
	if len(in.Warnings) != 0 {
		t.Errorf("warnings: %q", in.Warnings)
	}
}

// Model aliases are resolved when the catalog is built: the catalog holds a model name
// or "" (the parent's), and each file whose alias is not mapped gets one warning.
func TestLoadDefinitionsResolvesModels(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	dir := filepath.Join(project, ".claude", "agents")
	write := func(file, name, model string) string {
		return writeDefFile(t, dir, file, "---\nname: "+name+"\nmodel: "+model+"\n---\nx\n")
	}
	write("a.md", "mapped", "sonnet")
	unmapped := write("b.md", "unmapped", "haiku")
	write("c.md", "named", "gpt-4.1-mini")
	write("d.md", "inherits", "inherit")
	write("e.md", "provider", "openai:o4-mini")
	other := write("f.md", "other-provider", "anthropic:claude-opus-4-1")
	qwen := writeDefFile(t, filepath.Join(project, ".qwen", "agents"), "q.md", "---\nname: quick\nmodelConfig:\n  model: fast\n---\nx\n")

	o := LoadOptions{ProjectDir: project, ModelAliases: map[string]string{"sonnet": "gpt-4.1"}, Provider: "openai", ParentModel: "gpt-4o"}
	c, warnings := LoadDefinitions(o)
	want := map[string]string{"mapped": "gpt-4.1", "unmapped": "", "named": "gpt-4.1-mini", "inherits": "", "provider": "o4-mini", "other-provider": "", "quick": ""}
	for name, model := range want {
		if got := c[name].Model; got != model {
			t.Errorf("%s: Model = %q; want %q", name, got, model)
		}
	}
	wantWarnings := []string{
		qwen + `: model "fast" is an alias that model-aliases does not map: the agent runs on the parent's model (map it under model-aliases in settings.yaml)`,
		unmapped + `: model "haiku" is an alias that model-aliases does not map: the agent runs on the parent's model (map it under model-aliases in settings.yaml)`,
		other + `: model "anthropic:claude-opus-4-1" is for provider anthropic; this run uses openai: the agent runs on the parent's model (map it under model-aliases in settings.yaml)`,
	}
	if diff := cmp.Diff(wantWarnings, warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	// With a parent model to fall back on they can run; without one they cannot.
	for _, f := range Inspect(o).Found {
		if len(f.CannotRun) > 0 {
			t.Errorf("%s cannot run: %q", f.Definition.Name, f.CannotRun)
		}
	}
	o.ParentModel = ""
	var cannot []string
	for _, f := range Inspect(o).Found {
		if len(f.CannotRun) > 0 {
			cannot = append(cannot, f.Definition.Name)
		}
	}
	if diff := cmp.Diff([]string{"quick", "unmapped", "other-provider"}, cannot); diff != "" {
		t.Errorf("cannot run without a parent model (-want +got):\n%s", diff)
	}
}

// What makes a definition unable to run, and what does not.
func TestInspectCannotRun(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	dir := filepath.Join(project, ".stoke", "agents")
	writeDefFile(t, dir, "a.md", "---\nname: web\ntools: WebFetch, WebSearch\n---\nx\n")
	writeDefFile(t, dir, "b.md", "---\nname: web-mcp\ntools: WebFetch\nmcpServers: [fetch]\n---\nx\n")
	writeDefFile(t, dir, "c.md", "---\nname: some\ntools: WebFetch, Read\n---\nx\n")
	writeDefFile(t, dir, "d.md", "---\nname: none\ntools: []\n---\nx\n")
	writeDefFile(t, dir, "e.md", "---\nname: broken\n")
	writeDefFile(t, dir, "f.md", "---\nname: yolo\npermissionMode: bypassPermissions\n---\nx\n")

	in := Inspect(LoadOptions{ProjectDir: project, ParentModel: "m", Ceiling: "auto-edit"})
	got := map[string][]string{}
	for _, f := range in.Found[1:] {
		got[filepath.Base(f.Definition.Source)] = f.CannotRun
		if f.Definition.Name == "yolo" {
			if f.Definition.ApprovalMode != "" || len(f.Warnings) != 1 || !strings.Contains(f.Warnings[0], "approval mode yolo ignored: it is above the run's (auto-edit)") {
				t.Errorf("yolo under auto-edit: mode %q, warnings %q", f.Definition.ApprovalMode, f.Warnings)
			}
		}
	}
	want := map[string][]string{
		"a.md": {"tools: stoke has none of its tools (WebFetch, WebSearch)"},
		"b.md": nil, "c.md": nil, "d.md": nil, "f.md": nil,
		"e.md": {"front matter is not closed by a --- line"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CannotRun (-want +got):\n%s", diff)
	}
}

func TestDefinitionMCPPlan(t *testing.T) {
	t.Parallel()
	d := Definition{Source: "x.md", MCPServers: []MCPServer{
		{Name: "github"},
		{Name: "missing"},
		{Name: "own", Config: map[string]any{"command": "node", "args": []any{"s.js"}}},
		{Name: "github", Config: map[string]any{"command": "other"}},
		{Name: "needs-env", Config: map[string]any{"command": "x", "env": map[string]any{"T": "${NOPE}"}}},
	}}
	configured := map[string]mcp.ServerConfig{"github": {Command: "gh-mcp", Source: "settings.yaml"}}
	tests := []struct {
		name string
		c    MCPContext
		want []MCPUse
	}{
		{"may start", MCPContext{Configured: configured, MayStart: true}, []MCPUse{
			{Name: "github", Used: true},
			{Name: "missing", Note: "no MCP server of that name is configured"},
			{Name: "own", Inline: true, Used: true},
			{Name: "github", Inline: true, Used: true, Note: "a different server of that name is configured (settings.yaml); the configured server is used"},
			{Name: "needs-env", Inline: true, Note: "environment variables not set: NOPE"},
		}},
		{"untrusted project", MCPContext{Configured: configured}, []MCPUse{
			{Name: "github", Used: true},
			{Name: "missing", Note: "no MCP server of that name is configured"},
			{Name: "own", Inline: true, Note: "the project is not trusted (--trust-project starts its agents' servers)"},
			{Name: "github", Inline: true, Note: "the project is not trusted (--trust-project starts its agents' servers)"},
			{Name: "needs-env", Inline: true, Note: "the project is not trusted (--trust-project starts its agents' servers)"},
		}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, d.MCPPlan(tt.c)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
	strict := d.MCPPlan(MCPContext{Configured: configured, Strict: true, MayStart: true})
	if strict[2].Used || !strings.Contains(strict[2].Note, "--strict-mcp-config") {
		t.Errorf("strict: %+v", strict[2])
	}
}

func TestDefinitionStepCap(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ own, run, want int }{
		{0, 200, 200}, {5, 200, 5}, {500, 200, 200}, {5, 0, 5}, {0, 0, 0},
	} {
		if got := (Definition{MaxTurns: tt.own}).StepCap(tt.run); got != tt.want {
			t.Errorf("StepCap(own %d, run %d) = %d; want %d", tt.own, tt.run, got, tt.want)
		}
	}
}
