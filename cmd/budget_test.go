package cmd

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/headless"
)

// TestBudgetNeedsAPrice: --max-budget-usd with a model the price table does not know is
// refused (exit 2, naming the prices: setting); a price in the settings, or a model that
// is known or free, lets the run start.
func TestBudgetNeedsAPrice(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		settings string // home settings
		args     []string
		wantCode int
	}{
		{"unknown model", "", []string{"--model", "acme-large"}, 2},
		{"unknown model priced in settings", "prices:\n  acme-large: {input: 1, output: 2}\n", []string{"--model", "acme-large"}, 0},
		{"known model", "", []string{"--model", "gpt-4o-mini-2024-07-18"}, 0},
		{"unknown model without a budget", "", []string{"--model", "acme-large", "--max-budget-usd", "0"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newTestProcess(t)
			p.env["OPENAI_API_KEY"] = "sk-test"
			if tt.settings != "" {
				p.homeSettings(t, tt.settings)
			}
			args := append([]string{"-p", "x", "--provider", "openai", "--max-budget-usd", "0.5"}, tt.args...)
			got := p.run(t, args...)
			if got.code != tt.wantCode {
				t.Fatalf("exit %d, want %d; stderr %q", got.code, tt.wantCode, got.stderr)
			}
			if tt.wantCode == 2 {
				if lines := strings.Split(strings.TrimSpace(got.stderr), "\n"); len(lines) != 1 ||
					!strings.Contains(lines[0], "prices:") || !strings.Contains(lines[0], `"acme-large"`) || !strings.Contains(lines[0], "--max-budget-usd") {
					t.Errorf("stderr %q, want one line naming the flag, the model and the prices: setting", got.stderr)
				}
				if got.opts != nil {
					t.Error("the run started")
				}
			}
		})
	}
	t.Run("scripted model", func(t *testing.T) {
		t.Parallel()
		p := newTestProcess(t)
		writeFile(t, filepath.Join(p.cwd, "s.yaml"), "model: scripted-x\nrules:\n  - reply:\n      text: hello\n")
		if got := p.run(t, "-p", "x", "--scenario", "s.yaml", "--max-budget-usd", "1"); got.code != 0 {
			t.Errorf("exit %d: %s", got.code, got.stderr)
		}
	})
}

// TestUnknownPriceWarnsOnce: a model without a price costs 0 and is reported once, however
// often it is priced.
func TestUnknownPriceWarnsOnce(t *testing.T) {
	t.Parallel()
	p := newTestProcess(t)
	p.env["OPENAI_API_KEY"] = "sk-test"
	deps, _, errOut := p.deps()
	var cost float64
	runF := func(_ context.Context, opts headless.Options) error {
		u := llm.Usage{InputTokens: 1000, OutputTokens: 1000}
		for range 3 {
			cost += opts.Prices.Cost("acme-large", u)
		}
		cost += opts.Prices.Cost("gpt-4o", u) // known: no warning
		return nil
	}
	if code := execute(t.Context(), deps, runF, []string{"-p", "x", "--provider", "openai", "--model", "acme-large"}); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], "model=acme-large") || !strings.Contains(lines[0], "prices:") {
		t.Errorf("stderr %q, want one warning naming the model and prices:", errOut.String())
	}
	if cost == 0 {
		t.Error("the known model cost nothing")
	}
}
