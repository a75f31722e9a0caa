package headless

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"
	"go.uber.org/goleak"

	"github.com/stoke-cli/stoke/agents/llm/price"
	"github.com/stoke-cli/stoke/agents/llm/scripted"
	"github.com/stoke-cli/stoke/streamjson"
	"github.com/stoke-cli/stoke/streamjson/streamjsontest"
)

// TestMain checks for leaked goroutines. (Re-executed as the sandbox's helper, the test
// binary runs the helper from package sandbox's init.)
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func model(t *testing.T, yaml string) *scripted.Model {
	t.Helper()
	s, err := scripted.Parse(t.Name(), []byte(yaml))
	if err != nil {
		t.Fatalf("parse scenario: %v", err)
	}
	return scripted.New(s)
}

func lines(t *testing.T, out string) []gjson.Result {
	t.Helper()
	var ls []gjson.Result
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if !gjson.Valid(l) {
			t.Fatalf("not JSON: %q", l)
		}
		ls = append(ls, gjson.Parse(l))
	}
	return ls
}

func opts(t *testing.T, m *scripted.Model, out *bytes.Buffer) Options {
	return Options{
		Prompt: "hello", OutputFormat: OutputStreamJSON, Stdout: out, Model: m,
		CWD: t.TempDir(), Home: t.TempDir(), SessionID: "11111111-2222-3333-4444-555555555555",
		Version: "test", BackgroundAgents: true,
	}
}

const echo = `
rules:
  - agent: parent
    reply:
      text: "echo: {{ lastUser }}"
`

func TestRunOutputFormats(t *testing.T) {
	t.Parallel()
	tests := []struct {
		format string
		check  func(t *testing.T, out string)
	}{
		{OutputText, func(t *testing.T, out string) {
			if out != "echo: hello\n" {
				t.Errorf("text output = %q", out)
			}
		}},
		{OutputJSON, func(t *testing.T, out string) {
			ls := lines(t, out)
			if len(ls) != 1 || ls[0].Get("type").String() != "result" || ls[0].Get("result").String() != "echo: hello" {
				t.Errorf("json output = %q", out)
			}
		}},
		{OutputStreamJSON, func(t *testing.T, out string) {
			if err := streamjsontest.Validate(strings.NewReader(out)); err != nil {
				t.Errorf("invalid stream: %v\n%s", err, out)
			}
			ls := lines(t, out)
			if got := ls[len(ls)-1].Get("result").String(); got != "echo: hello" {
				t.Errorf("result = %q", got)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			o := opts(t, model(t, echo), &out)
			o.OutputFormat = tt.format
			if err := Run(t.Context(), o); err != nil {
				t.Fatalf("Run: %v", err)
			}
			tt.check(t, out.String())
		})
	}
}

func TestRunMaxTurns(t *testing.T) {
	t.Parallel()
	m := model(t, `
rules:
  - agent: parent
    reply:
      tool_calls:
        - name: no_such_tool
          input: {}
`)
	var out bytes.Buffer
	o := opts(t, m, &out)
	o.MaxTurns = 2
	err := Run(t.Context(), o)
	if !errors.Is(err, ErrMaxTurns) {
		t.Fatalf("err = %v, want ErrMaxTurns", err)
	}
	ls := lines(t, out.String())
	last := ls[len(ls)-1]
	if last.Get("subtype").String() != streamjson.ResultErrorMaxTurns || !last.Get("is_error").Bool() {
		t.Errorf("last line = %s", last.Raw)
	}
	if n := len(m.Requests()); n != 2 {
		t.Errorf("model calls = %d, want 2", n)
	}
	// The unknown tool came back to the model as a tool error, not a crash.
	if !strings.Contains(out.String(), `unknown tool \"no_such_tool\"`) {
		t.Errorf("no tool error in stream:\n%s", out.String())
	}
}

func TestRunModelErrorIsExecutionError(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	o := opts(t, model(t, `
rules:
  - agent: parent
    reply:
      error: "upstream exploded"
`), &out)
	err := Run(t.Context(), o)
	if !errors.Is(err, ErrRunFailed) {
		t.Fatalf("err = %v, want ErrRunFailed", err)
	}
	last := lines(t, out.String())
	r := last[len(last)-1]
	if r.Get("subtype").String() != streamjson.ResultErrorDuringExecution || !strings.Contains(r.Get("errors.0").String(), "upstream exploded") {
		t.Errorf("result = %s", r.Raw)
	}
}

// Seed 003, issue 23: --timeout while the parent is blocked on a collect returns the
// partial findings at once: the collect's result holds the text the child had streamed,
// and so does its stopped notification. The parent's collect waits (wait_for) until the
// child has streamed, so the deadline finds both where the test wants them; it only
// needs the run to get there within the deadline.
func TestRunTimeoutKeepsPartialFindings(t *testing.T) {
	t.Parallel()
	m := model(t, `
rules:
  - agent: parent
    when: {step: 1}
    reply:
      tool_calls:
        - name: task
          input: {description: dig, prompt: "dig for clues", run_in_background: true}
  - agent: parent
    when: {step: 2}
    reply:
      wait_for: streamed
      tool_calls:
        - name: task
          input: {task_id: "{{ lastMatch `+"`task_id: (a[0-9a-f]+)`"+` }}"}
  - agent: parent
    reply:
      text: "never reached"
  - agent: general-purpose
    reply: {partial: "FOUND clue-7 so far", signal: streamed}
`)
	var out bytes.Buffer
	o := opts(t, m, &out)
	o.Timeout = 3 * time.Second
	err := Run(t.Context(), o)
	if !errors.Is(err, ErrRunFailed) {
		t.Fatalf("err = %v, want ErrRunFailed", err)
	}
	ls := lines(t, out.String())
	var note, collect gjson.Result
	for _, l := range ls {
		switch {
		case l.Get("subtype").String() == "task_notification":
			note = l
		case l.Get("type").String() == "user" && l.Get("parent_tool_use_id").Type == gjson.Null:
			collect = l.Get("message.content.0")
		}
	}
	if note.Get("status").String() != "stopped" || note.Get("reason").String() != "cancelled" || !note.Get("interrupted").Bool() || note.Get("summary").String() != "FOUND clue-7 so far" {
		t.Errorf("notification = %s", note.Raw)
	}
	if got := collect.Get("content").String(); !strings.Contains(got, "status: paused (turn 1)\ninterrupted: true\nTask interrupted. These are partial findings, from before the run ended (run timed out (--timeout)); send_message continues it:\n<task_result>\nFOUND clue-7 so far\n</task_result>") || collect.Get("is_error").Bool() {
		t.Errorf("the collect's result = %s", collect.Raw)
	}
	if r := ls[len(ls)-1]; r.Get("subtype").String() != streamjson.ResultErrorDuringExecution {
		t.Errorf("last = %s", r.Raw)
	}
}

func TestRunBackgroundOnExitCancel(t *testing.T) {
	t.Parallel()
	m := model(t, `
rules:
  - agent: parent
    when: {step: 1}
    reply:
      tool_calls:
        - name: task
          input: {description: slow, prompt: "work slowly", run_in_background: true}
  - agent: parent
    reply:
      text: "done without waiting"
  - agent: general-purpose
    reply:
      delay: 1h
      text: "never"
`)
	var out bytes.Buffer
	o := opts(t, m, &out)
	o.BackgroundOnExit = "cancel"
	if err := Run(t.Context(), o); err != nil {
		t.Fatalf("Run: %v", err)
	}
	s := out.String()
	if !strings.Contains(s, `"status":"stopped"`) {
		t.Errorf("background agent not stopped:\n%s", s)
	}
	ls := lines(t, s)
	if r := ls[len(ls)-1]; r.Get("subtype").String() != "success" || r.Get("result").String() != "done without waiting" {
		t.Errorf("result = %s", r.Raw)
	}
}

func TestRunStreamJSONInput(t *testing.T) {
	t.Parallel()
	m := model(t, `
rules:
  - agent: parent
    when: {last_user_contains: "second"}
    reply:
      text: 'first was {{ match "(alpha-[0-9]+)" }}'
  - agent: parent
    reply:
      text: "ok"
`)
	var out bytes.Buffer
	o := opts(t, m, &out)
	o.Prompt = ""
	o.InputFormat = InputStreamJSON
	o.Stdin = strings.NewReader(`{"type":"user","message":{"role":"user","content":"first alpha-42"}}` + "\n" +
		`{"type":"user","message":{"role":"user","content":[{"type":"text","text":"second"}]}}` + "\n")
	if err := Run(t.Context(), o); err != nil {
		t.Fatalf("Run: %v", err)
	}
	var results []string
	for _, l := range lines(t, out.String()) {
		if l.Get("type").String() == "result" {
			results = append(results, l.Get("result").String())
		}
	}
	if len(results) != 2 || results[1] != "first was alpha-42" {
		t.Errorf("results = %q", results)
	}
}

func TestRunStreamJSONMalformedLine(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	o := opts(t, model(t, echo), &out)
	o.Prompt = ""
	o.InputFormat = InputStreamJSON
	o.Stdin = strings.NewReader(`{"type":"user","message":{"role":"user","content":"one"}}` + "\nnot json\n")
	err := Run(t.Context(), o)
	if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("err = %v, want ErrUsage naming line 2", err)
	}
	// The first turn's result, then the error result of the line: the last line says the
	// run failed, as its exit code does.
	var rs []string
	ls := lines(t, out.String())
	for _, l := range ls {
		if l.Get("type").String() == "result" {
			rs = append(rs, l.Get("subtype").String()+" "+l.Get("result").String()+l.Get("errors.0").String())
		}
	}
	want := []string{"success echo: one", "error_during_execution stdin line 2: not valid JSON"}
	if diff := cmp.Diff(want, rs); diff != "" || ls[len(ls)-1].Get("type").String() != "result" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
}

func TestRunCancelledContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var out bytes.Buffer
	err := Run(ctx, opts(t, model(t, echo), &out))
	if err == nil {
		t.Fatal("Run on a cancelled context succeeded")
	}
	ls := lines(t, out.String())
	if r := ls[len(ls)-1]; r.Get("type").String() != "result" || !r.Get("is_error").Bool() {
		t.Errorf("last = %s", r.Raw)
	}
}

// TestBudgetNeedsSubagentPrices: with --max-budget-usd, a subagent type on a model the
// price table does not know refuses the run (ErrUsage, naming the model, the type and the
// prices: setting) before any model call: its calls would cost 0 and the budget would
// never see them. Priced, or without a budget, the same run goes ahead.
func TestBudgetNeedsSubagentPrices(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		budget float64
		prices map[string]price.Price
		refuse bool
	}{
		{"unpriced", 1, nil, true},
		{"priced in settings", 1, map[string]price.Price{"acme-large": {Input: 1, Output: 2}}, false},
		{"no budget", 0, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			m := model(t, echo)
			o := opts(t, m, &out)
			writeAgent(t, o.Home, "agents/writer.md", "---\nname: writer\ndescription: Writes\nmodel: acme-large\n---\nYou write.\n")
			o.SDK.MaxBudgetUSD = tc.budget
			o.Prices = price.Default().With(tc.prices)
			err := Run(t.Context(), o)
			if !tc.refuse {
				if err != nil {
					t.Fatalf("Run = %v", err)
				}
				return
			}
			if !errors.Is(err, ErrUsage) {
				t.Fatalf("Run = %v, want ErrUsage", err)
			}
			for _, want := range []string{`"acme-large"`, `"writer"`, "--max-budget-usd", "prices:"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %s", err, want)
				}
			}
			if n := len(m.Requests()); n != 0 {
				t.Errorf("%d model calls before the refusal", n)
			}
		})
	}
}

func loadScenario(t *testing.T, path string) *scripted.Model {
	t.Helper()
	m, err := scripted.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// total_cost_usd prices every assistant line by its model; unknown and scripted models cost 0.
func TestRunTotalCost(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		model string
		want  bool
	}{{"priced-model", true}, {"scripted", false}} {
		t.Run(tc.model, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			o := opts(t, model(t, "model: "+tc.model+"\nrules:\n  - reply:\n      text: ok\n      usage: {input_tokens: 1000000, output_tokens: 1000000}\n"), &out)
			o.Prices = price.Default().With(map[string]price.Price{"priced-model": {Input: 2, Output: 8}})
			if err := Run(t.Context(), o); err != nil {
				t.Fatal(err)
			}
			ls := lines(t, out.String())
			got := ls[len(ls)-1].Get("total_cost_usd").Float()
			if tc.want && got != 10 {
				t.Errorf("total_cost_usd = %v, want 10", got)
			}
			if !tc.want && got != 0 {
				t.Errorf("total_cost_usd = %v, want 0", got)
			}
		})
	}
}
