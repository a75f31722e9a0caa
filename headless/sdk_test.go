package headless

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/stoke-cli/stoke/agents/llm/price"
)

const sdkEcho = `
rules:
  - agent: reviewer
    reply:
      text: 'reviewer here; {{ match "Codeword: (\\w+)" }}'
  - agent: parent
    when: {last_user_contains: "ask the reviewer"}
    reply:
      tool_calls:
        - name: task
          input: {description: review, prompt: "review it", subagent_type: reviewer}
  - agent: parent
    when: {last_tool_result_contains: "reviewer here"}
    reply:
      text: "reviewer said: {{ lastToolResult }}"
  - agent: parent
    reply:
      text: "echo: {{ lastUser }}"
`

func TestSDKInitializeApplied(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		init       string
		wantSystem func(string) bool
	}{
		{"SDK default [\"\"] keeps stoke's prompt", `{"subtype":"initialize","systemPrompt":[""]}`,
			func(s string) bool { return s == parentSystemPrompt }},
		{"no systemPrompt (the preset) keeps stoke's prompt, append is added", `{"subtype":"initialize","appendSystemPrompt":"Be terse."}`,
			func(s string) bool { return s == parentSystemPrompt+"\n\nBe terse." }},
		{"a custom prompt replaces it", `{"subtype":"initialize","systemPrompt":["You are a pirate."],"appendSystemPrompt":"Say arr."}`,
			func(s string) bool { return s == "You are a pirate.\n\nSay arr." }},
		{"a string prompt replaces it", `{"subtype":"initialize","systemPrompt":"Plain string."}`,
			func(s string) bool { return s == "Plain string." }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := model(t, sdkEcho)
			h := startHost(t, sdkOpts(t, m))
			h.request("init1", tt.init)
			h.user("hello")
			reply := h.next("the initialize reply", isReply("init1"))
			if got := reply.Get("response.subtype").Str; got != "success" {
				t.Fatalf("initialize reply = %s", reply.Raw)
			}
			for _, key := range []string{"commands", "agents", "output_style", "available_output_styles", "models", "account", "stoke_version"} {
				if !reply.Get("response.response." + key).Exists() {
					t.Errorf("initialize reply lacks %q: %s", key, reply.Raw)
				}
			}
			h.next("the result", isType("result"))
			if _, err := h.closeStdin(); err != nil {
				t.Fatalf("Run: %v", err)
			}
			reqs := m.Requests()
			if len(reqs) != 1 || !tt.wantSystem(reqs[0].System) {
				t.Errorf("system prompt sent = %q", reqs[0].System)
			}
		})
	}
}

// Agents from initialize join the catalog. Their model is what the SDK wrote, resolved as
// for agent files: a model-aliases entry maps a Claude alias to a model; without one, the
// alias means the parent's model.
func TestSDKAgentsFromInitialize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		aliases map[string]string
		want    string // the reviewer's model; "" for the parent's
	}{
		{"alias unmapped", nil, ""},
		{"alias mapped by model-aliases", map[string]string{"sonnet": "acme-large"}, "acme-large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := model(t, sdkEcho)
			o := sdkOpts(t, m)
			o.ModelAliases = tc.aliases
			h := startHost(t, o)
			h.request("i", `{"subtype":"initialize","systemPrompt":[""],"agents":{"reviewer":{"description":"Reviews things","prompt":"You review. Codeword: OTTER.","tools":["Read","Grep"],"model":"sonnet"}}}`)
			h.user("ask the reviewer")
			init := h.next("init", isSystem("init"))
			if got := init.Get("agents").String(); got != `["general-purpose","reviewer"]` {
				t.Errorf("init agents = %s", got)
			}
			reply := h.next("the initialize reply", isReply("i"))
			agents := reply.Get("response.response.agents.#.name").String()
			if agents != `["general-purpose","reviewer"]` {
				t.Errorf("initialize reply agents = %s", agents)
			}
			res := h.next("the result", isType("result"))
			if got := res.Get("result").Str; !strings.Contains(got, "reviewer here; OTTER") {
				t.Errorf("result = %q", got)
			}
			if _, err := h.closeStdin(); err != nil {
				t.Fatalf("Run: %v", err)
			}
			want := tc.want
			for _, r := range m.Requests() {
				if want == "" && r.Agent != "reviewer" {
					want = r.Model // the parent's
				}
			}
			n := 0
			for _, r := range m.Requests() {
				if r.Agent != "reviewer" {
					continue
				}
				n++
				if r.Model != want {
					t.Errorf("reviewer model = %q, want %q", r.Model, want)
				}
			}
			if n == 0 {
				t.Error("the reviewer made no model call")
			}
		})
	}
}

func TestSDKControlRequests(t *testing.T) {
	t.Parallel()
	m := model(t, sdkEcho)
	h := startHost(t, sdkOpts(t, m))
	h.request("i", `{"subtype":"initialize"}`)
	h.request("x1", `{"subtype":"mcp_status"}`)
	h.request("x2", `{"subtype":"initialize"}`)
	h.request("x3", `{"subtype":"set_permission_mode","mode":"acceptEdits"}`)
	h.request("x4", `{"subtype":"set_permission_mode","mode":"sideways"}`)
	h.request("x5", `{"subtype":"set_model","model":"other-model"}`)
	h.request("x6", `{"subtype":"interrupt"}`) // nothing runs: a no-op that succeeds
	h.request("x7", `{"subtype":"stop_task","task_id":"a0123456789abcdef"}`)
	h.request("x8", `{"subtype":"stop_task","task_id":"../etc"}`)
	h.request("x9", `{"subtype":"get_task_output","task_id":"a0123456789abcdef"}`)
	h.request("x10", `{"subtype":"rewind_files","user_message_id":"u1"}`)
	h.request("x11", `{"subtype":"some_future_request"}`)
	h.request("x12", `{"subtype":"set_permission_mode","mode":"dontAsk"}`)
	h.request("x13", `{"subtype":"set_permission_mode","mode":"auto"}`)
	h.request("x14", `{"subtype":"seed_read_state","path":"a.go","mtime":1}`)
	h.user("hello")
	h.next("the result", isType("result"))
	lines, err := h.closeStdin()
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	replies := controlReplies(lines)
	tests := []struct {
		id, subtype, errorCode, errorHas, response string
	}{
		{id: "i", subtype: "success"},
		{id: "x1", subtype: "success", response: `{"mcpServers":[]}`},
		{id: "x2", subtype: "error", errorCode: "initialize_failed", errorHas: "accepted once"},
		{id: "x3", subtype: "success", response: `{"mode":"acceptEdits"}`},
		{id: "x4", subtype: "error", errorCode: "invalid_request", errorHas: "sideways"},
		{id: "x5", subtype: "success", response: `{}`},
		{id: "x6", subtype: "success", response: `{}`},
		{id: "x7", subtype: "error", errorCode: "task_not_found", errorHas: "a0123456789abcdef"},
		{id: "x8", subtype: "error", errorCode: "task_not_found", errorHas: "malformed task id"},
		{id: "x9", subtype: "error", errorCode: "task_not_found", errorHas: "a0123456789abcdef"},
		{id: "x10", subtype: "error", errorCode: "unsupported_request", errorHas: "Unsupported control request subtype: rewind_files (stoke keeps no file checkpoints)"},
		{id: "x11", subtype: "error", errorCode: "unsupported_request", errorHas: "Unsupported control request subtype: some_future_request"},
		{id: "x12", subtype: "success", response: `{"mode":"default"}`},
		{id: "x13", subtype: "success", response: `{"mode":"default"}`},
		{id: "x14", subtype: "success", response: `{}`},
	}
	for _, tt := range tests {
		r, ok := replies[tt.id]
		if !ok {
			t.Errorf("no reply to %s", tt.id)
			continue
		}
		if r.Get("subtype").Str != tt.subtype || r.Get("error_code").Str != tt.errorCode ||
			!strings.Contains(r.Get("error").Str, tt.errorHas) || (tt.response != "" && r.Get("response").Raw != tt.response) {
			t.Errorf("reply to %s = %s", tt.id, r.Raw)
		}
	}
	if got := m.Requests()[0].Model; got != "other-model" {
		t.Errorf("model after set_model = %q", got)
	}
}

// controlReplies are the control responses among lines, by request id.
func controlReplies(lines []gjson.Result) map[string]gjson.Result {
	replies := map[string]gjson.Result{}
	for _, l := range filter(lines, isType("control_response")) {
		replies[l.Get("response.request_id").Str] = l.Get("response")
	}
	return replies
}

func TestSDKInitializeNotFirst(t *testing.T) {
	t.Parallel()
	m := model(t, sdkEcho)
	h := startHost(t, sdkOpts(t, m))
	h.user("hello")
	h.request("late", `{"subtype":"initialize","systemPrompt":["Too late."]}`)
	reply := h.next("the initialize reply", isReply("late"))
	if reply.Get("response.subtype").Str != "error" {
		t.Errorf("a late initialize must be refused: %s", reply.Raw)
	}
	if _, err := h.closeStdin(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := m.Requests()[0].System; got != parentSystemPrompt {
		t.Errorf("a late initialize changed the system prompt to %q", got)
	}
}

func TestSDKInterrupt(t *testing.T) {
	t.Parallel()
	m := model(t, `
rules:
  - agent: parent
    when: {last_user_contains: "next"}
    reply: {text: "answered next"}
  - agent: parent
    reply:
      delay: 60s
      text: "too late"
`)
	o := sdkOpts(t, m)
	o.SDK.SessionStates = true
	h := startHost(t, o)
	h.user("be slow")
	h.next("the running state", isState("running"))
	h.request("int", `{"subtype":"interrupt"}`)
	if r := h.next("the interrupt reply", isReply("int")); r.Get("response.subtype").Str != "success" {
		t.Fatalf("interrupt reply = %s", r.Raw)
	}
	first := h.next("the interrupted result", isType("result"))
	if first.Get("subtype").Str != "error_during_execution" || !first.Get("is_error").Bool() ||
		!strings.Contains(first.Get("errors.0").Str, "interrupted") {
		t.Fatalf("interrupted result = %s", first.Raw)
	}
	h.next("idle after the interrupted turn", isState("idle"))
	h.user("next")
	second := h.next("the next result", isType("result"))
	if second.Get("subtype").Str != "success" || second.Get("result").Str != "answered next" {
		t.Fatalf("next result = %s", second.Raw)
	}
	lines, err := h.closeStdin()
	if err != nil {
		t.Fatalf("Run after an interrupt and a successful turn: %v", err)
	}
	checkStates(t, lines)
}

// checkStates checks the session_state_changed lines: they alternate running, idle, ...,
// the last one is idle, and no result comes after it.
func checkStates(t *testing.T, lines []gjson.Result) {
	t.Helper()
	want, lastIdle, lastResult := "running", -1, -1
	for i, l := range lines {
		if isType("result")(l) {
			lastResult = i
		}
		if !isSystem("session_state_changed")(l) {
			continue
		}
		if got := l.Get("state").Str; got != want {
			t.Errorf("line %d: state %s, want %s", i+1, got, want)
		}
		if !l.Get("sdk_host_only").Bool() {
			t.Errorf("line %d: session state without sdk_host_only", i+1)
		}
		if want == "idle" {
			lastIdle, want = i, "running"
		} else {
			want = "idle"
		}
	}
	if want != "running" {
		t.Errorf("the last state is running: it must be followed by idle")
	}
	if lastIdle < lastResult {
		t.Errorf("the last idle (line %d) is before the last result (line %d)", lastIdle+1, lastResult+1)
	}
}

func TestSDKSessionStatesWithBackgroundAgents(t *testing.T) {
	t.Parallel()
	m := model(t, nonceScenario)
	o := sdkOpts(t, m)
	o.SDK.SessionStates = true
	h := startHost(t, o)
	h.user("Keep NONCE-ABC123 safe")
	// How many results come before the one with the nonce depends on when the agent's
	// notifications arrive: mid-turn, the parent reads them in the turn it is in (even the
	// first one). The result holding the nonce is the last either way, and the host must
	// not see idle before it.
	last := h.next("the result holding the nonce", func(l gjson.Result) bool {
		return isType("result")(l) && strings.Contains(l.Get("result").Str, "NONCE-ABC123")
	})
	h.next("idle", isState("idle"))
	lines, err := h.closeStdin()
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	checkStates(t, lines)
	if n := len(filter(lines, isState("idle"))); n != 1 {
		t.Errorf("idle written %d times, want once (after all background work)", n)
	}
	results := filter(lines, isType("result"))
	for _, r := range results {
		if r.Get("subtype").Str != "success" {
			t.Errorf("result = %s", r.Raw)
		}
	}
	if results[len(results)-1].Raw != last.Raw {
		t.Errorf("a result came after the one holding the nonce: %s", results[len(results)-1].Raw)
	}
}

const nonceScenario = `
rules:
  - agent: parent
    when: {last_user_contains: "<turn>2</turn>"}
    reply: {text: 'remembered {{ lastMatch "<result>(NONCE-[A-Z0-9]+)" }}'}
  - agent: parent
    when: {last_user_contains: "<turn>1</turn>"}
    reply:
      tool_calls:
        - name: send_message
          input: {task_id: '{{ lastMatch "<task-id>([^<]+)</task-id>" }}', message: "What was the nonce?"}
  - agent: parent
    when: {last_user_matches: "continued on its resident runtime|revived"}
    reply: {text: "asked"}
  - agent: parent
    when: {last_user_contains: "running in the background"}
    reply: {text: "launched"}
  - agent: parent
    when: {step: 1}
    reply:
      tool_calls:
        - name: task
          input: {description: keep, prompt: 'Remember {{ match "NONCE-[A-Z0-9]+" }}', subagent_type: general-purpose, run_in_background: true}
  - agent: general-purpose
    when: {last_user_contains: "What was the nonce"}
    reply: {text: '{{ match "NONCE-[A-Z0-9]+" }}'}
  - agent: general-purpose
    reply: {text: "Stored."}
`

func TestSDKNoStatesUnlessAsked(t *testing.T) {
	t.Parallel()
	h := startHost(t, sdkOpts(t, model(t, sdkEcho)))
	h.user("hello")
	lines, err := h.closeStdin()
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if n := len(filter(lines, isSystem("session_state_changed"))); n != 0 {
		t.Errorf("%d state lines without SessionStates", n)
	}
	if l := lines[len(lines)-1]; !isType("result")(l) {
		t.Errorf("last line = %s", l.Raw)
	}
}

func TestSDKEOFFinishesQueuedTurns(t *testing.T) {
	t.Parallel()
	m := model(t, sdkEcho)
	h := startHost(t, sdkOpts(t, m))
	h.request("i", `{"subtype":"initialize","systemPrompt":[""]}`)
	h.user("one")
	h.user("two")
	h.user("three")
	lines, err := h.closeStdin() // EOF before the first turn has ended
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	var got []string
	for _, r := range filter(lines, isType("result")) {
		got = append(got, r.Get("result").Str)
	}
	if diff := cmp.Diff([]string{"echo: one", "echo: two", "echo: three"}, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
}

func TestSDKMalformedLine(t *testing.T) {
	t.Parallel()
	h := startHost(t, sdkOpts(t, model(t, sdkEcho)))
	h.user("one")
	h.send(`{"type":"user","message":42}`)
	lines, err := h.wait()
	if !errors.Is(err, ErrUsage) {
		t.Fatalf("Run = %v, want ErrUsage", err)
	}
	rs := filter(lines, isType("result"))
	if len(rs) != 2 || rs[0].Get("result").Str != "echo: one" {
		t.Fatalf("the turn before the malformed line must run, then an error result: %v", rs)
	}
	if last := lines[len(lines)-1]; last.Get("type").Str != "result" || last.Get("subtype").Str != "error_during_execution" ||
		!strings.Contains(last.Get("errors.0").Str, "line 2") {
		t.Errorf("the last line is %s, want the error result of the malformed line", last.Raw)
	}
}

func TestSDKPartialMessages(t *testing.T) {
	t.Parallel()
	m := model(t, `
rules:
  - agent: parent
    when: {step: 1}
    reply:
      text: "Looking at the agents, which takes a sentence longer than sixty-four bytes to say."
      tool_calls: [{name: list_agents, input: {}}]
  - agent: parent
    reply: {text: "done"}
`)
	o := sdkOpts(t, m)
	o.SDK.IncludePartialMessages = true
	h := startHost(t, o)
	h.user("go")
	lines, err := h.closeStdin()
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	var types []string
	var text strings.Builder
	for _, l := range filter(lines, isType("stream_event")) {
		if l.Get("parent_tool_use_id").Type != gjson.Null {
			t.Errorf("stream_event without parent_tool_use_id null: %s", l.Raw)
		}
		typ := l.Get("event.type").Str
		if typ == "content_block_delta" && l.Get("event.delta.type").Str == "text_delta" {
			text.WriteString(l.Get("event.delta.text").Str)
			if len(types) > 0 && types[len(types)-1] == typ {
				continue // several deltas count once
			}
		}
		types = append(types, typ)
	}
	want := []string{
		"message_start", "content_block_start", "content_block_delta", "content_block_stop",
		"content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop",
		"message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop",
	}
	if diff := cmp.Diff(want, types); diff != "" {
		t.Errorf("stream events (-want +got):\n%s", diff)
	}
	if got := text.String(); got != "Looking at the agents, which takes a sentence longer than sixty-four bytes to say.done" {
		t.Errorf("streamed text = %q", got)
	}
	tool := filter(lines, func(l gjson.Result) bool { return l.Get("event.content_block.type").Str == "tool_use" })
	if len(tool) != 1 || tool[0].Get("event.content_block.name").Str != "list_agents" {
		t.Errorf("tool_use block start = %v", tool)
	}
}

// TestSDKSetModelNeedsAPrice: with --max-budget-usd, set_model to a model the price
// table does not know is refused (invalid_request, naming prices:) and the parent keeps
// its model; a priced model is accepted.
func TestSDKSetModelNeedsAPrice(t *testing.T) {
	t.Parallel()
	m := model(t, sdkEcho)
	o := sdkOpts(t, m)
	o.SDK.MaxBudgetUSD = 5
	o.Prices = price.Table{}.With(map[string]price.Price{"priced-model": {Output: 1}})
	h := startHost(t, o)
	h.request("i", `{"subtype":"initialize"}`)
	h.request("s1", `{"subtype":"set_model","model":"acme-large"}`)
	h.user("first")
	h.next("the first result", isType("result"))
	h.request("s2", `{"subtype":"set_model","model":"priced-model"}`)
	h.user("second")
	h.next("the second result", isType("result"))
	lines, err := h.closeStdin()
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	replies := controlReplies(lines)
	if r := replies["s1"]; r.Get("subtype").Str != "error" || r.Get("error_code").Str != "invalid_request" ||
		!strings.Contains(r.Get("error").Str, `"acme-large"`) || !strings.Contains(r.Get("error").Str, "prices:") {
		t.Errorf("reply to an unpriced set_model = %s", r.Raw)
	}
	if r := replies["s2"]; r.Get("subtype").Str != "success" {
		t.Errorf("reply to a priced set_model = %s", r.Raw)
	}
	reqs := m.Requests()
	if len(reqs) != 2 || reqs[0].Model == "acme-large" || reqs[1].Model != "priced-model" {
		t.Errorf("the parent's models = %v, want its own, then priced-model", func() (ms []string) {
			for _, r := range reqs {
				ms = append(ms, r.Model)
			}
			return ms
		}())
	}
}

func TestSDKMaxBudget(t *testing.T) {
	t.Parallel()
	m := model(t, `
model: budget-model
rules:
  - agent: parent
    when: {step: 3}
    reply: {text: "never reached"}
  - agent: parent
    reply:
      tool_calls: [{name: list_agents, input: {}}]
      usage: {input_tokens: 1, output_tokens: 1000000}
`)
	o := sdkOpts(t, m)
	o.SDK.MaxBudgetUSD = 1.5
	// A dollar a call: a million output tokens at $1 per million.
	o.Prices = price.Table{}.With(map[string]price.Price{"budget-model": {Output: 1}})
	h := startHost(t, o)
	h.user("spend")
	lines, err := h.closeStdin()
	if !errors.Is(err, ErrMaxBudget) {
		t.Fatalf("Run = %v, want ErrMaxBudget", err)
	}
	rs := filter(lines, isType("result"))
	if len(rs) != 1 || rs[0].Get("subtype").Str != "error_max_budget_usd" || !rs[0].Get("is_error").Bool() ||
		!strings.Contains(rs[0].Get("errors.0").Str, "max-budget-usd") {
		t.Fatalf("results = %v", rs)
	}
	if n := len(m.Requests()); n != 2 {
		t.Errorf("model calls = %d, want 2 (the second goes over the budget)", n)
	}
}
