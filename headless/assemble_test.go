package headless

import (
	"bytes"
	"context"
	"errors"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stoke-cli/stoke/agents"
	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/store"
	"github.com/stoke-cli/stoke/agents/tools"
)

// noCalls is a model that fails the test when it is called.
type noCalls struct{ t *testing.T }

func (noCalls) Name() string { return "no-calls" }

func (m noCalls) Generate(context.Context, *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		m.t.Error("Assemble called the model")
		yield(llm.Event{}, errors.New("no calls"))
	}
}

// Assemble builds every part of a session and announces it, without a turn or a model
// call: the registry, the parent with the task tools and the workspace tools, the
// task tools' call order, system/init on the stream.
func TestAssembleBuildsThePartsWithoutATurn(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	o := opts(t, nil, &out)
	o.Model = noCalls{t}
	p, err := Assemble(t.Context(), o, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.reg == nil || p.parent == nil || p.mcp == nil || p.ws == nil || p.opened.sess == nil || p.chat == nil || p.host != nil {
		t.Fatalf("parts not built: %+v", p)
	}
	names := p.tools.Names()
	for _, want := range []string{agents.ToolTask, agents.ToolSendMessage, tools.NameReadFile, tools.NameShell} {
		if !slices.Contains(names, want) {
			t.Errorf("parent tools %v lack %s", names, want)
		}
	}
	if p.parent.Chat() != nil {
		t.Error("the parent ran a turn")
	}
	init := lines(t, out.String())
	if len(init) != 1 || init[0].Get("subtype").String() != "init" || init[0].Get("cwd").String() != o.CWD || len(init[0].Get("tools").Array()) != len(names) {
		t.Fatalf("stream = %s, want system/init alone", out.String())
	}
}

// One process assembles many sessions (an ACP server does): each has its own working
// directory, store binding, registry and workspace.
func TestAssembleManySessions(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	var parts []*Parts
	for _, id := range []string{"11111111-2222-3333-4444-555555555555", "66666666-2222-3333-4444-555555555555"} {
		o := opts(t, nil, &bytes.Buffer{})
		o.Model, o.Home, o.SessionID = noCalls{t}, home, id
		p, err := Assemble(t.Context(), o, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		parts = append(parts, p)
	}
	a, b := parts[0], parts[1]
	if a.reg == b.reg || a.ws == b.ws || a.opened.sess.String() == b.opened.sess.String() || a.opts.CWD == b.opts.CWD {
		t.Fatal("two sessions share a part")
	}
	if filepath.Dir(filepath.Dir(a.opened.sess.String())) != filepath.Dir(filepath.Dir(b.opened.sess.String())) {
		t.Errorf("sessions %s and %s are not under one home", a.opened.sess, b.opened.sess)
	}
}

// A step that fails leaves nothing held: the session's lock is released.
func TestAssembleReleasesOnError(t *testing.T) {
	t.Parallel()
	o := opts(t, nil, &bytes.Buffer{})
	o.Model = noCalls{t}
	// The catalog step fails: with a budget, a subagent type on a model without a price.
	dir := filepath.Join(o.CWD, ".stoke", "agents")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "costly.md"), []byte("---\nname: costly\ndescription: d\nmodel: unpriced-model\n---\nbody\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o.SDK.MaxBudgetUSD = 1
	if _, err := Assemble(t.Context(), o, nil); !errors.Is(err, ErrUsage) {
		t.Fatalf("Assemble: err = %v, want ErrUsage", err)
	}
	lock, err := store.New(o.Home, o.CWD, o.SessionID).Lock(t.Context(), 0)
	if err != nil {
		t.Fatalf("the session is still held after a failed Assemble: %v", err)
	}
	_ = lock.Unlock()
}
