package sdkhost

import (
	"context"
	"iter"
	"sync"

	"github.com/stoke-cli/stoke/agents/llm"
)

// switchModel is the parent's model with the name the host chose by set_model. It
// overrides the model name of the parent's requests only; subagents keep theirs.
type switchModel struct {
	llm.Model
	def string // the configured model name

	mu   sync.Mutex
	name string // set_model's choice; "" for def
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
	m.mu.Unlock()
	if name != "" && req.Agent == "parent" {
		r := *req
		r.Model = name
		req = &r
	}
	return m.Model.Generate(ctx, req)
}
