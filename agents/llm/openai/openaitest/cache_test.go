package openaitest

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/llmtest"
)

// Raw prompt pieces, so that the test knows the exact bytes the server sees.
var (
	cacheTools = `[{"type":"function","function":{"name":"read_file","description":"` + strings.Repeat("Reads a file. ", 20) +
		`","parameters":{"type":"object","properties":{"file_path":{"type":"string"}}}}}]`
	cacheSys = msg("system", strings.Repeat("You are stoke. ", 140))
	cacheU1  = msg("user", strings.Repeat("first question ", 60))
	cacheA1  = msg("assistant", strings.Repeat("first answer ", 30))
	cacheU2  = msg("user", strings.Repeat("second question ", 60))
	cacheA2  = msg("assistant", strings.Repeat("second answer ", 30))
	cacheU3  = msg("user", strings.Repeat("third question ", 60))
)

func msg(role, content string) string {
	return `{"role":"` + role + `","content":"` + content + `"}`
}

// cacheBody is a request body with the given model, tools (raw JSON, "" for none) and
// messages (raw JSON each).
func cacheBody(model, tools string, stream bool, msgs ...string) string {
	b := `{"model":"` + model + `","messages":[` + strings.Join(msgs, ",") + `]`
	if tools != "" {
		b += `,"tools":` + tools
	}
	if stream {
		b += `,"stream":true,"stream_options":{"include_usage":true}`
	}
	return b + "}"
}

// promptOf is the token estimate of a prompt: tools and messages, at bytes/4.
func promptOf(tools string, msgs ...string) int64 {
	n := len(tools)
	for _, m := range msgs {
		n += len(m)
	}
	return int64(n / 4)
}

// cachedOf is what a hit on that prompt as a prefix reports: rounded down to 128.
func cachedOf(tools string, msgs ...string) int64 {
	p := promptOf(tools, msgs...)
	return p - p%128
}

func completionUsage(t *testing.T, s *Server, body string) usage {
	t.Helper()
	resp := post(t, s, body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	var c completion
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		t.Fatal(err)
	}
	return c.Usage
}

func TestPrefixCache(t *testing.T) {
	t.Parallel()
	m := &llmtest.Backend{Events: []llm.Event{llmtest.Text("ok"), done(llm.StopEndTurn, llm.Usage{InputTokens: 99999, CacheReadInputTokens: 5, OutputTokens: 2})}}
	s := New(m, WithPrefixCache(256))
	defer s.Close()

	changedSys := msg("system", "You are Stoke. "+strings.Repeat("You are stoke. ", 139))
	short := msg("user", strings.Repeat("hi ", 100))
	reordered := `{"content":"` + strings.Repeat("You are stoke. ", 140) + `","role":"system"}`
	steps := []struct {
		name   string
		model  string
		tools  string
		msgs   []string
		cached int64
	}{
		{"first request", "gpt-test", cacheTools, []string{cacheSys, cacheU1}, 0},
		{"extends the first", "gpt-test", cacheTools, []string{cacheSys, cacheU1, cacheA1, cacheU2},
			cachedOf(cacheTools, cacheSys, cacheU1)},
		{"extends the second", "gpt-test", cacheTools, []string{cacheSys, cacheU1, cacheA1, cacheU2, cacheA2, cacheU3},
			cachedOf(cacheTools, cacheSys, cacheU1, cacheA1, cacheU2)},
		{"branches after the first answer", "gpt-test", cacheTools, []string{cacheSys, cacheU1, cacheA1, cacheU3},
			cachedOf(cacheTools, cacheSys, cacheU1, cacheA1)},
		{"repeats itself", "gpt-test", cacheTools, []string{cacheSys, cacheU1, cacheA1, cacheU3},
			cachedOf(cacheTools, cacheSys, cacheU1, cacheA1, cacheU3)},
		{"changed system message", "gpt-test", cacheTools, []string{changedSys, cacheU1, cacheA1, cacheU2}, 0},
		{"same system message, other bytes", "gpt-test", cacheTools, []string{reordered, cacheU1, cacheA1, cacheU2}, 0},
		{"changed tools", "gpt-test", `[]`, []string{cacheSys, cacheU1, cacheA1, cacheU2}, 0},
		{"no tools", "gpt-test", "", []string{cacheSys, cacheU1}, 0},
		{"other model", "gpt-other", cacheTools, []string{cacheSys, cacheU1, cacheA1, cacheU2}, 0},
		{"short prompt", "gpt-test", cacheTools, []string{short}, 0},
		{"short hit, below the minimum", "gpt-test", cacheTools, []string{short, msg("assistant", "hello")}, 0},
	}
	for _, st := range steps {
		got := completionUsage(t, s, cacheBody(st.model, st.tools, false, st.msgs...))
		prompt := promptOf(st.tools, st.msgs...)
		want := usage{PromptTokens: prompt, CompletionTokens: 2, TotalTokens: prompt + 2,
			PromptTokensDetails: &promptDetail{CachedTokens: st.cached}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: usage (-want +got):\n%s", st.name, diff)
		}
	}
	// The hits are worth checking: at or above the minimum, and distinct; the short
	// prefix would be a hit without the minimum.
	hits := []int64{cachedOf(cacheTools, cacheSys, cacheU1), cachedOf(cacheTools, cacheSys, cacheU1, cacheA1),
		cachedOf(cacheTools, cacheSys, cacheU1, cacheA1, cacheU2)}
	if hits[0] < 256 || hits[0] >= hits[1] || hits[1] >= hits[2] {
		t.Errorf("test prompts do not give distinct hits of 256 tokens or more: %v", hits)
	}
	if c := cachedOf(cacheTools, short); c != 128 {
		t.Errorf("the short prefix rounds to %d cached tokens, want 128 (below the minimum of 256)", c)
	}
}

func TestPrefixCacheStream(t *testing.T) {
	t.Parallel()
	m := &llmtest.Backend{Events: []llm.Event{llmtest.Text("ok"), done(llm.StopEndTurn, llm.Usage{InputTokens: 3, OutputTokens: 1})}}
	s := New(m, WithPrefixCache(1024))
	defer s.Close()

	long := msg("user", strings.Repeat("x", 8000)) // about 2000 tokens
	first := readSSE(t, post(t, s, cacheBody("gpt-test", "", true, long)))
	second := readSSE(t, post(t, s, cacheBody("gpt-test", "", true, long, cacheA1, cacheU2)))
	for i, tt := range []struct {
		got  sse
		want usage
	}{
		{first, usage{PromptTokens: promptOf("", long), CompletionTokens: 1, TotalTokens: promptOf("", long) + 1,
			PromptTokensDetails: &promptDetail{}}},
		{second, usage{PromptTokens: promptOf("", long, cacheA1, cacheU2), CompletionTokens: 1,
			TotalTokens:         promptOf("", long, cacheA1, cacheU2) + 1,
			PromptTokensDetails: &promptDetail{CachedTokens: cachedOf("", long)}}},
	} {
		if !tt.got.done || len(tt.got.chunks) == 0 {
			t.Fatalf("request %d: stream %+v", i+1, tt.got)
		}
		if diff := cmp.Diff(&tt.want, tt.got.chunks[len(tt.got.chunks)-1].Usage); diff != "" {
			t.Errorf("request %d: usage (-want +got):\n%s", i+1, diff)
		}
	}
	if c := cachedOf("", long); c < 1024 {
		t.Fatalf("test prompt too small: %d cached tokens", c)
	}
}

func TestPrefixCacheIgnoresRejectedRequests(t *testing.T) {
	t.Parallel()
	m := &llmtest.Backend{Events: []llm.Event{llmtest.Text("ok"), done(llm.StopEndTurn, llm.Usage{})}}
	s := New(m, WithPrefixCache(0))
	defer s.Close()

	// A dangling tool call: the API rejects it, so nothing of it is cached.
	bad := cacheBody("gpt-test", "", false, cacheSys,
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}`)
	readError(t, post(t, s, bad), http.StatusBadRequest)
	if got := completionUsage(t, s, cacheBody("gpt-test", "", false, cacheSys, cacheU1)); got.PromptTokensDetails.CachedTokens != 0 {
		t.Errorf("cached %d tokens after a rejected request, want 0", got.PromptTokensDetails.CachedTokens)
	}
}

func TestPrefixCacheOptionOrder(t *testing.T) {
	t.Parallel()
	m := &llmtest.Backend{Events: []llm.Event{llmtest.Text("ok"), done(llm.StopEndTurn, llm.Usage{InputTokens: 2000, OutputTokens: 1})}}
	body := cacheBody("gpt-test", "", false, cacheSys, cacheU1)
	tests := []struct {
		name   string
		opts   []Option
		cached int64 // of the second identical request
	}{
		{"fixed, then prefix cache", []Option{WithCachedTokens(7), WithPrefixCache(0)}, cachedOf("", cacheSys, cacheU1)},
		{"prefix cache, then fixed", []Option{WithPrefixCache(0), WithCachedTokens(7)}, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := New(m, tt.opts...)
			defer s.Close()
			completionUsage(t, s, body)
			if got := completionUsage(t, s, body).PromptTokensDetails.CachedTokens; got != tt.cached {
				t.Errorf("cached %d, want %d", got, tt.cached)
			}
		})
	}
}
