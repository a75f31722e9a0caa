package headless

import (
	"cmp"
	"context"
	"iter"
	"sync"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/price"
	"github.com/stoke-cli/stoke/streamjson"
)

// meter is the model every agent of a run calls through, the parent and its subagents
// alike: it adds up the usage of each model call and prices it by the model that
// answered, for the result's usage and total_cost_usd and for --max-budget-usd (charged
// is called after each call that reported its usage). Safe for concurrent use.
type meter struct {
	llm.Model
	prices  price.Table
	charged func()

	mu      sync.Mutex
	usage   llm.Usage
	cost    float64
	byModel map[string]*modelTotal // the same, by the model that answered
}

// modelTotal is one model's usage and cost.
type modelTotal struct {
	usage llm.Usage
	cost  float64
}

// Unwrap returns the metered model (llm.Wrapper).
func (m *meter) Unwrap() llm.Model { return m.Model }

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
	cost := m.prices.Cost(model, u)
	m.mu.Lock()
	m.usage = m.usage.Add(u)
	m.cost += cost
	if m.byModel == nil {
		m.byModel = map[string]*modelTotal{}
	}
	t := m.byModel[model]
	if t == nil {
		t = &modelTotal{}
		m.byModel[model] = t
	}
	t.usage = t.usage.Add(u)
	t.cost += cost
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

// models returns the usage and cost so far by model: the result's modelUsage.
func (m *meter) models() map[string]streamjson.ModelUsage {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]streamjson.ModelUsage, len(m.byModel))
	for name, t := range m.byModel {
		out[name] = streamjson.ModelUsage{
			InputTokens: t.usage.InputTokens, OutputTokens: t.usage.OutputTokens,
			CacheReadInputTokens: t.usage.CacheReadInputTokens, CacheCreationInputTokens: t.usage.CacheCreationInputTokens,
			CostUSD: t.cost,
		}
	}
	return out
}

// budget is --max-budget-usd over the run's meter: a model call that takes the run's
// cost over it cancels the running parent turn (charged), and no parent turn starts
// over it. Safe for concurrent use.
type budget struct {
	max   float64 // 0: no budget
	meter *meter

	mu   sync.Mutex
	turn *turnHandle // the running parent turn (nil between turns)
}

// turnHandle is the running parent turn's cancel function; compared by pointer, so a late
// cleanup cannot clear a newer turn's handle.
type turnHandle struct {
	cancel context.CancelCauseFunc
}

// begin records the parent turn that cancel ends, and cancels it at once when the run
// is over the budget already; end forgets it.
func (b *budget) begin(cancel context.CancelCauseFunc) (end func()) {
	h := &turnHandle{cancel: cancel}
	b.mu.Lock()
	b.turn = h
	b.mu.Unlock()
	if b.over() {
		cancel(ErrMaxBudget)
	}
	return func() {
		b.mu.Lock()
		if b.turn == h {
			b.turn = nil
		}
		b.mu.Unlock()
	}
}

// charged is called after each model call that reported its usage: over the budget, the
// running parent turn is cancelled.
func (b *budget) charged() {
	if !b.over() {
		return
	}
	b.mu.Lock()
	h := b.turn
	b.mu.Unlock()
	if h != nil {
		h.cancel(ErrMaxBudget)
	}
}

// over reports whether the run's cost (subagents included) is over the budget.
func (b *budget) over() bool {
	return b.max > 0 && b.cost() > b.max
}

// cost is the run's cost so far, in USD.
func (b *budget) cost() float64 {
	_, cost := b.meter.total()
	return cost
}
