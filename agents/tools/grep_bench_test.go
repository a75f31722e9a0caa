package tools

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// BenchmarkGrep50k searches a generated tree of 50,000 source files with the grep tool
// and, for comparison, with `git grep -n -E` over the same tree as a git repository (the
// files added to the index). Both report ns/op and cpu-ns/op, so the ratios read off one
// run; "stoke/regexp-capped" shows the stop at the default cap of 500 lines:
//
//	go test -run '^$' -bench Grep50k -benchtime 5x ./agents/tools
func BenchmarkGrep50k(b *testing.B) {
	const files, every = 50_000, 250 // one file in every 250 holds the needle
	dir := b.TempDir()
	genTree(b, dir, files, every)
	// Limits high enough that both tools find every line; "capped" shows the early stop.
	full, err := NewWorkspace(dir, ModePlan, WithLimits(Limits{GrepMatches: 100_000, OutputChars: 1 << 30}))
	if err != nil {
		b.Fatal(err)
	}
	capped, err := full.WithMode(ModePlan)
	if err != nil {
		b.Fatal(err)
	}
	capped.limits = Limits{}.withDefaults()
	const literal, regexp = "TODO needle", `func F[0-9]+7\(`
	want := map[string]int{literal: files / every, regexp: files/10 - 1} // F7 has no digit before the 7
	for _, bm := range []struct {
		name, pattern string
		w             *Workspace
		want          int
	}{
		{"stoke/literal", literal, full, want[literal]},
		{"stoke/regexp", regexp, full, want[regexp]},
		{"stoke/regexp-capped", regexp, capped, capped.limits.GrepMatches + 1},
	} {
		b.Run(bm.name, func(b *testing.B) {
			in := []byte(fmt.Sprintf(`{"pattern":%q}`, bm.pattern))
			tool := grepTool{bm.w}
			n := 0
			defer reportCPU(b)()
			for b.Loop() {
				res := tool.Run(b.Context(), Call{Name: NameGrep, Input: in})
				if res.IsError {
					b.Fatal(res.Content)
				}
				n = strings.Count(res.Content, "\n") + 1
			}
			if n != bm.want {
				b.Fatalf("found %d lines, want %d", n, bm.want)
			}
		})
	}
	if _, err := exec.LookPath("git"); err != nil {
		b.Log("git is not installed: no git grep comparison")
		return
	}
	git := func(args ...string) []byte {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("git %v: %v", args, err)
		}
		return out
	}
	git("init", "-q")
	git("add", "-A")
	for _, bm := range []struct{ name, pattern string }{{"git/literal", literal}, {"git/regexp", regexp}} {
		b.Run(bm.name, func(b *testing.B) {
			n := 0
			defer reportCPU(b)()
			for b.Loop() {
				n = bytes.Count(git("grep", "-n", "-E", bm.pattern), []byte{'\n'})
			}
			if n != want[bm.pattern] {
				b.Fatalf("git grep found %d lines, want %d", n, want[bm.pattern])
			}
		})
	}
}

// reportCPU reports the CPU time (user and system, children included) per op, which varies
// less than the wall time on a busy machine; call the function it returns at the end.
func reportCPU(b *testing.B) func() {
	start := cpuTime()
	return func() {
		if used := cpuTime() - start; used > 0 {
			b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/op")
		}
	}
}

// genTree writes n deterministic Go-like files under dir, 100 to a directory, two levels
// deep; file i holds "TODO needle" when i%every == 0.
func genTree(b *testing.B, dir string, n, every int) {
	b.Helper()
	dirOf := func(i int) string {
		return filepath.Join(dir, fmt.Sprintf("pkg%02d", i/1000), fmt.Sprintf("sub%d", i/100%10))
	}
	for i := 0; i < n; i += 100 {
		if err := os.MkdirAll(dirOf(i), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	workers := runtime.GOMAXPROCS(0) * 4
	for wk := range workers {
		wg.Go(func() {
			var buf bytes.Buffer
			for i := wk; i < n; i += workers {
				buf.Reset()
				fmt.Fprintf(&buf, "package pkg%02d\n\nimport \"fmt\"\n\n// F%d is generated function number %d.\n", i/1000, i, i)
				for j := range 12 {
					fmt.Fprintf(&buf, "// line %d of file %d: the quick brown fox jumps over the lazy dog.\n", j, i)
				}
				if i%every == 0 {
					fmt.Fprintf(&buf, "// TODO needle %d\n", i)
				}
				fmt.Fprintf(&buf, "func F%d(x int) int {\n\tfmt.Println(x)\n\treturn x + %d\n}\n", i, i)
				if err := os.WriteFile(filepath.Join(dirOf(i), fmt.Sprintf("f%05d.go", i)), buf.Bytes(), 0o644); err != nil {
					select {
					case errs <- err:
					default:
					}
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
}
