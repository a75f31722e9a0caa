package headless

import (
	"cmp"
	"context"
	"iter"
	"sync"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/price"
)

// meter is the model every agent of a run calls through, the parent and its subagents
// alike: it adds up the usage of each model call and prices it by the model that
// answered, for the result's usage and total_cost_usd and for --max-budget-usd (charged
// is called after each call that reported its usage). Safe for concurrent use.
type meter struct {
	llm.Model
	prices  price.Table
	charged func()

	mu    sync.Mutex
	usage llm.Usage
	cost  float64
}

// Generate implements llm.Model.
func (m *meter) Generate(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		for ev, err := range m.Model.Generate(ctx, req) {
			if err == nil && ev.Kind == llm.EventDone {
				m.add(cmp.Or(ev.Model, req.Model), ev.Usage)
			}
			if !yield(ev, err) {
				return
			}
		}
	}
}

func (m *meter) add(model string, u llm.Usage) {
	m.mu.Lock()
	m.usage = m.usage.Add(u)
	m.cost += m.prices.Cost(model, u)
	m.mu.Unlock()
	if m.charged != nil {
		m.charged()
	}
}

// total returns the usage and cost so far.
func (m *meter) total() (llm.Usage, float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.usage, m.cost
}
