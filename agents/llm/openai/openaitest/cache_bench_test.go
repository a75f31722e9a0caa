package openaitest_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/llmtest"
	"github.com/stoke-cli/stoke/agents/llm/openai"
	"github.com/stoke-cli/stoke/agents/llm/openai/openaitest"
)

// cacheSaving runs one hot agent for turns turns through the openai provider against a
// mock with OpenAI's prompt caching (1024-token minimum). Each turn appends a user
// message, sends the whole history, and appends the reply. It returns the uncached
// input tokens the hot agent paid for (prompt - cached, summed over the requests) and
// the prompt tokens the same requests cost with no cache at all (a cold restart that
// re-sends everything uncached).
func cacheSaving(tb testing.TB, turns int) (hot, cold int64) {
	tb.Helper()
	srv := openaitest.New(llmtest.EndTurn(strings.Repeat("Done: the change is in and the tests pass. ", 5)),
		openaitest.WithAPIKey("sk-test"), openaitest.WithPrefixCache(1024))
	tb.Cleanup(srv.Close)
	m, err := openai.New(openai.Config{APIKey: "sk-test", BaseURL: srv.URL(), Model: "gpt-test", MaxRetries: 0, HTTPClient: srv.Client()})
	if err != nil {
		tb.Fatalf("openai.New: %v", err)
	}
	req := llm.Request{
		Agent:  "general-purpose",
		System: strings.Repeat("You are a careful engineer working in a CI pipeline. ", 80),
		Tools:  llmtest.AgentTools(),
	}
	for i := range turns {
		req.Messages = append(req.Messages, llm.UserText(fmt.Sprintf("turn %d: <task-notification>%s</task-notification>", i+1, strings.Repeat("finding ", 100))))
		ans, err := llmtest.ReadAnswer(m.Generate(tb.Context(), &req))
		if err != nil {
			tb.Fatalf("turn %d: Generate: %v", i+1, err)
		}
		u := ans.Done.Usage
		if i > 0 && u.CacheReadInputTokens == 0 {
			tb.Errorf("turn %d: nothing read from the cache (usage %+v)", i+1, u)
		}
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock(ans.Text)}})
		hot += u.InputTokens                           // prompt - cached
		cold += u.InputTokens + u.CacheReadInputTokens // the whole prompt
	}
	if n := len(srv.Requests()); n != turns {
		tb.Errorf("server saw %d requests, want %d", n, turns)
	}
	return hot, cold
}

func TestCacheSaving30Turns(t *testing.T) {
	t.Parallel()
	hot, cold := cacheSaving(t, 30)
	t.Logf("30 turns: hot agent sent %d uncached input tokens, a cold one without cache %d (%.1fx)", hot, cold, float64(cold)/float64(hot))
	if hot*5 > cold {
		t.Errorf("hot agent sent %d uncached tokens, want at most a fifth of the cold %d", hot, cold)
	}
}

func BenchmarkCacheSaving30Turns(b *testing.B) {
	var hot, cold int64
	for b.Loop() {
		hot, cold = cacheSaving(b, 30)
	}
	b.ReportMetric(float64(hot), "hot-uncached-tokens")
	b.ReportMetric(float64(cold), "cold-tokens")
	b.ReportMetric(float64(cold)/float64(hot), "cold/hot")
}
