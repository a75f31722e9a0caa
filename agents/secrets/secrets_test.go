package secrets

import (
	"slices"
	"strings"
	"testing"
)

func TestEnviron(t *testing.T) {
	t.Parallel()
	env := []string{
		"PATH=/usr/bin", "OPENAI_API_KEY=sk-openai", "ANTHROPIC_API_KEY=sk-ant", "STOKE_API_KEY=sk-stoke",
		"MY_KEY=sk-mine", "AWS_SECRET_ACCESS_KEY=x", "AWS_REGION=eu", "GITHUB_TOKEN=ghp", "HOME=/home/u",
		"OTEL_EXPORTER_OTLP_HEADERS=api-key=otel-secret", "OTEL_EXPORTER_OTLP_TRACES_HEADERS=x-team=t",
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://c:4318",
	}
	tests := []struct {
		name string
		p    *Policy
		want []string
	}{
		{"nil policy drops the provider keys and the OTLP headers", nil,
			[]string{"PATH=/usr/bin", "MY_KEY=sk-mine", "AWS_SECRET_ACCESS_KEY=x", "AWS_REGION=eu", "GITHUB_TOKEN=ghp", "HOME=/home/u",
				"OTEL_EXPORTER_OTLP_ENDPOINT=http://c:4318"}},
		{"names and patterns", New(Config{Deny: []string{"MY_KEY", "AWS_*", "*_TOKEN", " "}}),
			[]string{"PATH=/usr/bin", "HOME=/home/u", "OTEL_EXPORTER_OTLP_ENDPOINT=http://c:4318"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := tt.p.Environ(env)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Environ = %q\nwant %q", got, tt.want)
			}
		})
	}
	if len(env) != 12 || env[1] != "OPENAI_API_KEY=sk-openai" {
		t.Error("Environ changed its argument")
	}
}

func TestRedact(t *testing.T) {
	t.Parallel()
	p := New(Config{Values: []string{"sk-live-0123456789", "short", "", "sk-live-0123456789-long"}})
	tests := []struct{ in, want string }{
		{"no secret here", "no secret here"},
		{"OPENAI_API_KEY=sk-live-0123456789\n", "OPENAI_API_KEY=[REDACTED]\n"},
		{"a sk-live-0123456789-long b", "a [REDACTED] b"},
		{"twice sk-live-0123456789sk-live-0123456789", "twice [REDACTED][REDACTED]"},
		{"short stays: short", "short stays: short"},
	}
	for _, tt := range tests {
		if got := p.Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	var nilPolicy *Policy
	if got := nilPolicy.Redact("sk-live-0123456789"); got != "sk-live-0123456789" {
		t.Errorf("nil policy redacted: %q", got)
	}
	if got := New(Config{}).Redact("x"); got != "x" {
		t.Errorf("empty policy: %q", got)
	}
}

func TestDenies(t *testing.T) {
	t.Parallel()
	p := New(Config{Deny: []string{"CI_*"}})
	for name, want := range map[string]bool{
		"OPENAI_API_KEY": true, "STOKE_API_KEY": true, "CI_JOB_TOKEN": true, "CI": false, "PATH": false,
		"OTEL_EXPORTER_OTLP_HEADERS": true, "OTEL_EXPORTER_OTLP_METRICS_HEADERS": true, "OTEL_EXPORTER_OTLP_ENDPOINT": false,
	} {
		if got := p.Denies(name); got != want {
			t.Errorf("Denies(%q) = %v, want %v", name, got, want)
		}
	}
	if !strings.Contains(strings.Join(ProviderKeys(), ","), "ANTHROPIC_API_KEY") {
		t.Error("ProviderKeys lacks ANTHROPIC_API_KEY")
	}
}
