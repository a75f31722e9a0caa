package store

import (
	"fmt"
	"strings"

	"github.com/stoke-cli/stoke/agents/llm"
)

// interruptedResult is the content of the result that closes a tool call that never got
// one (a turn cut by a crash, or a record lost to a corrupt line).
const interruptedResult = "interrupted: the tool call did not finish"

// Repairs counts what Repair changed in a chat.
type Repairs struct {
	// Leading: assistant messages dropped because they came before the first user message.
	Leading int
	// Orphans: tool results dropped because they answered no tool call of the message
	// right before them (or answered one twice).
	Orphans int
	// Closed: tool calls that had no result, closed with an error result.
	Closed int
}

// Damaged reports whether the chat had records missing or out of place: more than a turn
// cut short (which only leaves tool calls to close).
func (r Repairs) Damaged() bool { return r.Leading > 0 || r.Orphans > 0 }

func (r Repairs) String() string {
	var parts []string
	if r.Leading > 0 {
		parts = append(parts, fmt.Sprintf("dropped %d assistant message(s) before the first user message", r.Leading))
	}
	if r.Orphans > 0 {
		parts = append(parts, fmt.Sprintf("dropped %d tool result(s) that answered no tool call", r.Orphans))
	}
	if r.Closed > 0 {
		parts = append(parts, fmt.Sprintf("closed %d tool call(s) that had no result", r.Closed))
	}
	if len(parts) == 0 {
		return "nothing to repair"
	}
	return strings.Join(parts, "; ")
}

// Repair returns the chat msgs in a shape every provider accepts, whatever records were
// lost (a corrupt line skipped, a turn cut by a crash or a cancel): it starts with a user
// message, roles alternate, every tool call is answered by exactly one result in the next
// message (a missing one is closed with an error result), no result answers a call that
// is not in the message right before it, and results come first in their message. A chat
// that is already in shape comes back unchanged. msgs is not modified.
func Repair(msgs []llm.Message) ([]llm.Message, Repairs) {
	var rep Repairs
	out := make([]llm.Message, 0, len(msgs)+1)
	for _, m := range msgs {
		switch m.Role {
		case llm.RoleAssistant:
			if len(out) == 0 {
				rep.Leading++
				continue
			}
			if closing, n := answer(openUses(out), llm.Message{Role: llm.RoleUser}, &rep); n > 0 {
				out = append(out, closing) // an assistant message whose calls were never answered
			}
			out = AppendMessage(out, m)
		case llm.RoleUser:
			m, _ = answer(openUses(out), m, &rep)
			if len(m.Content) == 0 {
				continue
			}
			out = AppendMessage(out, m)
		}
	}
	if closing, n := answer(openUses(out), llm.Message{Role: llm.RoleUser}, &rep); n > 0 {
		out = append(out, closing)
	}
	return out, rep
}

// openUses returns the tool calls the next message must answer: those of the last message
// when it is the assistant's.
func openUses(out []llm.Message) []llm.Block {
	if n := len(out); n > 0 && out[n-1].Role == llm.RoleAssistant {
		return out[n-1].ToolUses()
	}
	return nil
}

// answer returns user message m with exactly one result for each call of uses, first and
// in call order (a missing one closed), then m's other blocks; results that answer none
// of uses are dropped. n is the number of results the message holds.
func answer(uses []llm.Block, m llm.Message, rep *Repairs) (_ llm.Message, n int) {
	if answered(uses, m) {
		return m, len(uses) // already so: revival repairs thousands of messages that are
	}
	want := make(map[string]bool, len(uses))
	for _, u := range uses {
		want[u.ID] = true
	}
	got := make(map[string]llm.Block, len(uses))
	var rest []llm.Block
	for _, b := range m.Content {
		if b.Type != llm.BlockToolResult {
			rest = append(rest, b)
			continue
		}
		if _, dup := got[b.ToolUseID]; !want[b.ToolUseID] || dup {
			rep.Orphans++
			continue
		}
		got[b.ToolUseID] = b
	}
	content := make([]llm.Block, 0, len(uses)+len(rest))
	for _, u := range uses {
		b, ok := got[u.ID]
		if !ok {
			rep.Closed++
			b = llm.Block{Type: llm.BlockToolResult, ToolUseID: u.ID, Content: interruptedResult, IsError: true}
		}
		content = append(content, b)
	}
	content = append(content, rest...)
	return llm.Message{Role: llm.RoleUser, Content: content}, len(uses)
}

// answered reports whether user message m is what answer would make of it: one result
// for each call of uses (whose ids are distinct), first and in call order, and no other
// result.
func answered(uses []llm.Block, m llm.Message) bool {
	if len(m.Content) < len(uses) {
		return false
	}
	for i, u := range uses {
		if b := m.Content[i]; b.Type != llm.BlockToolResult || b.ToolUseID != u.ID {
			return false
		}
		for _, v := range uses[:i] {
			if v.ID == u.ID {
				return false
			}
		}
	}
	for _, b := range m.Content[len(uses):] {
		if b.Type == llm.BlockToolResult {
			return false
		}
	}
	return true
}
