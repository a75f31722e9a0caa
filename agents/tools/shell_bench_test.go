package tools

import (
	"testing"

	"github.com/stoke-cli/stoke/agents/sandbox"
)

// BenchmarkShellTrue is one shell call of `true`: run by stoke itself (--sandbox off),
// and by a sandbox helper (workspace-write: a re-executed process, its Landlock ruleset
// and seccomp filter, the guard's checks). The ratio of the two is the sandbox's cost
// per command; the helper here is the test binary, smaller than stoke's (e2e
// BenchmarkProcess ten-true measures the real one).
func BenchmarkShellTrue(b *testing.B) { benchShellTrue(b) }

// BenchmarkShellTrueInTerminal is the same call run as an ACP client's terminal runs it
// (execTerminal): the line as given with --sandbox off, and the wrapped line under
// workspace-write.
func BenchmarkShellTrueInTerminal(b *testing.B) { benchShellTrue(b, WithTerminal(execTerminal{})) }

func benchShellTrue(b *testing.B, opts ...Option) {
	for _, mode := range []sandbox.Mode{sandbox.ModeOff, sandbox.ModeWorkspaceWrite} {
		b.Run(string(mode), func(b *testing.B) {
			w, err := NewWorkspace(b.TempDir(), ModeYolo, opts...)
			if err != nil {
				b.Fatal(err)
			}
			if mode != sandbox.ModeOff {
				sb, err := sandbox.New(sandbox.Config{Mode: mode, TempRoot: b.TempDir()}, w.Root())
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _, _ = sb.Close() })
				w = w.With(WithSandbox(sb))
			}
			tool := shellTool{w: w}
			for b.Loop() {
				if res := tool.Run(b.Context(), Call{Name: NameShell, Input: []byte(`{"command":"true"}`)}); res.IsError {
					b.Fatal(res.Content)
				}
			}
		})
	}
}
