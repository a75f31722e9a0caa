// Package price turns token usage into an estimated cost in US dollars.
//
// A Table maps model names to per-token prices. Default returns list prices for a
// handful of common models; settings can override or add models with Table.With. A
// model name is matched exactly, or else by the longest known name that it extends at a
// separator ("gpt-4o-mini-2024-07-18" is priced as "gpt-4o-mini", not "gpt-4o"). Unknown
// models, and the scripted provider's models, cost 0.
//
// Costs are estimates from list prices: they ignore long-context surcharges, batch and
// regional rates, reasoning-mode output rates and negotiated discounts. See
// docs/pricing.md.
package price

import (
	"strings"
	"sync"

	"github.com/stoke-cli/stoke/agents/llm"
)

// Price is what one model costs, in USD per million tokens.
//
// The tags let settings write it as
//
//	prices:
//	  my-model: {input: 0.5, output: 1.5, cache_read: 0.05, cache_write: 0.6}
type Price struct {
	// Input is the price of uncached input tokens (llm.Usage.InputTokens).
	Input float64 `json:"input" yaml:"input" mapstructure:"input"`
	// Output is the price of output tokens, reasoning tokens included.
	Output float64 `json:"output" yaml:"output" mapstructure:"output"`
	// CacheRead is the price of input tokens read from the provider's prompt cache
	// (llm.Usage.CacheReadInputTokens).
	CacheRead float64 `json:"cache_read" yaml:"cache_read" mapstructure:"cache_read"`
	// CacheWrite is the price of input tokens written to the prompt cache
	// (llm.Usage.CacheCreationInputTokens).
	CacheWrite float64 `json:"cache_write" yaml:"cache_write" mapstructure:"cache_write"`
}

// Cost returns the cost of u at p, in USD.
func (p Price) Cost(u llm.Usage) float64 {
	return (float64(u.InputTokens)*p.Input +
		float64(u.OutputTokens)*p.Output +
		float64(u.CacheReadInputTokens)*p.CacheRead +
		float64(u.CacheCreationInputTokens)*p.CacheWrite) / 1e6
}

// Table prices models by name. The zero Table knows no model. A Table is immutable:
// With returns a new one, so a Table is safe for concurrent use.
type Table struct {
	prices  map[string]Price
	unknown *unknownHook // nil: unknown models cost 0 silently
}

// unknownHook reports each model name a table cannot price, once.
type unknownHook struct {
	report func(model string)
	seen   sync.Map // model name → struct{}
}

// defaultPrices returns list prices in USD per million tokens as of November 2026
// (standard tier, pay as you go, shortest context tier; for Qwen the international
// (Singapore) deployment, non-thinking mode). Providers change them: they are estimates,
// not invoices, and settings override them (see Table.With and docs/pricing.md).
//
// Cache prices per family:
//   - OpenAI: cached input is 0.5 × input for the gpt-4o family and o3-mini, 0.25 × for
//     gpt-4.1, o3 and o4-mini, 0.1 × for gpt-5; there is no cache-write charge
//     (written tokens are billed as input).
//   - Anthropic: cache reads are 0.1 × input, 5-minute cache writes 1.25 × input.
//   - Qwen: implicit cache hits are 0.2 × input; explicit cache creation is 1.25 × input.
//
// It is a function, not a package variable, so that importing the package costs no
// init work and no caller can mutate the defaults.
func defaultPrices() map[string]Price {
	return map[string]Price{
		// OpenAI.
		"gpt-4o":       {Input: 2.50, Output: 10.00, CacheRead: 1.25, CacheWrite: 2.50},
		"gpt-4o-mini":  {Input: 0.15, Output: 0.60, CacheRead: 0.075, CacheWrite: 0.15},
		"gpt-4.1":      {Input: 2.00, Output: 8.00, CacheRead: 0.50, CacheWrite: 2.00},
		"gpt-4.1-mini": {Input: 0.40, Output: 1.60, CacheRead: 0.10, CacheWrite: 0.40},
		"gpt-4.1-nano": {Input: 0.10, Output: 0.40, CacheRead: 0.025, CacheWrite: 0.10},
		"gpt-5":        {Input: 1.25, Output: 10.00, CacheRead: 0.125, CacheWrite: 1.25},
		"gpt-5-mini":   {Input: 0.25, Output: 2.00, CacheRead: 0.025, CacheWrite: 0.25},
		"gpt-5-nano":   {Input: 0.05, Output: 0.40, CacheRead: 0.005, CacheWrite: 0.05},
		"o3":           {Input: 2.00, Output: 8.00, CacheRead: 0.50, CacheWrite: 2.00},
		"o3-mini":      {Input: 1.10, Output: 4.40, CacheRead: 0.55, CacheWrite: 1.10},
		"o4-mini":      {Input: 1.10, Output: 4.40, CacheRead: 0.275, CacheWrite: 1.10},

		// Anthropic. Opus 4 and 4.1 kept the Claude 3 Opus price; Opus 4.5 and later cost a
		// third of it, so they are listed one by one (longest match wins).
		"claude-opus-4":     {Input: 15.00, Output: 75.00, CacheRead: 1.50, CacheWrite: 18.75},
		"claude-opus-4-1":   {Input: 15.00, Output: 75.00, CacheRead: 1.50, CacheWrite: 18.75},
		"claude-opus-4-5":   {Input: 5.00, Output: 25.00, CacheRead: 0.50, CacheWrite: 6.25},
		"claude-opus-4-6":   {Input: 5.00, Output: 25.00, CacheRead: 0.50, CacheWrite: 6.25},
		"claude-opus-4-7":   {Input: 5.00, Output: 25.00, CacheRead: 0.50, CacheWrite: 6.25},
		"claude-opus-4-8":   {Input: 5.00, Output: 25.00, CacheRead: 0.50, CacheWrite: 6.25},
		"claude-sonnet-4":   {Input: 3.00, Output: 15.00, CacheRead: 0.30, CacheWrite: 3.75},
		"claude-3-7-sonnet": {Input: 3.00, Output: 15.00, CacheRead: 0.30, CacheWrite: 3.75},
		"claude-haiku-4-5":  {Input: 1.00, Output: 5.00, CacheRead: 0.10, CacheWrite: 1.25},
		"claude-3-5-haiku":  {Input: 0.80, Output: 4.00, CacheRead: 0.08, CacheWrite: 1.00},

		// Qwen (Alibaba Cloud Model Studio).
		"qwen-max":   {Input: 1.60, Output: 6.40, CacheRead: 0.32, CacheWrite: 2.00},
		"qwen-plus":  {Input: 0.40, Output: 1.20, CacheRead: 0.08, CacheWrite: 0.50},
		"qwen-turbo": {Input: 0.05, Output: 0.20, CacheRead: 0.01, CacheWrite: 0.0625},
	}
}

// freePrefix starts the names of models that never cost anything: the scripted
// provider's ("scripted", "scripted-demo", ...). It wins over any table entry.
const freePrefix = "scripted"

// Default returns the built-in list prices.
func Default() Table {
	return Table{prices: defaultPrices()}
}

// With returns a table with overrides added to t; an override replaces the whole entry
// of its model name. Names are matched case-insensitively.
//
// An override may leave out the cache prices (zero): they are then derived from its
// input price by the family rule its name implies: "claude…" reads at 0.1 × and writes
// at 1.25 × input; "gpt-…", "o1…", "o3…", "o4…" read at 0.5 × input; "qwen…" reads at
// 0.2 × and writes at 1.25 × input; anything else pays the input price for both. A
// missing cache-write price is the input price outside the Anthropic and Qwen families.
func (t Table) With(overrides map[string]Price) Table {
	if len(overrides) == 0 {
		return t
	}
	prices := make(map[string]Price, len(t.prices)+len(overrides))
	for name, p := range t.prices {
		prices[name] = p
	}
	for name, p := range overrides {
		name = strings.ToLower(strings.TrimSpace(name))
		if name == "" {
			continue
		}
		read, write := cacheRule(name)
		if p.CacheRead == 0 {
			p.CacheRead = read * p.Input
		}
		if p.CacheWrite == 0 {
			p.CacheWrite = write * p.Input
		}
		prices[name] = p
	}
	return Table{prices: prices, unknown: t.unknown}
}

// WarnUnknown returns t with a hook: the first time Cost meets a model that t cannot
// price (see Known), report is called with its name, so that the caller can say once
// that the run's cost is understated. report may be called from several goroutines.
func (t Table) WarnUnknown(report func(model string)) Table {
	t.unknown = &unknownHook{report: report}
	return t
}

// Known reports whether t prices model: a model of the table, or a free one (the
// scripted provider's).
func (t Table) Known(model string) bool {
	if isFree(model) {
		return true
	}
	_, ok := t.Lookup(model)
	return ok
}

func isFree(model string) bool {
	name := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	return strings.HasPrefix(name, freePrefix)
}

// cacheRule returns the cache-read and cache-write multipliers of input price for the
// provider family a model name belongs to.
func cacheRule(name string) (read, write float64) {
	switch {
	case strings.HasPrefix(name, "claude"):
		return 0.1, 1.25
	case strings.HasPrefix(name, "qwen"):
		return 0.2, 1.25
	case strings.HasPrefix(name, "gpt-"), strings.HasPrefix(name, "o1"),
		strings.HasPrefix(name, "o3"), strings.HasPrefix(name, "o4"):
		return 0.5, 1
	default:
		return 1, 1
	}
}

// Lookup returns the price of model and whether the table knows it. The name is
// lowercased and a leading routing path ("openai/gpt-4o" as OpenRouter writes it) is
// dropped; then an exact entry wins, else the longest entry that the name extends at a
// '-', '@' or ':' (a dated snapshot such as "claude-sonnet-4-20250514", a Vertex
// "claude-opus-4@20250514", an alias such as "qwen-plus-latest"). A name that extends
// an entry with anything else ("gpt-5.1" over "gpt-5") is not matched: it names another
// model.
func (t Table) Lookup(model string) (Price, bool) {
	name := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	if name == "" || strings.HasPrefix(name, freePrefix) {
		return Price{}, false
	}
	if p, ok := t.prices[name]; ok {
		return p, true
	}
	var (
		best  Price
		found int // length of the best match so far
	)
	for key, p := range t.prices {
		if len(key) > found && len(name) > len(key) && strings.HasPrefix(name, key) && isSeparator(name[len(key)]) {
			best, found = p, len(key)
		}
	}
	return best, found > 0
}

// Cost returns the estimated cost in USD of usage u on model; 0 when the model is
// unknown (reported once to the WarnUnknown hook) or free (scripted).
func (t Table) Cost(model string, u llm.Usage) float64 {
	p, ok := t.Lookup(model)
	if !ok {
		if h := t.unknown; h != nil && model != "" && !isFree(model) {
			if _, seen := h.seen.LoadOrStore(model, struct{}{}); !seen {
				h.report(model)
			}
		}
		return 0
	}
	return p.Cost(u)
}

func isSeparator(c byte) bool { return c == '-' || c == '@' || c == ':' }
