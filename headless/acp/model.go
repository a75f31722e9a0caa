package acp

import (
	"context"
	"fmt"
	"iter"
	"maps"
	"slices"
	"sync"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/stoke-cli/stoke/agents/llm"
)

// modelConfigID is the id of the session's model selector (a config option of category
// model).
const modelConfigID sdk.SessionConfigId = "model"

// models is a session's model: the launch's, or another the client picked (the
// configuration option "model", or the unstable session/set_model) among the launch's
// model and the targets of the model aliases (sonnet, opus, haiku, fast, ...). The
// provider is the launch's: a pick changes the model name its requests ask for. It
// wraps the launch's model for the session's agents (the parent, and the subagents that
// run on the parent's model); safe for concurrent use.
type models struct {
	llm.Model
	launch string
	names  map[string]string // model name -> what the selector calls it

	mu  sync.Mutex
	cur string
}

func newModels(m llm.Model, launch string, aliases map[string]string) *models {
	names := map[string]string{launch: launch}
	for _, alias := range slices.Sorted(maps.Keys(aliases)) {
		if target := aliases[alias]; target != "" && names[target] == "" {
			names[target] = fmt.Sprintf("%s (%s)", alias, target)
		}
	}
	return &models{Model: m, launch: launch, names: names, cur: launch}
}

// Unwrap implements llm.Wrapper (what the model takes in prompts is the launch's).
func (m *models) Unwrap() llm.Model { return m.Model }

// Generate implements llm.Model: a request for the launch's model asks for the one picked.
func (m *models) Generate(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	if cur := m.current(); cur != m.launch && (req.Model == "" || req.Model == m.launch) {
		r := *req
		r.Model = cur
		req = &r
	}
	return m.Model.Generate(ctx, req)
}

func (m *models) current() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cur
}

// pick makes name the session's model.
func (m *models) pick(name string) error {
	if _, ok := m.names[name]; !ok {
		return fmt.Errorf("unknown model %q: the session offers %v", name, slices.Sorted(maps.Keys(m.names)))
	}
	m.mu.Lock()
	m.cur = name
	m.mu.Unlock()
	return nil
}

// options are the session's configuration options: the model selector.
func (m *models) options() []sdk.SessionConfigOption {
	var opts sdk.SessionConfigSelectOptionsUngrouped
	for _, name := range slices.Sorted(maps.Keys(m.names)) {
		opts = append(opts, sdk.SessionConfigSelectOption{Value: sdk.SessionConfigValueId(name), Name: m.names[name]})
	}
	o := sdk.NewSessionConfigOptionSelect(sdk.SessionConfigValueId(m.current()), sdk.SessionConfigSelectOptions{Ungrouped: &opts})
	cat := sdk.SessionConfigOptionCategoryModel
	o.Select.Id, o.Select.Name, o.Select.Category = modelConfigID, "Model", &cat
	return []sdk.SessionConfigOption{o}
}

// state is the session's models in the unstable `models` field of session/new and load.
func (m *models) state() *sdk.SessionModelState {
	st := &sdk.SessionModelState{CurrentModelId: sdk.ModelId(m.current())}
	for _, name := range slices.Sorted(maps.Keys(m.names)) {
		st.AvailableModels = append(st.AvailableModels, sdk.ModelInfo{ModelId: sdk.ModelId(name), Name: m.names[name]})
	}
	return st
}
