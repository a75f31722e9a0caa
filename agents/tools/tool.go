// Package tools holds the tool interface the agent loop calls, the Set that declares tools
// to the model and validates their arguments, the workspace tools (read_file, write_file,
// edit, glob, grep, shell) with the approval modes that gate them.
//
// Each workspace tool is a .go file with a .md file beside it: the description the model
// reads, embedded. Its arguments are a Go type, from which its JSON Schema is derived
// (InputSchema, jsonschema.For): the names, required fields and descriptions the model is
// shown are the ones the tool decodes. testdata/specs.json pins what the model sees.
package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/stoke-cli/stoke/agents/llm"
)

// Tool is one callable tool.
type Tool interface {
	// Spec declares the tool to the model: name, description, JSON Schema parameters.
	Spec() llm.ToolSpec
	// Run executes one call with input already validated against the schema. Failures the
	// model should see are results with IsError set, not Go errors. Run must return when
	// ctx is cancelled. Safe for concurrent use.
	Run(ctx context.Context, call Call) Result
}

// ReadOnly is the optional ability of a Tool whose calls change nothing and are safe to
// run alongside one another: read_file, glob, grep, an MCP tool its server annotates
// readOnlyHint. The agent loop runs consecutive calls of such tools of one reply
// together and every other call alone, in the order the model wrote them. A wrapper
// that runs an inner tool (an approval gate, a hook) reports the inner tool's answer.
type ReadOnly interface {
	ReadOnly() bool
}

// IsReadOnly reports whether t declares itself read-only and safe in parallel (ReadOnly).
func IsReadOnly(t Tool) bool {
	r, ok := t.(ReadOnly)
	return ok && r.ReadOnly()
}

// Call is one invocation of a tool.
type Call struct {
	ID    string          // the tool_use id
	Name  string          // tool name
	Input json.RawMessage // arguments, validated against the tool's schema
}

// Result is what the model sees.
type Result struct {
	Content string
	IsError bool
}

// Errorf returns an error Result.
func Errorf(format string, args ...any) Result {
	return Result{Content: fmt.Sprintf(format, args...), IsError: true}
}

// Set is an ordered collection of tools with their compiled schemas. It is immutable after
// NewSet, so it is safe for concurrent use, and one Set is the "prepared tool list" of an agent.
type Set struct {
	tools   []Tool
	specs   []llm.ToolSpec
	byName  map[string]int
	schemas []*lazySchema
}

type lazySchema struct {
	once   sync.Once
	raw    json.RawMessage
	schema *jsonschema.Resolved
	err    error
}

func (l *lazySchema) get(name string) (*jsonschema.Resolved, error) {
	l.once.Do(func() {
		var s jsonschema.Schema
		if err := json.Unmarshal(l.raw, &s); err != nil {
			l.err = fmt.Errorf("parse schema of %s: %w", name, err)
			return
		}
		if l.schema, l.err = s.Resolve(nil); l.err != nil {
			l.err = fmt.Errorf("resolve schema of %s: %w", name, l.err)
		}
	})
	return l.schema, l.err
}

// NewSet returns a Set of the given tools, in order. A later tool with the same name as an
// earlier one is dropped. Schemas are compiled on first use.
func NewSet(ts ...Tool) *Set {
	s := &Set{byName: make(map[string]int, len(ts))}
	for _, t := range ts {
		spec := t.Spec()
		if _, dup := s.byName[spec.Name]; dup {
			continue
		}
		s.byName[spec.Name] = len(s.tools)
		s.tools = append(s.tools, t)
		s.specs = append(s.specs, spec)
		s.schemas = append(s.schemas, &lazySchema{raw: spec.Parameters})
	}
	return s
}

// Specs returns the declarations, in order. The caller must not modify them.
func (s *Set) Specs() []llm.ToolSpec {
	if s == nil {
		return nil
	}
	return s.specs
}

// Names returns the tool names, in order.
func (s *Set) Names() []string {
	if s == nil {
		return []string{}
	}
	out := make([]string, len(s.specs))
	for i, sp := range s.specs {
		out[i] = sp.Name
	}
	return out
}

// ReadOnly reports whether the tool named name declares itself read-only and safe in
// parallel (ReadOnly); false for a tool the set does not hold.
func (s *Set) ReadOnly(name string) bool {
	if s == nil {
		return false
	}
	i, ok := s.byName[name]
	return ok && IsReadOnly(s.tools[i])
}

// With returns a new Set of s's tools followed by ts (a later tool with the name of an
// earlier one is dropped, as in NewSet). s is not changed.
func (s *Set) With(ts ...Tool) *Set {
	var all []Tool
	if s != nil {
		all = append(all, s.tools...)
	}
	return NewSet(append(all, ts...)...)
}

// Run runs one call: an unknown tool or arguments that do not match the schema give an
// error Result the model sees; they never fail the run.
func (s *Set) Run(ctx context.Context, call Call) Result {
	i, ok := -1, false
	if s != nil {
		i, ok = s.byName[call.Name]
	}
	if !ok {
		names := s.Names()
		sort.Strings(names)
		return Errorf("unknown tool %q; available tools: %s", call.Name, strings.Join(names, ", "))
	}
	input := call.Input
	if len(strings.TrimSpace(string(input))) == 0 {
		input = json.RawMessage(`{}`)
	}
	var v any
	if err := json.Unmarshal(input, &v); err != nil {
		return Errorf("invalid arguments for %s: not JSON: %v", call.Name, err)
	}
	sch, err := s.schemas[i].get(call.Name)
	if err != nil {
		return Errorf("tool %s has a broken schema: %v", call.Name, err)
	}
	if err := sch.Validate(v); err != nil {
		return Errorf("invalid arguments for %s: %s", call.Name, oneLine(err.Error()))
	}
	call.Input = input
	return s.tools[i].Run(ctx, call)
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// Around returns a Set of the same tools, each call of which goes through around: it is
// given the call and the func that runs it on s (schema check included), and returns the
// result, so that it may act before and after the call, change its input, or not run it
// (hooks do). The tools keep their specs and their ReadOnly declarations.
func (s *Set) Around(around func(ctx context.Context, call Call, run func(context.Context, Call) Result) Result) *Set {
	specs := s.Specs()
	ts := make([]Tool, len(specs))
	for i, spec := range specs {
		ts[i] = wrapped{spec: spec, set: s, around: around}
	}
	return NewSet(ts...)
}

// wrapped is a tool of a Set run through a func (Set.Around).
type wrapped struct {
	spec   llm.ToolSpec
	set    *Set
	around func(context.Context, Call, func(context.Context, Call) Result) Result
}

func (w wrapped) Spec() llm.ToolSpec { return w.spec }

// ReadOnly implements ReadOnly: the wrapped tool's declaration.
func (w wrapped) ReadOnly() bool { return w.set.ReadOnly(w.spec.Name) }

func (w wrapped) Run(ctx context.Context, call Call) Result { return w.around(ctx, call, w.set.Run) }

// Func adapts a function to a Tool.
type Func struct {
	ToolSpec llm.ToolSpec
	Fn       func(ctx context.Context, call Call) Result
	// Parallel declares the tool read-only and safe in parallel (ReadOnly).
	Parallel bool
}

// Spec implements Tool.
func (f Func) Spec() llm.ToolSpec { return f.ToolSpec }

// ReadOnly implements ReadOnly: f.Parallel.
func (f Func) ReadOnly() bool { return f.Parallel }

// Run implements Tool.
func (f Func) Run(ctx context.Context, call Call) Result { return f.Fn(ctx, call) }
