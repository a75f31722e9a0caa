package price

import (
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-viper/mapstructure/v2"
	"go.uber.org/goleak"
	"go.yaml.in/yaml/v3"

	"github.com/stoke-cli/stoke/agents/llm"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// million is one million tokens of a kind, so that a cost reads as the price per million.
const million = 1_000_000

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestCost(t *testing.T) {
	tests := []struct {
		name  string
		model string
		usage llm.Usage
		want  float64
	}{
		{"zero usage", "gpt-4o", llm.Usage{}, 0},
		{"gpt-4o input", "gpt-4o", llm.Usage{InputTokens: million}, 2.50},
		{"gpt-4o output", "gpt-4o", llm.Usage{OutputTokens: million}, 10.00},
		{"gpt-4o cached at half input", "gpt-4o", llm.Usage{CacheReadInputTokens: million}, 1.25},
		{"gpt-4o-mini mixed", "gpt-4o-mini", llm.Usage{InputTokens: 2 * million, OutputTokens: million, CacheReadInputTokens: million}, 0.30 + 0.60 + 0.075},
		{"gpt-4.1 cached at a quarter", "gpt-4.1", llm.Usage{CacheReadInputTokens: million}, 0.50},
		{"gpt-4.1-mini", "gpt-4.1-mini", llm.Usage{InputTokens: million, OutputTokens: million}, 0.40 + 1.60},
		{"o4-mini", "o4-mini", llm.Usage{InputTokens: million, OutputTokens: million, CacheReadInputTokens: million}, 1.10 + 4.40 + 0.275},
		{"claude-sonnet-4 all four kinds", "claude-sonnet-4-20250514",
			llm.Usage{InputTokens: million, OutputTokens: million, CacheReadInputTokens: million, CacheCreationInputTokens: million},
			3.00 + 15.00 + 0.30 + 3.75},
		{"claude-opus-4", "claude-opus-4-20250514", llm.Usage{InputTokens: million, OutputTokens: million}, 15 + 75},
		{"claude-opus-4-1 dated", "claude-opus-4-1-20250805", llm.Usage{OutputTokens: million}, 75},
		{"claude-opus-4-5 is not priced as opus 4", "claude-opus-4-5-20251101", llm.Usage{InputTokens: million, OutputTokens: million}, 5 + 25},
		{"claude-3-5-haiku cache write", "claude-3-5-haiku-latest", llm.Usage{CacheCreationInputTokens: million}, 1.00},
		{"qwen-plus", "qwen-plus", llm.Usage{InputTokens: million, OutputTokens: million, CacheReadInputTokens: million}, 0.40 + 1.20 + 0.08},
		{"qwen-max", "qwen-max-latest", llm.Usage{InputTokens: million, OutputTokens: million}, 1.60 + 6.40},
		{"small call", "gpt-4o-mini", llm.Usage{InputTokens: 1200, OutputTokens: 300}, (1200*0.15 + 300*0.60) / million},
		{"unknown model", "llama-3-70b", llm.Usage{InputTokens: million, OutputTokens: million}, 0},
		{"empty model", "", llm.Usage{InputTokens: million}, 0},
		{"scripted", "scripted", llm.Usage{InputTokens: million, OutputTokens: million}, 0},
		{"scripted variant", "scripted-demo", llm.Usage{InputTokens: million}, 0},
	}
	table := Default()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := table.Cost(tt.model, tt.usage); !near(got, tt.want) {
				t.Errorf("Cost(%q, %+v) = %v, want %v", tt.model, tt.usage, got, tt.want)
			}
		})
	}
}

func TestLookup(t *testing.T) {
	tests := []struct {
		model  string
		want   string // the table entry it must resolve to; "" for none
		wantOK bool
	}{
		{"gpt-4o", "gpt-4o", true},
		{"gpt-4o-mini", "gpt-4o-mini", true},
		{"gpt-4o-mini-2024-07-18", "gpt-4o-mini", true}, // longest prefix wins over gpt-4o
		{"gpt-4o-2024-08-06", "gpt-4o", true},
		{"GPT-4o-Mini", "gpt-4o-mini", true},
		{"  gpt-4.1-mini  ", "gpt-4.1-mini", true},
		{"gpt-4.1-mini-2025-04-14", "gpt-4.1-mini", true},
		{"gpt-4.1-2025-04-14", "gpt-4.1", true},
		{"o3-mini-2025-01-31", "o3-mini", true},
		{"o3-2025-04-16", "o3", true},
		{"openai/gpt-4o-mini", "gpt-4o-mini", true}, // a routing path is dropped
		{"claude-sonnet-4-5-20250929", "claude-sonnet-4", true},
		{"claude-opus-4@20250514", "claude-opus-4", true},
		{"claude-opus-4-6", "claude-opus-4-6", true},
		{"qwen-plus-latest", "qwen-plus", true},
		{"gpt-4o2", "", false},  // not at a separator: another model
		{"gpt-5.1", "", false},  // likewise
		{"gpt", "", false},      // shorter than every entry
		{"o3mini", "", false},   // no separator
		{"scripted", "", false}, // free
		{"mistral-large", "", false},
	}
	table := Default()
	defaults := defaultPrices()
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			got, ok := table.Lookup(tt.model)
			if ok != tt.wantOK {
				t.Fatalf("Lookup(%q) ok = %v, want %v", tt.model, ok, tt.wantOK)
			}
			if want := defaults[tt.want]; got != want {
				t.Errorf("Lookup(%q) = %+v, want the %q entry %+v", tt.model, got, tt.want, want)
			}
		})
	}
}

// TestDefaultsConsistent checks the table's own invariants: every price is positive,
// a cache read never costs more than uncached input, and the families follow their rules.
func TestDefaultsConsistent(t *testing.T) {
	for name, p := range defaultPrices() {
		if p.Input <= 0 || p.Output <= 0 || p.CacheRead <= 0 || p.CacheWrite <= 0 {
			t.Errorf("%s: every price must be positive: %+v", name, p)
		}
		if p.CacheRead > p.Input {
			t.Errorf("%s: cache read %v costs more than input %v", name, p.CacheRead, p.Input)
		}
		read, write := cacheRule(name)
		switch {
		case strings.HasPrefix(name, "claude"), strings.HasPrefix(name, "qwen"):
			if !near(p.CacheRead, read*p.Input) || !near(p.CacheWrite, write*p.Input) {
				t.Errorf("%s: cache prices %v/%v do not follow the family rule %v×/%v× of %v", name, p.CacheRead, p.CacheWrite, read, write, p.Input)
			}
		default: // OpenAI: discounts differ per model; writes are billed as input
			if p.CacheWrite != p.Input {
				t.Errorf("%s: cache write %v, want the input price %v", name, p.CacheWrite, p.Input)
			}
		}
	}
}

func TestWith(t *testing.T) {
	base := Default()
	table := base.With(map[string]Price{
		"my-model":        {Input: 0.5, Output: 1.5, CacheRead: 0.05, CacheWrite: 0.6},
		"GPT-4o":          {Input: 1, Output: 2, CacheRead: 0.1, CacheWrite: 1}, // replaces a default
		"claude-custom":   {Input: 2, Output: 10},                               // cache prices derived
		"gpt-custom":      {Input: 2, Output: 10},                               // OpenAI rule
		"qwen-custom":     {Input: 1, Output: 3},                                // Qwen rule
		"local-llm":       {Input: 0.2, Output: 0.4},                            // no family: input price
		"scripted-priced": {Input: 1, Output: 1},                                // scripted stays free
		"":                {Input: 9, Output: 9},                                // ignored
		"scripted-x":      {},                                                   // ignored as well
	})
	tests := []struct {
		model string
		usage llm.Usage
		want  float64
	}{
		{"my-model", llm.Usage{InputTokens: million, OutputTokens: million, CacheReadInputTokens: million, CacheCreationInputTokens: million}, 0.5 + 1.5 + 0.05 + 0.6},
		{"my-model-v2", llm.Usage{InputTokens: million}, 0.5}, // overrides match by prefix too
		{"gpt-4o", llm.Usage{InputTokens: million, OutputTokens: million}, 1 + 2},
		{"gpt-4o-mini", llm.Usage{InputTokens: million}, 0.15}, // untouched
		{"claude-custom", llm.Usage{CacheReadInputTokens: million, CacheCreationInputTokens: million}, 0.2 + 2.5},
		{"gpt-custom", llm.Usage{CacheReadInputTokens: million, CacheCreationInputTokens: million}, 1 + 2},
		{"qwen-custom", llm.Usage{CacheReadInputTokens: million, CacheCreationInputTokens: million}, 0.2 + 1.25},
		{"local-llm", llm.Usage{CacheReadInputTokens: million, CacheCreationInputTokens: million}, 0.2 + 0.2},
		{"scripted-priced", llm.Usage{InputTokens: million}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			if got := table.Cost(tt.model, tt.usage); !near(got, tt.want) {
				t.Errorf("Cost(%q) = %v, want %v", tt.model, got, tt.want)
			}
		})
	}
	// With does not change the table it was called on.
	if got := base.Cost("gpt-4o", llm.Usage{InputTokens: million}); !near(got, 2.50) {
		t.Errorf("base table changed by With: gpt-4o input costs %v, want 2.50", got)
	}
	if _, ok := base.Lookup("my-model"); ok {
		t.Error("base table gained my-model")
	}
	if got := base.With(nil); got.Cost("gpt-4o", llm.Usage{InputTokens: million}) != 2.50 {
		t.Error("With(nil) changed the table")
	}
}

func TestZeroTable(t *testing.T) {
	var table Table
	if got := table.Cost("gpt-4o", llm.Usage{InputTokens: million}); got != 0 {
		t.Errorf("zero Table Cost = %v, want 0", got)
	}
	if got := table.With(map[string]Price{"m": {Input: 1}}).Cost("m", llm.Usage{InputTokens: million}); got != 1 {
		t.Errorf("zero Table With: Cost = %v, want 1", got)
	}
}

// TestSettingsShape decodes the settings form that docs/pricing.md documents, as viper
// would (YAML into a map, then mapstructure into the Go types).
func TestSettingsShape(t *testing.T) {
	const settings = `
prices:
  my-model: {input: 0.5, output: 1.5, cache_read: 0.05, cache_write: 0.6}
  gpt-4o:
    input: 2
    output: 8
`
	var raw map[string]any
	if err := yaml.Unmarshal([]byte(settings), &raw); err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Prices map[string]Price `mapstructure:"prices"`
	}
	if err := mapstructure.Decode(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	if want := (Price{Input: 0.5, Output: 1.5, CacheRead: 0.05, CacheWrite: 0.6}); cfg.Prices["my-model"] != want {
		t.Errorf("my-model = %+v, want %+v", cfg.Prices["my-model"], want)
	}
	var direct struct {
		Prices map[string]Price `yaml:"prices"`
	}
	if err := yaml.Unmarshal([]byte(settings), &direct); err != nil {
		t.Fatal(err)
	}
	if direct.Prices["gpt-4o"] != (Price{Input: 2, Output: 8}) {
		t.Errorf("yaml gpt-4o = %+v", direct.Prices["gpt-4o"])
	}
	table := Default().With(cfg.Prices)
	if got := table.Cost("gpt-4o", llm.Usage{CacheReadInputTokens: million}); !near(got, 1) {
		t.Errorf("gpt-4o override without cache_read: cached million costs %v, want 1 (0.5 × input)", got)
	}
}

func BenchmarkCost(b *testing.B) {
	table := Default()
	u := llm.Usage{InputTokens: 1200, OutputTokens: 300, CacheReadInputTokens: 4000}
	for b.Loop() {
		table.Cost("claude-sonnet-4-5-20250929", u)
	}
}

func TestKnownAndWarnUnknown(t *testing.T) {
	t.Parallel()
	tab := Default().With(map[string]Price{"acme-small": {Input: 1, Output: 1}})
	for model, want := range map[string]bool{
		"gpt-4o": true, "claude-sonnet-4-20250514": true, "acme-small": true, "scripted-demo": true,
		"acme-large": false, "gpt-5.1": false, "": false,
	} {
		if got := tab.Known(model); got != want {
			t.Errorf("Known(%q) = %v, want %v", model, got, want)
		}
	}
	var (
		mu   sync.Mutex
		seen []string
	)
	warned := tab.WarnUnknown(func(m string) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, m)
	}).With(map[string]Price{"acme-medium": {Input: 2}}) // the hook survives With
	u := llm.Usage{InputTokens: 1_000_000}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for _, m := range []string{"acme-large", "gpt-4o", "scripted", "acme-medium", "acme-large", "other"} {
				warned.Cost(m, u)
			}
		})
	}
	wg.Wait()
	slices.Sort(seen)
	if !slices.Equal(seen, []string{"acme-large", "other"}) {
		t.Errorf("reported %v, want each unknown model once", seen)
	}
	if c := warned.Cost("acme-medium", u); c != 2 {
		t.Errorf("acme-medium costs %v", c)
	}
	if c := tab.Cost("acme-large", u); c != 0 {
		t.Errorf("an unknown model costs %v", c)
	}
}
