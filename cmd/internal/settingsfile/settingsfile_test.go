package settingsfile

import (
	"errors"
	"slices"
	"testing"
)

// keys is a table of every kind, with a per-run key, as package cmd's table has them.
var keys = []Key{
	{Name: "model", Kind: String}, {Name: "max-turns", Kind: Int}, {Name: "bare", Kind: Bool, PerRun: true},
	{Name: "verbose", Kind: Bool}, {Name: "timeout", Kind: Duration}, {Name: "hooks", Kind: Map},
	{Name: "env-deny", Kind: List}, {Name: "prompt", Kind: String, PerRun: true},
}

func TestParse(t *testing.T) {
	t.Parallel()
	out, ignored, err := Parse([]byte("MODEL: gpt\nmax-turns: 3\ntimeout: 0\nprompt: hi\nnope: 1\nverbose:\nenv-deny: [A]\n"), keys)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 4 || out["model"] != "gpt" || out["max-turns"] != 3 || out["timeout"] != 0 {
		t.Errorf("out = %v", out)
	}
	if want := []Ignored{{Key: "nope"}, {Key: "prompt", PerRun: true}}; !slices.Equal(ignored, want) {
		t.Errorf("ignored = %v, want %v", ignored, want)
	}
	var ve *ValueError
	if _, _, err := Parse([]byte("timeout: 90\n"), keys); !errors.As(err, &ve) || ve.Error() != "timeout: want a duration with a unit, like 90s or 10m" {
		t.Errorf("a bad value: %v", err)
	}
	if _, _, err := Parse([]byte("a: [\n"), keys); !errors.Is(err, ErrMalformed) {
		t.Errorf("malformed YAML: %v", err)
	}
}

// FuzzParse parses arbitrary settings files: never a panic; a file is taken or refused,
// with ErrMalformed or a *ValueError; what is taken holds only known keys a file may set,
// in lower case, each with a value of its kind; no key is both taken and left out.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"model: gpt-4o\nmax-turns: 20\ntimeout: 10m\nverbose: true\n",
		"hooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks: [{type: command, command: 'echo hi'}]\n",
		"env-deny: [A, B]\nhooks: {x: 1}\n", "env-deny: [[1]]\n", "hooks: [1]\n",
		"max-turns: 0x10\nverbose: yes\ntimeout: 0\n", "max-turns: 99999999999999999999\n",
		"prompt: hi\nbare: true\nUnknown: 1\nMODEL: Upper\nModel: again\n",
		"[1, 2]\n", "a: [\n", "model:\n", "timeout: 90\n", "&a [*a]\n", "a: &x {b: *x}\n", "!!binary 'AA=='\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, ignored, err := Parse(data, keys)
		if err != nil {
			var ve *ValueError
			if !errors.Is(err, ErrMalformed) && !errors.As(err, &ve) {
				t.Fatalf("refused with %v (%T)", err, err)
			}
			return
		}
		for k, v := range out {
			i := slices.IndexFunc(keys, func(key Key) bool { return key.Name == k })
			if i < 0 || keys[i].PerRun {
				t.Fatalf("took key %q, which a file may not set", k)
			}
			if err := Check(keys[i].Kind, v); err != nil {
				t.Fatalf("took %q = %v: %v", k, v, err)
			}
		}
		for _, ig := range ignored {
			i := slices.IndexFunc(keys, func(key Key) bool { return key.Name == ig.Key })
			if _, ok := out[ig.Key]; ok || (i >= 0 && !keys[i].PerRun) {
				t.Fatalf("key %q both known and left out (%+v)", ig.Key, ig)
			}
		}
	})
}
