package cassette

import (
	"errors"
	"strings"
	"testing"

	"github.com/stoke-cli/stoke/agents/llm"
)

const header = `name: t
model: m1
cassette: {version: 1, seed: 00112233445566778899aabbccddeeff}
`

const entry = `  - agent: parent
    when: {step: 1}
    once: true
    call: {index: 1, seq: 1, after: 1, fingerprint: "sha256:00"}
    reply: {literal: true, text: hi}

`

func TestParseRejectsBadCassettes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, src, want string }{
		{"empty", "", "empty file"},
		{"version", strings.Replace(header, "version: 1", "version: 2", 1) + "rules:\n" + endMarker, "cassette.version 2"},
		{"seed", strings.Replace(header, "00112233445566778899aabbccddeeff", "xyz", 1) + "rules:\n" + endMarker, "cassette.seed"},
		{"volatile", strings.Replace(header, "seed:", "volatile: ['('], seed:", 1) + "rules:\n" + endMarker, "cassette.volatile"},
		{"unknown key", header + "rules:\n" + strings.Replace(entry, "once: true", "once: true\n    sometimes: true", 1) + endMarker, "sometimes"},
		{"twice", header + "rules:\n" + entry + strings.Replace(entry, "seq: 1", "seq: 2", 1) + endMarker, "recorded twice"},
		{"seq", header + "rules:\n" + entry + strings.Replace(entry, "index: 1", "index: 2", 1) + endMarker, "call.seq must be unique"},
		{"index", header + "rules:\n" + strings.Replace(entry, "index: 1", "index: 0", 1) + endMarker, "call.index"},
		{"no fingerprint", header + "rules:\n" + strings.Replace(entry, `fingerprint: "sha256:00"`, `fingerprint: ""`, 1) + endMarker, "no call.fingerprint"},
		{"tool without name", header + "rules:\n" + strings.Replace(entry, "text: hi", "tool_calls: [{input: {}}]", 1) + endMarker, "no name"},
		{"alias in input", header + "rules:\n" + strings.Replace(entry, "text: hi", "tool_calls: [{name: x, input: {a: &v 1, b: *v}}]", 1) + endMarker, "aliases"},
	} {
		_, _, err := Parse("c.yaml", []byte(tc.src))
		if !errors.Is(err, llm.ErrBadConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want ErrBadConfig mentioning %q", tc.name, err, tc.want)
		}
	}
	f, partial, err := Parse("c.yaml", []byte(header+"rules:\n"+entry+endMarker+": 1 calls\n"))
	if err != nil || partial || len(f.Rules) != 1 {
		t.Errorf("a good cassette: %v, partial=%v", err, partial)
	}
}

// FuzzParse: a cassette is a file from the repository being tested, so a stranger's: no
// input may crash the reader, and what it accepts must be replayable.
func FuzzParse(f *testing.F) {
	f.Add([]byte(header + "rules:\n" + entry + endMarker))
	f.Add([]byte(header + "rules:\n" + entry))
	f.Add([]byte(header + "rules:\n" + strings.Replace(entry, "text: hi", "tool_calls: [{name: x, id: c1, input: {a: [1, 2.5e3, null, {b: 0x1F}]}}]", 1)))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, _, err := Parse("fuzz.yaml", data)
		if err != nil {
			return
		}
		if _, err := NewReplayer(file, ReplayConfig{}); err != nil {
			t.Fatalf("Parse accepted a cassette NewReplayer rejects: %v", err)
		}
	})
}
