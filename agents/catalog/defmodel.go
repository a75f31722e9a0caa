package catalog

import (
	"fmt"
	"strings"
)

// Agent files name models the way their own tool resolves them: Claude Code's files say
// sonnet, opus or haiku (a family, which Claude Code maps to its current model), Qwen
// Code's say fast (the configured fast model) or authType:model-id, and both say inherit.
// None of these is a model name a provider knows, so a definition's model field is
// resolved when the catalog is built (ResolveModel), through the model-aliases map of
// the settings, and the registry only ever sees a model name or "" (the parent's).

// IsModelAlias reports whether name stands for a model rather than naming one: Claude
// Code's aliases (sonnet, opus, haiku, default, opusplan, best, and any of them with a
// [1m] suffix) and Qwen Code's fast; case does not matter. inherit is handled apart.
func IsModelAlias(name string) bool {
	switch strings.TrimSuffix(strings.ToLower(strings.TrimSpace(name)), "[1m]") {
	case "sonnet", "opus", "haiku", "default", "opusplan", "best", "fast":
		return true
	}
	return false
}

// modelProvider reports whether p may qualify a model as provider:model: stoke's
// providers, and Qwen Code's auth types. A colon after anything else is part of the
// model name (Ollama's llama3:8b).
func modelProvider(p string) bool {
	switch strings.ToLower(p) {
	case "openai", "anthropic", "scripted", "gemini", "vertex-ai", "qwen-oauth":
		return true
	}
	return false
}

// ModelResolution is what became of a definition's model field.
type ModelResolution struct {
	// Written is the field as the file wrote it ("" when absent).
	Written string `json:"written,omitempty"`
	// Model is the model name the provider is sent; "" means the parent's model.
	Model string `json:"model,omitempty"`
	// Alias names the model-aliases entry used ("" when none was).
	Alias string `json:"alias,omitempty"`
	// Problem says why the field could not be honoured, so that the agent falls back to
	// the parent's model ("" when it was).
	Problem string `json:"problem,omitempty"`
}

// ResolveModel turns a definition's model field into a model name for provider (the
// run's): an entry of aliases (exact key first, then ignoring case) wins; "" and inherit
// are the parent's model; an alias word (IsModelAlias) that aliases does not map, or a
// provider:model for another provider, falls back to the parent's model with a Problem;
// provider:model for the run's provider is model; anything else is a model name. An
// aliases value of inherit (or "") means the parent's model, and one that is itself an
// alias word is a Problem: an alias is never sent to the provider.
func ResolveModel(written string, aliases map[string]string, provider string) ModelResolution {
	w := strings.TrimSpace(written)
	r := ModelResolution{Written: w}
	if w == "" {
		return r
	}
	if key, val, ok := lookupAlias(aliases, w); ok {
		r.Alias = key
		switch val = strings.TrimSpace(val); {
		case strings.EqualFold(val, "inherit"):
		case IsModelAlias(val):
			r.Problem = fmt.Sprintf("model-aliases maps %q to %q, which is an alias too", key, val)
		default:
			r.Model = val
		}
		return r
	}
	if strings.EqualFold(w, "inherit") {
		return r
	}
	if IsModelAlias(w) {
		r.Problem = fmt.Sprintf("model %q is an alias that model-aliases does not map", w)
		return r
	}
	if p, m, ok := strings.Cut(w, ":"); ok && modelProvider(p) {
		if !strings.EqualFold(p, provider) {
			r.Problem = fmt.Sprintf("model %q is for provider %s; this run uses %s", w, p, providerName(provider))
			return r
		}
		inner := ResolveModel(m, aliases, provider)
		inner.Written = w
		return inner
	}
	r.Model = w
	return r
}

func providerName(p string) string {
	if p == "" {
		return "another"
	}
	return p
}

// lookupAlias finds name among the keys of aliases: the same key, else one that differs
// only in case (the lowest such key, so that the answer does not depend on map order).
func lookupAlias(aliases map[string]string, name string) (key, val string, ok bool) {
	if v, ok := aliases[name]; ok {
		return name, v, true
	}
	for k, v := range aliases {
		if strings.EqualFold(k, name) && (!ok || k < key) {
			key, val, ok = k, v, true
		}
	}
	return key, val, ok
}
