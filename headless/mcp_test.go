package headless

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"

	"github.com/stoke-cli/stoke/agents/mcp"
	"github.com/stoke-cli/stoke/agents/secrets"
	"github.com/stoke-cli/stoke/agents/tools"
	"github.com/stoke-cli/stoke/streamjson/streamjsontest"
)

// mcpTestKey is the header value the test server requires: configured headers reach it.
const mcpTestKey = "k-0123456789-secret"

// mcpServer serves an in-process go-sdk MCP server (tool echo) over streamable HTTP on
// loopback. It answers 401 without the X-Test-Key header, and counts its sessions.
func mcpServer(t *testing.T) (string, *atomic.Int32) {
	t.Helper()
	var sessions atomic.Int32
	s := sdk.NewServer(&sdk.Implementation{Name: "headless-test"}, &sdk.ServerOptions{
		InitializedHandler: func(context.Context, *sdk.InitializedRequest) { sessions.Add(1) },
	})
	type echoIn struct {
		Message string `json:"message"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echoes the message."},
		func(_ context.Context, _ *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echo: " + in.Message}}}, nil, nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Test-Key") != mcpTestKey {
			http.Error(w, "no key", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &sessions
}

// closedURL is the URL of a server that is gone: connections are refused.
func closedURL(t *testing.T) string {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	return srv.URL
}

func mcpOpts(t *testing.T, url string) MCPOptions {
	return MCPOptions{Servers: map[string]mcp.ServerConfig{
		"t": {Type: mcp.TransportHTTP, URL: url, Headers: map[string]string{"X-Test-Key": mcpTestKey}},
	}}
}

const mcpCallScenario = `
rules:
  - agent: parent
    when: {step: 1}
    reply:
      tool_calls:
        - name: mcp__t__echo
          input: {message: "{{ lastUser }}"}
  - agent: parent
    reply: {text: "model saw: {{ lastToolResult }}"}
`

// The parent calls a tool of an MCP server and the result reaches the model; a server
// that cannot start is reported failed in system/init and the run goes on.
func TestRunMCPToolResultReachesTheModel(t *testing.T) {
	t.Parallel()
	url, _ := mcpServer(t)
	var out bytes.Buffer
	o := opts(t, model(t, mcpCallScenario), &out)
	o.Prompt, o.ApprovalMode = "nonce-4711", "yolo"
	o.MCP = mcpOpts(t, url)
	o.MCP.Servers["down"] = mcp.ServerConfig{Type: mcp.TransportHTTP, URL: closedURL(t)}
	if err := Run(t.Context(), o); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := streamjsontest.Validate(strings.NewReader(out.String())); err != nil {
		t.Errorf("invalid stream: %v", err)
	}
	ls := lines(t, out.String())
	init := ls[0]
	if got := init.Get("mcp_servers").Raw; got != `[{"name":"down","status":"failed"},{"name":"t","status":"connected"}]` {
		t.Errorf("init mcp_servers = %s", got)
	}
	if !strings.Contains(init.Get("tools").Raw, `"mcp__t__echo"`) {
		t.Errorf("init tools = %s, want mcp__t__echo", init.Get("tools").Raw)
	}
	if got := ls[len(ls)-1].Get("result").String(); got != "model saw: echo: nonce-4711" {
		t.Errorf("result = %q", got)
	}
	if strings.Contains(out.String(), mcpTestKey) {
		t.Errorf("the configured header value is in the event stream")
	}
}

// An MCP tool runs like a command: refused in plan, default and auto-edit unless a
// permission rule allows it, run in yolo; a bare --disallowedTools takes it away.
func TestRunMCPApprovalModes(t *testing.T) {
	t.Parallel()
	url, _ := mcpServer(t)
	tests := []struct {
		mode       tools.Mode
		allowed    []string
		disallowed []string
		want       string
		denials    int
	}{
		{mode: "plan", want: "not allowed in plan mode", denials: 1},
		{mode: "default", want: "needs approval", denials: 1},
		{mode: "auto-edit", want: "needs approval", denials: 1},
		{mode: "yolo", want: "echo: go"},
		{mode: "default", allowed: []string{"mcp__t__echo"}, want: "echo: go"},
		{mode: "default", allowed: []string{"mcp__t"}, want: "echo: go"},
		{mode: "auto-edit", allowed: []string{"mcp__t__*"}, want: "echo: go"},
		{mode: "default", allowed: []string{"mcp__other"}, want: "not approved", denials: 1},
		{mode: "yolo", disallowed: []string{"mcp__t"}, want: `unknown tool "mcp__t__echo"`},
	}
	for _, tt := range tests {
		t.Run(string(tt.mode)+strings.Join(tt.allowed, ",")+strings.Join(tt.disallowed, ","), func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			o := opts(t, model(t, mcpCallScenario), &out)
			o.Prompt, o.ApprovalMode = "go", tt.mode
			o.MCP = mcpOpts(t, url)
			o.SDK.AllowedTools, o.SDK.DisallowedTools = tt.allowed, tt.disallowed
			if err := Run(t.Context(), o); err != nil {
				t.Fatalf("Run: %v", err)
			}
			res := lines(t, out.String())
			last := res[len(res)-1]
			if got := last.Get("result").String(); !strings.Contains(got, tt.want) {
				t.Errorf("the model saw %q, want %q", got, tt.want)
			}
			if n := len(last.Get("permission_denials").Array()); n != tt.denials {
				t.Errorf("%d permission denials, want %d", n, tt.denials)
			}
		})
	}
}

const mcpSubagentScenario = `
rules:
  - agent: parent
    when: {step: 1}
    reply:
      tool_calls:
        - name: task
          input: {description: d, prompt: go, subagent_type: "{{ lastUser }}"}
  - agent: parent
    reply: {text: "{{ lastToolResult }}"}
  - agent: "*"
    when: {tools_include: mcp__t__echo}
    reply: {text: "has echo"}
  - agent: "*"
    when: {tools_include: mcp__own__echo}
    reply: {text: "has own echo"}
  - agent: "*"
    reply: {text: "no echo"}
`

// Subagents get MCP tools as Claude Code's agent files say: all of them without a tools
// list, those listed or named in mcpServers otherwise; a project file's inline servers
// only when the project is trusted. Agents naming one server share its session.
func TestRunMCPSubagents(t *testing.T) {
	t.Parallel()
	url, _ := mcpServer(t)
	agentFiles := map[string]string{
		"inherits":   "",
		"tools-only": "tools: Read",
		"named":      "tools: Read\nmcpServers: [t]",
		"listed":     "tools: Read, mcp__t__echo",
		"whole":      "tools: Read, mcp__t",
		"denied":     "disallowedTools: mcp__t__echo",
		"clash":      "tools: Read\nmcpServers:\n  - t: {command: something-else}",
	}
	tests := []struct {
		agent   string
		trusted bool
		want    string
	}{
		{agent: "inherits", want: "has echo"},
		{agent: "tools-only", want: "no echo"},
		{agent: "named", want: "has echo"},
		{agent: "listed", want: "has echo"},
		{agent: "whole", want: "has echo"},
		{agent: "denied", want: "no echo"},
		{agent: "clash", want: "has echo"}, // the configured t wins over the file's own t
		{agent: "inline", want: "no echo"},
		{agent: "inline", trusted: true, want: "has own echo"},
	}
	for _, tt := range tests {
		t.Run(tt.agent+map[bool]string{true: "-trusted"}[tt.trusted], func(t *testing.T) {
			t.Parallel()
			url2, sessions := mcpServer(t)
			var out bytes.Buffer
			o := opts(t, model(t, mcpSubagentScenario), &out)
			o.Prompt, o.ApprovalMode = tt.agent, "yolo"
			o.MCP = mcpOpts(t, url2)
			o.MCP.TrustProject = tt.trusted
			for name, front := range agentFiles {
				writeFile(t, filepath.Join(o.Home, "agents", name+".md"), "---\nname: "+name+"\ndescription: d\n"+front+"\n---\nprompt\n")
			}
			writeFile(t, filepath.Join(o.CWD, ".claude", "agents", "inline.md"), "---\nname: inline\ndescription: d\ntools: Read\nmcpServers:\n  - own:\n      type: http\n      url: "+url+"\n      headers: {X-Test-Key: "+mcpTestKey+"}\n---\nprompt\n")
			if err := Run(t.Context(), o); err != nil {
				t.Fatalf("Run: %v", err)
			}
			ls := lines(t, out.String())
			if got := ls[len(ls)-1].Get("result").String(); !strings.Contains(got, tt.want) {
				t.Errorf("result %q, want %q", got, tt.want)
			}
			if tt.agent == "inherits" {
				if n := sessions.Load(); n != 1 {
					t.Errorf("the parent and its subagent made %d sessions with server t, want 1", n)
				}
			}
			// The agent's own server is not started with the parent's: pending in init.
			own := gjson.Get(ls[0].Raw, `mcp_servers.#(name=="own").status`)
			if want := map[bool]string{true: "pending"}[tt.trusted]; own.String() != want {
				t.Errorf("own in init: %q, want %q", own.String(), want)
			}
		})
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestMCPRuleMatches(t *testing.T) {
	tests := []struct {
		rule, name string
		want       bool
	}{
		{"mcp__a__echo", "mcp__a__echo", true},
		{"mcp__a", "mcp__a__echo", true},
		{"mcp__a__*", "mcp__a__echo", true},
		{"mcp__ab", "mcp__a__echo", false},
		{"mcp__a", "mcp__ab__echo", false},
		{"mcp__a__e", "mcp__a__echo", false},
		{"Bash", "mcp__a__echo", false},
		{"mcp__a", "shell", false},
	}
	for _, tt := range tests {
		if got := mcpRuleMatches(tt.rule, tt.name); got != tt.want {
			t.Errorf("mcpRuleMatches(%q, %q) = %v", tt.rule, tt.name, got)
		}
	}
}

func TestMCPChildEnvKeepsProviderKeysOut(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-test-openai")
	t.Setenv("ANTHROPIC_API_KEY", "sk-test-anthropic")
	t.Setenv("STOKE_API_KEY", "sk-test-stoke")
	t.Setenv("STOKE_MCP_TEST_KEEP", "kept")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "sk-test-aws")
	env := strings.Join(mcpEnv(secrets.New(secrets.Config{Deny: []string{"AWS_*"}})), "\n")
	if strings.Contains(env, "sk-test-") {
		t.Errorf("a provider key or an env-deny variable reaches MCP servers:\n%s", env)
	}
	if env := strings.Join(mcpEnv(nil), "\n"); strings.Contains(env, "sk-test-openai") {
		t.Errorf("without a policy a provider key reaches MCP servers:\n%s", env)
	}
	if !strings.Contains(env, "STOKE_MCP_TEST_KEEP=kept") {
		t.Errorf("other variables are dropped")
	}
}

// In SDK mode an MCP call the permission mode does not allow is put to the host as
// can_use_tool, like a shell command; the host's verdict decides it.
func TestSDKHostApprovesMCPCalls(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		behavior string
		want     string
	}{
		{"allow", "model saw: echo: asked"},
		{"deny", "model saw: mcp__t__echo was not approved: not this one"},
	} {
		t.Run(tc.behavior, func(t *testing.T) {
			t.Parallel()
			url, _ := mcpServer(t)
			o := sdkOpts(t, model(t, mcpCallScenario))
			o.MCP = mcpOpts(t, url)
			o.SDK.PermissionPromptStdio = true
			h := startHost(t, o)
			h.user("asked")
			init := h.next("system/init", isSystem("init"))
			if got := init.Get("mcp_servers").Raw; got != `[{"name":"t","status":"connected"}]` {
				t.Errorf("init mcp_servers = %s", got)
			}
			req := h.next("can_use_tool", isRequest("can_use_tool"))
			if got := req.Get("request.tool_name").Str; got != "mcp__t__echo" {
				t.Errorf("can_use_tool for %q (%s)", got, req.Raw)
			}
			if got := req.Get("request.input.message").Str; got != "asked" {
				t.Errorf("can_use_tool input %s", req.Get("request.input").Raw)
			}
			h.send(`{"type":"control_response","response":{"subtype":"success","request_id":"` + req.Get("request_id").Str +
				`","response":{"behavior":"` + tc.behavior + `","message":"not this one"}}}`)
			res := h.next("the result", isType("result"))
			if got := res.Get("result").Str; got != tc.want {
				t.Errorf("result %q, want %q", got, tc.want)
			}
			if _, err := h.closeStdin(); err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
}
