package runtime

import (
	"context"
	"encoding/json"
	"iter"
	"testing"

	"go.uber.org/goleak"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/tools"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// modelFunc is an llm.Model that answers each call through the func. A runtime makes
// its calls one at a time, from the goroutine running Execute.
type modelFunc func(ctx context.Context, req *llm.Request, yield func(llm.Event, error) bool)

func (modelFunc) Name() string { return "func" }

func (f modelFunc) Generate(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) { f(ctx, req, yield) }
}

// reply yields text (if any) and tool calls (if any), then the end of the call.
func reply(yield func(llm.Event, error) bool, text string, calls ...llm.Block) {
	if text != "" && !yield(llm.Event{Kind: llm.EventTextDelta, Text: text}, nil) {
		return
	}
	for _, c := range calls {
		if !yield(llm.Event{Kind: llm.EventToolCall, ToolCall: c}, nil) {
			return
		}
	}
	yield(llm.Event{Kind: llm.EventDone, Usage: llm.Usage{InputTokens: 10, OutputTokens: 2}}, nil)
}

// toolFunc is a tool named name that runs fn.
func toolFunc(name string, fn func(context.Context, tools.Call) tools.Result) tools.Tool {
	return tools.Func{
		ToolSpec: llm.ToolSpec{Name: name, Description: "test tool", Parameters: json.RawMessage(`{"type":"object"}`)},
		Fn:       fn,
	}
}

// probe is a tool that answers "ok".
func probe() tools.Tool {
	return toolFunc("probe", func(context.Context, tools.Call) tools.Result { return tools.Result{Content: "ok"} })
}
