package scripted

import (
	"testing"

	"github.com/stoke-cli/stoke/agents/llm"
)

func TestRuleMatches(t *testing.T) {
	t.Parallel()
	toolResultLast := conversation()
	toolResultLast.Messages = toolResultLast.Messages[:3] // ends with the tool_result turn

	tests := []struct {
		name string
		rule string // the keys of one YAML flow-style rule, without reply
		req  *llm.Request
		want bool
	}{
		{"no conditions", ``, conversation(), true},
		{"agent any", `agent: "*"`, conversation(), true},
		{"agent same", `agent: parent`, conversation(), true},
		{"agent other", `agent: general-purpose`, conversation(), false},
		{"step equal", `when: {step: 3}`, conversation(), true},
		{"step other", `when: {step: 2}`, conversation(), false},
		{"step of first call", `when: {step: 1}`, &llm.Request{Messages: []llm.Message{llm.UserText("hi")}}, true},
		{"last user contains", `when: {last_user_contains: second}`, conversation(), true},
		{"last user contains older text", `when: {last_user_contains: Remember}`, conversation(), false},
		{"last user contains tool result", `when: {last_user_contains: RESULT-1}`, toolResultLast, true},
		{"last user matches", `when: {last_user_matches: "^second q"}`, conversation(), true},
		{"last user matches not", `when: {last_user_matches: "NONCE"}`, conversation(), false},
		{"history contains user text", `when: {history_contains: NONCE-AAA111}`, conversation(), true},
		{"history contains assistant text", `when: {history_contains: NONCE-BBB222}`, conversation(), true},
		{"history contains system", `when: {history_contains: SYS-MARK}`, conversation(), true},
		{"history contains tool input", `when: {history_contains: a.txt"}`, conversation(), true},
		{"history contains tool result", `when: {history_contains: RESULT-1}`, conversation(), true},
		{"history contains absent", `when: {history_contains: absent}`, conversation(), false},
		{"history matches across messages", `when: {history_matches: "(?s)NONCE-AAA.*RESULT-1.*second"}`, conversation(), true},
		{"history matches not", `when: {history_matches: "NONCE-C+"}`, conversation(), false},
		{"last tool result contains", `when: {last_tool_result_contains: RESULT-1}`, conversation(), true},
		{"last tool result contains not", `when: {last_tool_result_contains: second}`, conversation(), false},
		{"last tool result matches", `when: {last_tool_result_matches: "RESULT-[0-9]$"}`, conversation(), true},
		{"last tool result none", `when: {last_tool_result_matches: "."}`, &llm.Request{Messages: []llm.Message{llm.UserText("hi")}}, false},
		{"system contains", `when: {system_contains: SYS-MARK}`, conversation(), true},
		{"system contains not", `when: {system_contains: NONCE}`, conversation(), false},
		{"system matches", `when: {system_matches: "^You are the parent"}`, conversation(), true},
		{"tools include", `when: {tools_include: task}`, conversation(), true},
		{"tools include not", `when: {tools_include: shell}`, conversation(), false},
		{"all conditions hold", `agent: parent, when: {step: 3, last_user_contains: second, tools_include: task}`, conversation(), true},
		{"one condition fails", `agent: parent, when: {step: 3, last_user_contains: Remember}`, conversation(), false},
		{"unless holds", `unless: {last_user_contains: second}`, conversation(), false},
		{"unless fails", `unless: {step: 1}`, conversation(), true},
		{"unless partly holds", `unless: {step: 3, tools_include: shell}`, conversation(), true},
		{"when and unless", `when: {step: 3}, unless: {history_contains: NONCE-BBB222}`, conversation(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			keys := "reply: {text: hit}"
			if tt.rule != "" {
				keys = tt.rule + ", " + keys
			}
			s := mustParse(t, "rules:\n  - {"+keys+"}\n")
			if got := s.rules[0].matches(newView(tt.req)); got != tt.want {
				t.Errorf("matches = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestStep(t *testing.T) {
	t.Parallel()
	if got := newView(conversation()).step; got != 3 {
		t.Errorf("step = %d, want 3 (1 + two assistant messages)", got)
	}
}
