package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/anthropic/anthropictest"
	"github.com/stoke-cli/stoke/agents/llm/llmtest"
	"github.com/stoke-cli/stoke/agents/llm/scripted"
)

// agent is a hot agent as the runtime keeps one: one history that every call extends.
type agent struct {
	m       *Model
	req     llm.Request
	results func(call llm.Block) string // answers a tool call
	usages  []llm.Usage                 // one per model call
	replies []string                    // the final text of each turn
}

// turn sends one user message and runs tool rounds until the model ends its turn.
func (a *agent) turn(tb testing.TB, user string) {
	tb.Helper()
	a.req.Messages = append(a.req.Messages, llm.UserText(user))
	for range 10 {
		ans, err := llmtest.ReadAnswer(a.m.Generate(tb.Context(), &a.req))
		if err != nil {
			tb.Fatalf("Generate: %v", err)
		}
		a.usages = append(a.usages, ans.Done.Usage)
		msg := llm.Message{Role: llm.RoleAssistant, Content: ans.Calls}
		if ans.Text != "" {
			msg.Content = append([]llm.Block{llm.TextBlock(ans.Text)}, msg.Content...)
		}
		a.req.Messages = append(a.req.Messages, msg)
		calls := msg.ToolUses()
		if len(calls) == 0 {
			a.replies = append(a.replies, ans.Text)
			return
		}
		results := llm.Message{Role: llm.RoleUser}
		for _, c := range calls {
			results.Content = append(results.Content, llm.Block{Type: llm.BlockToolResult, ToolUseID: c.ID, Content: a.results(c)})
		}
		a.req.Messages = append(a.req.Messages, results)
	}
	tb.Fatalf("the turn did not end after 10 model calls")
}

// newAgent starts an anthropictest server answering from the scenario src and returns
// a hot agent talking to it through the provider.
func newAgent(tb testing.TB, src string, req llm.Request, results func(llm.Block) string) (*agent, *anthropictest.Server) {
	tb.Helper()
	srv := anthropictest.New(scripted.New(mustScenario(tb, src)), anthropictest.WithAPIKey(testKey))
	tb.Cleanup(srv.Close)
	m, err := New(Config{APIKey: testKey, BaseURL: srv.URL(), Model: "claude-test", MaxRetries: 0, HTTPClient: srv.Client()})
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	return &agent{m: m, req: req, results: results}, srv
}

const explorerScenario = `
rules:
  - agent: explorer
    when: {last_user_contains: "What was the nonce"}
    reply: {text: "{{ match ` + "`NONCE-[A-Z0-9]+`" + ` }}"}
  - agent: explorer
    when: {step: 1}
    reply:
      tool_calls:
        - name: read_file
          input: {file_path: notes.txt}
  - agent: explorer
    reply: {text: "Stored."}
`

func TestPromptCacheHotAgent(t *testing.T) {
	t.Parallel()
	a, srv := newAgent(t, explorerScenario, llm.Request{
		Agent:  "explorer",
		System: "You are a subagent.\nAgent type: explorer.\n" + strings.Repeat("Follow the house rules. ", 100),
		Tools:  llmtest.AgentTools(),
	}, func(llm.Block) string { return strings.Repeat("notes line\n", 200) })

	a.turn(t, "Remember NONCE-7F3A9 and read notes.txt") // turn 1: two calls (a tool round)
	a.turn(t, "What was the nonce?")                     // turn 2: a send_message continuation
	if got := a.replies[1]; got != "NONCE-7F3A9" {
		t.Errorf("turn 2 answered %q, want the nonce from turn 1's history", got)
	}
	if len(a.usages) != 3 {
		t.Fatalf("%d model calls, want 3", len(a.usages))
	}
	total := func(u llm.Usage) int64 { return u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens }
	u1, u2, u3 := a.usages[0], a.usages[1], a.usages[2]
	if u1.CacheReadInputTokens != 0 || u1.CacheCreationInputTokens != total(u1) {
		t.Errorf("call 1 usage = %+v, want the whole prompt written to the cache", u1)
	}
	if u2.CacheReadInputTokens != total(u1) {
		t.Errorf("call 2 read %d cached tokens, want all %d of call 1's prompt", u2.CacheReadInputTokens, total(u1))
	}
	// Turn 2 reads everything turn 1 sent, and pays only for what it adds.
	if u3.CacheReadInputTokens == 0 || u3.CacheReadInputTokens != total(u2) {
		t.Errorf("turn 2 read %d cached tokens, want all %d of turn 1's last prompt", u3.CacheReadInputTokens, total(u2))
	}
	if added := u3.InputTokens + u3.CacheCreationInputTokens; added != total(u3)-total(u2) || added <= 0 {
		t.Errorf("turn 2 paid for %d uncached tokens, want its %d new ones", added, total(u3)-total(u2))
	}

	// The bytes on the wire: each request repeats the one before it, cache_control aside.
	reqs := srv.Requests()
	for n := 0; n+1 < len(reqs); n++ {
		a, b := string(reqs[n]), string(reqs[n+1])
		for _, key := range []string{"tools", "system"} {
			if gjson.Get(a, key).Raw != gjson.Get(b, key).Raw {
				t.Errorf("request %d→%d: %s changed", n, n+1, key)
			}
		}
		ma, mb := gjson.Get(a, "messages").Array(), gjson.Get(b, "messages").Array()
		for i := range ma {
			if withoutCacheControl(t, ma[i].Raw) != withoutCacheControl(t, mb[i].Raw) {
				t.Errorf("request %d→%d: message %d differs beyond cache_control:\n%s\n%s", n, n+1, i, ma[i].Raw, mb[i].Raw)
			}
		}
	}
}

// TestPromptCacheLongToolRound shows what breakpoint 4 is for: a tool round that adds
// more blocks than the API looks back from a breakpoint still reads the previous call's
// entry, because breakpoint 4 sits exactly where that call's last breakpoint was.
func TestPromptCacheLongToolRound(t *testing.T) {
	t.Parallel()
	const calls = 25
	var yaml strings.Builder
	yaml.WriteString("rules:\n  - when: {step: 1}\n    reply:\n      tool_calls:\n")
	for i := range calls {
		fmt.Fprintf(&yaml, "        - {name: read_file, input: {file_path: f%d.txt}}\n", i)
	}
	yaml.WriteString("  - reply: {text: done}\n")
	a, srv := newAgent(t, yaml.String(), llm.Request{System: "s", Tools: llmtest.AgentTools()},
		func(c llm.Block) string { return "contents of " + string(c.Input) })
	a.turn(t, "read them all")
	total1 := a.usages[0].InputTokens + a.usages[0].CacheCreationInputTokens + a.usages[0].CacheReadInputTokens
	if got := a.usages[1].CacheReadInputTokens; got != total1 {
		t.Errorf("after %d tool results the call read %d cached tokens, want all %d of the previous prompt", calls, got, total1)
	}

	// The same request without breakpoint 4, to a server that has seen the first one,
	// falls back to the tools+system entry.
	reqs := srv.Requests()
	first, second := reqs[0], reqs[1]
	second, err := sjson.DeleteBytes(second, "messages.0.content.0.cache_control")
	if err != nil {
		t.Fatal(err)
	}
	other := anthropictest.New(scripted.New(mustScenario(t, "rules:\n  - reply: {text: ok}\n")))
	defer other.Close()
	post(t, other, first)
	if got := post(t, other, second).CacheReadInputTokens; got >= total1 {
		t.Errorf("without breakpoint 4 the call read %d cached tokens, want less than %d", got, total1)
	}
}

func mustScenario(tb testing.TB, src string) *scripted.Scenario {
	tb.Helper()
	s, err := scripted.Parse("inline.yaml", []byte(src))
	if err != nil {
		tb.Fatalf("scripted.Parse: %v", err)
	}
	return s
}

// post sends a raw body, made non-streaming, and returns the usage of the answer.
func post(t *testing.T, srv *anthropictest.Server, body []byte) llm.Usage {
	t.Helper()
	body, err := sjson.SetBytes(body, "stream", false)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL()+"/v1/messages", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("POST: %d %s %v", resp.StatusCode, out, err)
	}
	var msg struct{ Usage llm.Usage }
	if err := json.Unmarshal(out, &msg); err != nil {
		t.Fatal(err)
	}
	return msg.Usage
}

const savingScenario = `
rules:
  - when: {last_user_matches: "^turn [0-9]+"}
    reply:
      text: "Let me look."
      tool_calls:
        - name: read_file
          input: {file_path: "file-{{ step }}.go"}
  - reply: {text: "Turn handled at step {{ step }}: the file says what was asked."}
`

// cacheSaving runs a hot agent for turns turns (each a tool round) against the
// simulated cache and returns the uncached input tokens it sent (input plus cache
// writes) and the input tokens a cold agent without caching would send for the same
// calls (all of it).
func cacheSaving(tb testing.TB, turns int) (hot, cold int64) {
	tb.Helper()
	a, _ := newAgent(tb, savingScenario, llm.Request{
		Agent:  "general-purpose",
		System: strings.Repeat("You are a careful engineer working in a CI pipeline. ", 80),
		Tools:  llmtest.AgentTools(),
	}, func(c llm.Block) string {
		return "package main\n" + strings.Repeat("// a line of "+string(c.Input)+"\n", 40)
	})
	for i := range turns {
		a.turn(tb, fmt.Sprintf("turn %d: <task-notification>%s</task-notification>", i+1, strings.Repeat("finding ", 100)))
	}
	for _, u := range a.usages {
		hot += u.InputTokens + u.CacheCreationInputTokens
		cold += u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
	}
	return hot, cold
}

func TestCacheSaving30Turns(t *testing.T) {
	t.Parallel()
	hot, cold := cacheSaving(t, 30)
	t.Logf("30 turns: hot agent sent %d uncached input tokens, a cold one without cache %d (%.1fx)", hot, cold, float64(cold)/float64(hot))
	if hot*10 > cold {
		t.Errorf("hot agent sent %d uncached tokens, want less than a tenth of the cold %d", hot, cold)
	}
}

func BenchmarkCacheSaving30Turns(b *testing.B) {
	var hot, cold int64
	for b.Loop() {
		hot, cold = cacheSaving(b, 30)
	}
	b.ReportMetric(float64(hot), "hot-uncached-tokens/op")
	b.ReportMetric(float64(cold), "cold-input-tokens/op")
	b.ReportMetric(100*(1-float64(hot)/float64(cold)), "saved-%")
}
