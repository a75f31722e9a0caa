package anthropictest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/llmtest"
)

// prompt describes a request body compactly. Every string is one block (a tool name,
// a system text block, a message text block); a trailing "*" marks it with
// cache_control. Messages alternate user, assistant, user, ...
type prompt struct {
	model  string
	tools  []string
	system []string
	msgs   [][]string
}

func marked(s string) (string, obj) {
	if name, ok := strings.CutSuffix(s, "*"); ok {
		return name, obj{"type": "ephemeral"}
	}
	return s, nil
}

func (p prompt) body() []byte {
	b := obj{"model": p.model, "max_tokens": 10}
	if b["model"] == "" {
		b["model"] = "claude-test"
	}
	var tools []any
	for _, t := range p.tools {
		name, cc := marked(t)
		tool := obj{"name": name, "description": "the " + name + " tool", "input_schema": obj{"type": "object"}}
		if cc != nil {
			tool["cache_control"] = cc
		}
		tools = append(tools, tool)
	}
	if tools != nil {
		b["tools"] = tools
	}
	textBlocks := func(texts []string) []any {
		var out []any
		for _, s := range texts {
			text, cc := marked(s)
			block := obj{"type": "text", "text": text}
			if cc != nil {
				block["cache_control"] = cc
			}
			out = append(out, block)
		}
		return out
	}
	if p.system != nil {
		b["system"] = textBlocks(p.system)
	}
	var msgs []any
	for i, m := range p.msgs {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		msgs = append(msgs, obj{"role": role, "content": textBlocks(m)})
	}
	b["messages"] = msgs
	out, err := json.Marshal(b)
	if err != nil {
		panic(err)
	}
	return out
}

// promptTokens counts, independently of the server, the tokens of a body's prompt:
// the bytes of every tool, system block and message block without cache_control, / 4.
func promptTokens(t *testing.T, body []byte) int64 {
	t.Helper()
	var n int
	count := func(r gjson.Result) {
		raw := r.Raw
		if r.Get("cache_control").Exists() {
			var err error
			if raw, err = sjson.Delete(raw, "cache_control"); err != nil {
				t.Fatal(err)
			}
		}
		n += len(raw)
	}
	gjson.GetBytes(body, "tools").ForEach(func(_, v gjson.Result) bool { count(v); return true })
	gjson.GetBytes(body, "system").ForEach(func(_, v gjson.Result) bool { count(v); return true })
	gjson.GetBytes(body, "messages").ForEach(func(_, m gjson.Result) bool {
		m.Get("content").ForEach(func(_, v gjson.Result) bool { count(v); return true })
		return true
	})
	return int64(n) / 4
}

// prefixTokens counts the tokens of p's tools and system only.
func prefixTokens(t *testing.T, p prompt) int64 {
	t.Helper()
	p.msgs = nil
	return promptTokens(t, p.body())
}

func usageOf(t *testing.T, resp *http.Response) llm.Usage {
	t.Helper()
	if resp.StatusCode != http.StatusOK {
		readError(t, resp, http.StatusOK)
	}
	var msg struct{ Usage llm.Usage }
	if err := json.NewDecoder(resp.Body).Decode(&msg); err != nil {
		t.Fatal(err)
	}
	msg.Usage.OutputTokens = 0
	return msg.Usage
}

// extend returns p with more messages.
func extend(p prompt, msgs ...[]string) prompt {
	p.msgs = append(append([][]string(nil), p.msgs...), msgs...)
	return p
}

// strip removes every breakpoint mark from the messages of p.
func strip(p prompt) prompt {
	msgs := make([][]string, len(p.msgs))
	for i, m := range p.msgs {
		for _, s := range m {
			msgs[i] = append(msgs[i], strings.TrimSuffix(s, "*"))
		}
	}
	p.msgs = msgs
	return p
}

func TestPromptCache(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 400)
	base := prompt{
		tools:  []string{"read_file", "glob", "shell*"},
		system: []string{"You are stoke. " + long + "*"},
		msgs:   [][]string{{"first question " + long + "*"}},
	}
	turn2 := extend(strip(base), []string{"an answer " + long}, []string{"second question*"})
	many := make([]string, lookback+5)
	for i := range many {
		many[i] = fmt.Sprintf("result %d", i)
	}
	many[len(many)-1] += "*"

	type call struct {
		p    prompt
		want func(t *testing.T) llm.Usage
	}
	written := func(p prompt) func(*testing.T) llm.Usage { // nothing read, all written
		return func(t *testing.T) llm.Usage {
			return llm.Usage{CacheCreationInputTokens: promptTokens(t, p.body())}
		}
	}
	readUpTo := func(p prompt, read func(*testing.T) int64) func(*testing.T) llm.Usage {
		return func(t *testing.T) llm.Usage {
			total, r := promptTokens(t, p.body()), read(t)
			return llm.Usage{CacheReadInputTokens: r, CacheCreationInputTokens: total - r}
		}
	}
	all := func(p prompt) func(*testing.T) int64 {
		return func(t *testing.T) int64 { return promptTokens(t, p.body()) }
	}
	toolsAndSystem := func(p prompt) func(*testing.T) int64 { return func(t *testing.T) int64 { return prefixTokens(t, p) } }

	changedTool := base
	changedTool.tools = []string{"read_file", "glob", "bash*"}
	changedSystem := base
	changedSystem.system = []string{"You are someone else.*"}
	otherModel := base
	otherModel.model = "claude-other"
	changedEarly := turn2
	changedEarly.msgs = append([][]string{{"first  question " + long}}, turn2.msgs[1:]...) // one extra space
	lookedBack := extend(strip(base), []string{"calling"}, many)
	anchored := extend(base, []string{"calling"}, many) // base's breakpoint kept where it was

	tests := []struct {
		name  string
		opts  []Option
		calls []call
	}{
		{"the same prompt twice", nil, []call{
			{base, written(base)},
			{base, readUpTo(base, all(base))},
		}},
		{"a continued agent reads its previous prompt", nil, []call{
			{base, written(base)},
			{turn2, readUpTo(turn2, all(base))},
		}},
		{"no breakpoints neither read nor write", nil, []call{
			{prompt{msgs: [][]string{{"hello " + long}}}, func(t *testing.T) llm.Usage {
				return llm.Usage{InputTokens: promptTokens(t, prompt{msgs: [][]string{{"hello " + long}}}.body())}
			}},
			{prompt{msgs: [][]string{{"hello " + long + "*"}}}, written(prompt{msgs: [][]string{{"hello " + long + "*"}}})},
		}},
		{"the cache is per model", nil, []call{
			{base, written(base)},
			{otherModel, written(otherModel)},
		}},
		{"a changed tool invalidates everything", nil, []call{
			{base, written(base)},
			{changedTool, written(changedTool)},
		}},
		{"a changed system prompt keeps the tools entry", nil, []call{
			{base, written(base)},
			{changedSystem, readUpTo(changedSystem, func(t *testing.T) int64 {
				p := changedSystem
				p.system = nil
				return prefixTokens(t, p)
			})},
		}},
		{"one changed byte falls back to the system entry", nil, []call{
			{base, written(base)},
			{changedEarly, readUpTo(changedEarly, toolsAndSystem(base))},
		}},
		{"an entry more than 20 blocks back is not found", nil, []call{
			{base, written(base)},
			{lookedBack, readUpTo(lookedBack, toolsAndSystem(base))},
		}},
		{"a breakpoint on the old end finds it", nil, []call{
			{base, written(base)},
			{anchored, readUpTo(anchored, all(base))},
		}},
		{"prefixes under the minimum are not written", []Option{WithMinCacheTokens(1 << 20)}, []call{
			{base, func(t *testing.T) llm.Usage { return llm.Usage{InputTokens: promptTokens(t, base.body())} }},
			{base, func(t *testing.T) llm.Usage { return llm.Usage{InputTokens: promptTokens(t, base.body())} }},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := New(&llmtest.Backend{Events: []llm.Event{done(llm.StopEndTurn, llm.Usage{InputTokens: 12345, OutputTokens: 1})}}, tt.opts...)
			defer s.Close()
			for i, c := range tt.calls {
				got := usageOf(t, post(t, s, c.p.body()))
				if diff := cmp.Diff(c.want(t), got); diff != "" {
					t.Errorf("call %d usage (-want +got):\n%s", i+1, diff)
				}
			}
		})
	}
}

func TestPromptCacheStreamedUsage(t *testing.T) {
	t.Parallel()
	s := New(&llmtest.Backend{Events: []llm.Event{llmtest.Text("ok"), done(llm.StopEndTurn, llm.Usage{OutputTokens: 3})}})
	defer s.Close()
	p := prompt{system: []string{strings.Repeat("s", 400) + "*"}, msgs: [][]string{{"q*"}}}
	body, err := sjson.SetBytes(p.body(), "stream", true)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		events, err := readSSE(t, post(t, s, body))
		if err != nil {
			t.Fatal(err)
		}
		u := events[0].data.Get("message.usage")
		read, write := u.Get("cache_read_input_tokens").Int(), u.Get("cache_creation_input_tokens").Int()
		total := promptTokens(t, p.body())
		if (i == 0 && (read != 0 || write != total)) || (i == 1 && (read != total || write != 0)) {
			t.Errorf("call %d: message_start usage %s, prompt of %d tokens", i+1, u.Raw, total)
		}
	}
}
