package cmd

import (
	"errors"
	"slices"
	"testing"
)

// FuzzSettings parses arbitrary settings files: a file is taken or refused with a usage
// error, never a panic; what is taken holds only known keys a file may set, each with a
// value of its kind; and narrowing it as an untrusted project's keeps no key of the home
// settings only nor of trusted projects only.
func FuzzSettings(f *testing.F) {
	for _, seed := range []string{
		"model: gpt-4o\nmax-turns: 20\ntimeout: 10m\napproval-mode: plan\n",
		"provider: openai\nbase-url: http://x/v1\napi-key: sk-x\nscenario: s.yaml\n",
		"hooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks: [{type: command, command: 'echo hi'}]\n",
		"mcp-servers:\n  fs: {command: npx, args: [-y, server]}\nmodel-aliases: {fast: gpt-4o-mini}\n",
		"env-deny: [A, B]\ntrusted-projects: [/w]\nprices: {m: {input: 1}}\n",
		"max-answer-bytes: 0\nrequest-timeout: 0\nmax-background: -1\nno-background-agents: yes\n",
		"prompt: hi\nresume: x\nUnknown: 1\nMODEL: Upper\n",
		"[1, 2]\n", "a: [\n", "model:\n", "timeout: 90\n", "&a [*a]\n",
	} {
		f.Add([]byte(seed))
	}
	all := settings()
	f.Fuzz(func(t *testing.T, data []byte) {
		m, ignored, err := parseSettings(data, "/w/.stoke/settings.yaml", all)
		if err != nil {
			var u *usageError
			if !errors.As(err, &u) || m != nil {
				t.Fatalf("refused with %v (%T) and %v", err, err, m)
			}
			return
		}
		for k, v := range m {
			i := slices.IndexFunc(all, func(s setting) bool { return s.key == k })
			if i < 0 || all[i].perRun {
				t.Fatalf("took key %q, which a file may not set", k)
			}
			if err := checkValue(all[i].kind, v); err != nil {
				t.Fatalf("took %q = %v: %v", k, v, err)
			}
		}
		for _, ig := range ignored {
			if _, ok := m[ig.key]; ok {
				t.Fatalf("key %q both taken and ignored", ig.key)
			}
		}
		narrowed, _ := narrowProject("/w/.stoke/settings.yaml", m, nil, all, false, "~/.stoke/settings.yaml")
		for k := range narrowed {
			s := all[slices.IndexFunc(all, func(s setting) bool { return s.key == k })]
			if s.scope == scopeHome || s.scope == scopeTrusted {
				t.Fatalf("an untrusted project kept %q", k)
			}
		}
	})
}
