package sdkhost

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"

	"github.com/stoke-cli/stoke/agents/llm"
)

// ErrMaxSessionTurns: the parent asked its model more often than MaxSessionTurns allows.
var ErrMaxSessionTurns = errors.New("reached max session turns for this session (--max-session-turns)")

// switchModel is the parent's model with the name the host chose by set_model. It
// overrides the model name of the parent's requests only; subagents keep theirs. With a
// limit, it refuses the parent's calls past it (MaxSessionTurns).
type switchModel struct {
	llm.Model
	def   string // the configured model name
	limit int    // the parent's calls allowed in the session; 0: no limit

	mu    sync.Mutex
	name  string // set_model's choice; "" for def
	calls int    // the parent's calls so far
}

func newSwitchModel(m llm.Model, name string) *switchModel {
	if name == "" {
		name = m.Name()
	}
	return &switchModel{Model: m, def: name}
}

// Unwrap returns the parent's model (llm.Wrapper).
func (m *switchModel) Unwrap() llm.Model { return m.Model }

// set chooses the parent's model; "" goes back to the configured one. Safe for concurrent use.
func (m *switchModel) set(name string) {
	m.mu.Lock()
	m.name = name
	m.mu.Unlock()
}

// Name is the model in use. Safe for concurrent use.
func (m *switchModel) Name() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.name != "" {
		return m.name
	}
	return m.def
}

// Generate implements llm.Model: the parent's requests go out under the chosen name.
func (m *switchModel) Generate(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	m.mu.Lock()
	name := m.name
	if req.Agent == "parent" {
		m.calls++
	}
	over := m.limit > 0 && m.calls > m.limit
	m.mu.Unlock()
	if over && req.Agent == "parent" {
		return func(yield func(llm.Event, error) bool) {
			yield(llm.Event{}, fmt.Errorf("%w: %d model calls", ErrMaxSessionTurns, m.limit))
		}
	}
	if name != "" && req.Agent == "parent" {
		r := *req
		r.Model = name
		req = &r
	}
	return m.Model.Generate(ctx, req)
}
