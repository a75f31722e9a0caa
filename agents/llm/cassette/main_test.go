package cassette

import (
	"context"
	"iter"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/llmtest"
	"github.com/stoke-cli/stoke/agents/llm/scripted"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// answer is one finished model call.
type answer struct {
	text  string
	calls []llm.Block
	done  llm.Event
	err   error
}

// call runs one model call to its end.
func call(ctx context.Context, m llm.Model, req *llm.Request) answer {
	evs, err := llmtest.Collect(ctx, m, req)
	var a answer
	for _, ev := range evs {
		switch ev.Kind {
		case llm.EventTextDelta:
			a.text += ev.Text
		case llm.EventToolCall:
			a.calls = append(a.calls, ev.ToolCall)
		case llm.EventDone:
			a.done = ev
		}
	}
	a.err = err
	return a
}

// message is the assistant message the runtime keeps for a.
func (a answer) message() llm.Message {
	m := llm.Message{Role: llm.RoleAssistant}
	if a.text != "" {
		m.Content = append(m.Content, llm.TextBlock(a.text))
	}
	m.Content = append(m.Content, a.calls...)
	return m
}

// conv is one agent's conversation, grown the way the runtime grows it.
type conv struct {
	ctx context.Context
	req llm.Request
}

func newConv(ctx context.Context, agent, system string, tools ...string) *conv {
	c := &conv{ctx: ctx, req: llm.Request{Agent: agent, Model: "m1", System: system}}
	for _, t := range tools {
		c.req.Tools = append(c.req.Tools, llm.ToolSpec{Name: t, Description: t + " tool", Parameters: []byte(`{"type":"object"}`)})
	}
	return c
}

// send appends msg and makes one call; a successful answer joins the history.
func (c *conv) send(m llm.Model, msg llm.Message) answer {
	c.req.Messages = append(c.req.Messages, msg)
	a := call(c.ctx, m, &c.req)
	if a.err == nil {
		c.req.Messages = append(c.req.Messages, a.message())
	}
	return a
}

// results answers every tool call of a with content.
func results(a answer, content string) llm.Message {
	m := llm.Message{Role: llm.RoleUser}
	for _, c := range a.calls {
		m.Content = append(m.Content, llm.Block{Type: llm.BlockToolResult, ToolUseID: c.ID, Content: content})
	}
	return m
}

func mustScenario(t *testing.T, src string) *scripted.Model {
	t.Helper()
	s, err := scripted.Parse("inline.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return scripted.New(s)
}

// gated is a model whose calls wait, per agent, for the test to open them (nil gate:
// answer at once), and may sleep first. It answers "<agent> <last user text>", except the
// parent's first call when launch is set: a task call with that id.
type gated struct {
	gates  map[string]chan struct{}
	sleep  time.Duration
	launch string
}

func (g *gated) Name() string { return "gated" }

func (g *gated) Generate(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		if ch := g.gates[req.Agent]; ch != nil {
			select {
			case <-ch:
			case <-ctx.Done():
				yield(llm.Event{}, context.Cause(ctx))
				return
			}
		}
		if g.sleep > 0 {
			time.Sleep(g.sleep)
		}
		if g.launch != "" && req.Agent == "parent" && len(req.Messages) == 1 {
			call := llm.Block{Type: llm.BlockToolUse, ID: g.launch, Name: "task", Input: []byte(`{"prompt":"remember","run_in_background":true}`)}
			if yield(llm.Event{Kind: llm.EventToolCall, ToolCall: call}, nil) {
				yield(llm.Event{Kind: llm.EventDone, StopReason: llm.StopToolUse}, nil)
			}
			return
		}
		if !yield(llm.Event{Kind: llm.EventTextDelta, Text: req.Agent + " " + req.Messages[len(req.Messages)-1].Text()}, nil) {
			return
		}
		yield(llm.Event{Kind: llm.EventDone, StopReason: llm.StopEndTurn, Usage: llm.Usage{InputTokens: 3, OutputTokens: 1}, MessageID: "msg_1"}, nil)
	}
}

// mustOpen opens the cassette at path for replay, closed when the test ends.
func mustOpen(t *testing.T, path string, cfg ReplayConfig) *Replayer {
	t.Helper()
	p, err := Open(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}
