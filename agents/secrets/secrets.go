// Package secrets keeps credentials out of the processes stoke starts and out of what it
// records. One Policy serves every child process (the shell tool, command hooks, MCP stdio
// servers) and every tool result:
//
//   - Environ drops the provider keys (ProviderKeys), the OTLP exporter headers
//     (TelemetryKeys), the variable the run's key came from and the user's env-deny
//     patterns from an environment before a child gets it;
//   - Redact replaces the values of those keys with [REDACTED] in text (tool results,
//     hook output) before it reaches the model, events, transcripts or traces.
//
// A nil *Policy is usable: it drops the provider keys and the OTLP headers, and redacts
// nothing.
package secrets

import (
	"path"
	"slices"
	"strings"
)

// Redacted replaces a secret value in text.
const Redacted = "[REDACTED]"

// MinRedactLen is the shortest value Redact replaces: a shorter "secret" would turn up
// inside ordinary text and mangle it, and is no secret worth the name.
const MinRedactLen = 8

// ProviderKeys are the variables that hold a provider's API key. They are always kept out
// of child processes.
func ProviderKeys() []string {
	return []string{"STOKE_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"}
}

// TelemetryKeys are the variables that hold an OpenTelemetry collector's credentials: the
// OTLP exporter headers (api keys, authorization), which stoke reads to export its
// telemetry. Like the provider keys they are always kept out of child processes.
func TelemetryKeys() []string {
	return []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
		"OTEL_EXPORTER_OTLP_METRICS_HEADERS", "OTEL_EXPORTER_OTLP_LOGS_HEADERS"}
}

// alwaysDenied are the variables every Policy keeps out of child processes.
func alwaysDenied() []string { return append(ProviderKeys(), TelemetryKeys()...) }

// Policy says which environment variables a child process never sees and which values
// are redacted from text. It is immutable and safe for concurrent use.
type Policy struct {
	names    []string // exact variable names
	patterns []string // path.Match patterns over variable names
	redact   *strings.Replacer
}

// Config is what New builds a Policy from.
type Config struct {
	// Deny are more variables to keep out of child processes: exact names or
	// path.Match patterns ("AWS_*", "*_TOKEN"), as env-deny lists them. The provider
	// keys are always denied.
	Deny []string
	// Values are secret values to redact (the run's API key). Values shorter than
	// MinRedactLen are ignored.
	Values []string
}

// New returns the Policy of c.
func New(c Config) *Policy {
	p := &Policy{names: alwaysDenied()}
	for _, d := range c.Deny {
		switch d = strings.TrimSpace(d); {
		case d == "":
		case strings.ContainsAny(d, `*?[\`):
			p.patterns = append(p.patterns, d)
		case !slices.Contains(p.names, d):
			p.names = append(p.names, d)
		}
	}
	var pairs []string
	values := slices.Clone(c.Values)
	// Longest first, so that a key that contains another is replaced whole.
	slices.SortFunc(values, func(a, b string) int { return len(b) - len(a) })
	for _, v := range slices.Compact(values) {
		if len(v) >= MinRedactLen {
			pairs = append(pairs, v, Redacted)
		}
	}
	if len(pairs) > 0 {
		p.redact = strings.NewReplacer(pairs...)
	}
	return p
}

// Denies reports whether the variable name is kept out of child processes.
func (p *Policy) Denies(name string) bool {
	if p == nil {
		return slices.Contains(alwaysDenied(), name)
	}
	if slices.Contains(p.names, name) {
		return true
	}
	for _, pat := range p.patterns {
		if ok, _ := path.Match(pat, name); ok {
			return true
		}
	}
	return false
}

// Environ returns env (NAME=value entries, as os.Environ gives them) without the denied
// variables. env itself is not changed.
func (p *Policy) Environ(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !p.Denies(name) {
			out = append(out, kv)
		}
	}
	return out
}

// Redact returns s with every secret value replaced by [REDACTED].
func (p *Policy) Redact(s string) string {
	if p == nil || p.redact == nil {
		return s
	}
	return p.redact.Replace(s)
}
