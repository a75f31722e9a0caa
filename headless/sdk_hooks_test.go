package headless

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// answerHooks answers every hook_callback request on h with answer(callback_id, n), n
// counting that callback's calls from 1, until a line matches until; it returns the hook
// inputs it saw, by callback id.
func answerHooks(h *fakeHost, answer func(id string, n int) string, until func(gjson.Result) bool) map[string][]gjson.Result {
	h.t.Helper()
	seen := map[string][]gjson.Result{}
	for {
		l := h.next("a hook callback or the end", func(l gjson.Result) bool { return isRequest("hook_callback")(l) || until(l) })
		if !isRequest("hook_callback")(l) {
			return seen
		}
		id := l.Get("request.callback_id").Str
		seen[id] = append(seen[id], l.Get("request.input"))
		h.send(`{"type":"control_response","response":{"subtype":"success","request_id":"` + l.Get("request_id").Str + `","response":` + answer(id, len(seen[id])) + `}}`)
	}
}

// fixed answers each callback id with the same output.
func fixed(answers map[string]string) func(string, int) string {
	return func(id string, _ int) string { return answers[id] }
}

func TestSDKHooks(t *testing.T) {
	t.Parallel()
	m := model(t, `
rules:
  - agent: parent
    when: {last_user_contains: "keep going"}
    reply: {text: "finished after the Stop hook"}
  - agent: parent
    when: {last_tool_result_contains: "PreToolUse"}
    reply: {text: "the tool was blocked: {{ lastToolResult }}"}
  - agent: parent
    when: {step: 1}
    reply:
      tool_calls: [{name: list_agents, input: {}}]
`)
	h := startHost(t, sdkOpts(t, m))
	h.request("i", `{"subtype":"initialize","hooks":{
		"UserPromptSubmit":[{"hookCallbackIds":["prompt"]}],
		"PreToolUse":[{"matcher":"Bash","hookCallbackIds":["bash"]},{"matcher":"list_agents|Task","hookCallbackIds":["pre"]}],
		"Stop":[{"hookCallbackIds":["stop"]}],
		"Notification":[{"hookCallbackIds":["never"]}]}}`)
	h.user("look around")
	reply := h.next("the initialize reply", isReply("i"))
	if !reply.Get("response.response.hooks_applied").Bool() {
		t.Errorf("initialize reply without hooks_applied: %s", reply.Raw)
	}
	seen := answerHooks(h, func(id string, n int) string {
		switch {
		case id == "prompt":
			return `{"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":"CONTEXT-FROM-HOOK"}}`
		case id == "pre":
			return `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no listing"}}`
		case id == "stop" && n == 1:
			return `{"decision":"block","reason":"keep going"}`
		}
		return `{"continue":true}`
	}, isType("result"))
	lines, err := h.closeStdin()
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if _, ok := seen["bash"]; ok {
		t.Errorf("the Bash matcher fired for list_agents")
	}
	if p := seen["prompt"]; len(p) != 1 || p[0].Get("prompt").Str != "look around" || p[0].Get("hook_event_name").Str != "UserPromptSubmit" ||
		p[0].Get("session_id").Str == "" || p[0].Get("cwd").Str == "" {
		t.Errorf("UserPromptSubmit input = %v", p)
	}
	if p := seen["pre"]; len(p) != 1 || p[0].Get("tool_name").Str != "list_agents" || p[0].Get("tool_use_id").Str == "" {
		t.Errorf("PreToolUse input = %v", p)
	}
	if st := seen["stop"]; len(st) != 2 || st[0].Get("stop_hook_active").Bool() || !st[1].Get("stop_hook_active").Bool() ||
		st[1].Get("last_assistant_message").Str != "finished after the Stop hook" {
		t.Errorf("Stop inputs = %v, want two: blocked once, then allowed", st)
	}
	reqs := m.Requests()
	if !strings.Contains(reqs[0].Messages[0].Text(), "CONTEXT-FROM-HOOK") {
		t.Errorf("additionalContext not in the prompt: %+v", reqs[0].Messages[0])
	}
	final := filter(lines, isType("result"))
	if len(final) != 1 || final[0].Get("result").Str != "finished after the Stop hook" {
		t.Errorf("results = %v", final)
	}
	blocked := filter(lines, func(l gjson.Result) bool {
		return isType("user")(l) && strings.Contains(l.Get("message.content.0.content").Str, "blocked by a PreToolUse hook: no listing")
	})
	if len(blocked) != 1 {
		t.Errorf("the denied tool call's result is not in the stream:\n%s", h.output())
	}
}

func TestSDKPromptBlockedByHook(t *testing.T) {
	t.Parallel()
	m := model(t, sdkEcho)
	h := startHost(t, sdkOpts(t, m))
	h.request("i", `{"subtype":"initialize","hooks":{"UserPromptSubmit":[{"hookCallbackIds":["p"]}]}}`)
	h.user("forbidden words")
	answerHooks(h, fixed(map[string]string{"p": `{"decision":"block","reason":"not that"}`}), isType("result"))
	h.user("fine words") // blocked prompts do not end the session
	answerHooks(h, fixed(map[string]string{"p": `{}`}), isType("result"))
	lines, err := h.closeStdin()
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	rs := filter(lines, isType("result"))
	if len(rs) != 2 || rs[0].Get("subtype").Str != "error_during_execution" || !strings.Contains(rs[0].Get("errors.0").Str, "not that") ||
		rs[1].Get("result").Str != "echo: fine words" {
		t.Errorf("results = %v", rs)
	}
	if n := len(m.Requests()); n != 1 {
		t.Errorf("model calls = %d, want 1 (the blocked prompt never reaches the model)", n)
	}
}

func TestSDKSubagentHooks(t *testing.T) {
	t.Parallel()
	m := model(t, nonceScenario)
	h := startHost(t, sdkOpts(t, m))
	h.request("i", `{"subtype":"initialize","hooks":{"SubagentStart":[{"matcher":"general-purpose","hookCallbackIds":["start"]}],"SubagentStop":[{"matcher":"general-.*","hookCallbackIds":["stop"]},{"matcher":"Explore","hookCallbackIds":["never"]}]}}`)
	h.user("Keep NONCE-77 safe")
	// The callbacks are notifications, not waited for: the last ones may come after the
	// last result, so the host answers until it has seen two of each.
	seen := map[string][]gjson.Result{}
	for len(seen["start"]) < 2 || len(seen["stop"]) < 2 {
		l := h.next("a hook callback", isRequest("hook_callback"))
		id := l.Get("request.callback_id").Str
		seen[id] = append(seen[id], l.Get("request.input"))
		h.send(`{"type":"control_response","response":{"subtype":"success","request_id":"` + l.Get("request_id").Str + `","response":{}}}`)
	}
	h.next("the last result", func(l gjson.Result) bool {
		return isType("result")(l) && strings.Contains(l.Get("result").Str, "remembered")
	})
	if _, err := h.closeStdin(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(seen["start"]) != 2 || seen["start"][0].Get("agent_type").Str != "general-purpose" || seen["start"][0].Get("agent_id").Str == "" {
		t.Errorf("SubagentStart inputs = %v", seen["start"])
	}
	if len(seen["never"]) != 0 {
		t.Errorf("a SubagentStop matcher for another agent type fired: %v", seen["never"])
	}
	if len(seen["stop"]) != 2 || seen["stop"][1].Get("last_assistant_message").Str != "NONCE-77" || seen["stop"][1].Get("agent_type").Str != "general-purpose" {
		t.Errorf("SubagentStop inputs = %v", seen["stop"])
	}
}
