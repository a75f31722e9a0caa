package headless

import (
	"errors"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// An in-process MCP server of the SDK host (initialize's sdkMcpServers): stoke's MCP client
// reaches it through mcp_message control requests, whose replies carry the server's
// answers; the fake host plays the server by hand, as the SDK's transport would.
func TestSDKInProcessMCPServer(t *testing.T) {
	t.Parallel()
	m := model(t, `
rules:
  - agent: parent
    when: {step: 1}
    reply:
      tool_calls: [{name: mcp__calc__add, input: {a: 2, b: 3}}]
  - agent: parent
    reply: {text: "sum: {{ lastToolResult }}"}
`)
	o := sdkOpts(t, m)
	o.SDK.AllowedTools = []string{"mcp__calc"}
	h := startHost(t, o)
	h.request("i", `{"subtype":"initialize","sdkMcpServers":["calc"]}`)
	var methods []string
	isMCP := isRequest("mcp_message")
	var result gjson.Result
	for result.Raw == "" {
		l := h.next("an mcp_message or the result", func(l gjson.Result) bool {
			return isMCP(l) || isType("system")(l) && l.Get("subtype").Str == "init" || isType("result")(l)
		})
		switch {
		case isType("result")(l):
			result = l
			continue
		case !isMCP(l):
			h.user("add them") // system/init: the server has started
			continue
		}
		if s := l.Get("request.server_name").Str; s != "calc" {
			t.Errorf("server_name = %q", s)
		}
		msg := l.Get("request.message")
		methods = append(methods, msg.Get("method").Str)
		id := msg.Get("id").Raw
		var resp string
		switch msg.Get("method").Str {
		case "initialize":
			resp = `{"jsonrpc":"2.0","id":` + id + `,"result":{"protocolVersion":` + msg.Get("params.protocolVersion").Raw +
				`,"capabilities":{"tools":{}},"serverInfo":{"name":"calc","version":"1"}}}`
		case "tools/list":
			resp = `{"jsonrpc":"2.0","id":` + id + `,"result":{"tools":[{"name":"add","description":"Add","inputSchema":{"type":"object"}}]}}`
		case "tools/call":
			sum := msg.Get("params.arguments.a").Int() + msg.Get("params.arguments.b").Int()
			resp = `{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"` + string(rune('0'+sum)) + `"}]}}`
		default:
			if msg.Get("id").Exists() { // a method the server does not have (server/discover)
				resp = `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32601,"message":"Method not found"}}`
			} else { // a notification: the SDK answers a dummy response
				resp = `{"jsonrpc":"2.0","id":0,"result":{}}`
			}
		}
		h.send(`{"type":"control_response","response":{"subtype":"success","request_id":` + quote(l.Get("request_id").Str) +
			`,"response":{"mcp_response":` + resp + `}}}`)
	}
	lines, err := h.closeStdin()
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := result.Get("result").Str; got != "sum: 5" {
		t.Errorf("result = %s", result.Raw)
	}
	if got := strings.Join(methods, " "); !strings.HasSuffix(got, "initialize notifications/initialized tools/list tools/call") {
		t.Errorf("MCP messages = %s", got)
	}
	init := filter(lines, isSystem("init"))[0]
	if got := init.Get("mcp_servers").Raw; got != `[{"name":"calc","status":"connected"}]` {
		t.Errorf("init mcp_servers = %s", got)
	}
	if reply := filter(lines, isReply("i"))[0]; reply.Get("response.response.mcp_servers_applied").Exists() {
		t.Errorf("no mcpServers were delivered, yet the reply says mcp_servers_applied: %s", reply.Raw)
	}
}

// An initialize request stoke cannot apply is refused (initialize_failed, with why) and
// the run ends with a usage error: the host is not left waiting on a session it did not
// ask for.
func TestSDKInitializeRefusedEndsTheRun(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, request, why string }{
		{"an agent without a prompt", `{"subtype":"initialize","agents":{"reviewer":{"description":"d"}}}`, `agent "reviewer" has no prompt`},
		{"agents neither object nor list", `{"subtype":"initialize","agents":"reviewer"}`, "agents: want an object"},
		{"two agents of one name", `{"subtype":"initialize","agents":[{"name":"a","systemPrompt":"p","level":"session"},{"name":"a","systemPrompt":"q","level":"session"}]}`, `a second agent named "a"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := model(t, sdkEcho)
			h := startHost(t, sdkOpts(t, m))
			h.request("i", tt.request)
			reply := h.next("the initialize reply", isReply("i"))
			lines, err := h.wait() // stdin stays open: the run ends by itself
			if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), tt.why) {
				t.Errorf("Run = %v, want a usage error saying %q", err, tt.why)
			}
			if reply.Get("response.subtype").Str != "error" || reply.Get("response.error_code").Str != "initialize_failed" ||
				!strings.Contains(reply.Get("response.error").Str, tt.why) {
				t.Errorf("reply = %s", reply.Raw)
			}
			if len(lines) != 1 {
				t.Errorf("output = %v, want the reply alone", lines)
			}
			if len(m.Requests()) != 0 {
				t.Errorf("the model was asked")
			}
		})
	}
}

// Qwen Code's SDK sends agents as a list of SubagentConfig: they become subagent types.
func TestSDKQwenAgentList(t *testing.T) {
	t.Parallel()
	m := model(t, sdkEcho)
	o := sdkOpts(t, m)
	o.SDK.Dialect = "qwen"
	h := startHost(t, o)
	h.request("i", `{"subtype":"initialize","hooks":null,"agents":[{"name":"reviewer","description":"Reviews","systemPrompt":"You review.","level":"session","tools":["read_file","run_shell_command","grep_search"]}]}`)
	reply := h.next("the initialize reply", isReply("i"))
	init := h.next("system/init", isSystem("init"))
	if _, err := h.closeStdin(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := reply.Get(`response.response.agents.#(name=="reviewer").description`).Str; got != "Reviews" {
		t.Errorf("reply agents = %s", reply.Get("response.response.agents").Raw)
	}
	if !strings.Contains(init.Get("agents").Raw, `"reviewer"`) {
		t.Errorf("init agents = %s", init.Get("agents").Raw)
	}
}

// --max-session-turns caps the parent's model calls over the whole session, not per turn:
// the call past the cap ends the run with error_max_turns.
func TestSDKMaxSessionTurns(t *testing.T) {
	t.Parallel()
	m := model(t, `
rules:
  - agent: parent
    when: {last_user_contains: "hello"}
    reply: {text: "hi"}
  - agent: parent
    reply:
      tool_calls: [{name: glob, input: {pattern: "*"}}]
`)
	o := sdkOpts(t, m)
	o.SDK.MaxSessionTurns = 3
	h := startHost(t, o)
	h.user("hello")
	first := h.next("the first result", isType("result"))
	h.user("look around")
	lines, err := h.wait()
	if !errors.Is(err, ErrMaxTurns) {
		t.Errorf("Run = %v, want ErrMaxTurns", err)
	}
	if first.Get("subtype").Str != "success" {
		t.Errorf("first result = %s", first.Raw)
	}
	last := filter(lines, isType("result"))
	if r := last[len(last)-1]; r.Get("subtype").Str != "error_max_turns" || !strings.Contains(r.Get("errors.0").Str, "max session turns (3)") {
		t.Errorf("last result = %s", r.Raw)
	}
	if n := len(m.Requests()); n != 3 {
		t.Errorf("the model was asked %d times, want 3 (1 for hello, 2 for the loop)", n)
	}
}
