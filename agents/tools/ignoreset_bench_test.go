package tools

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// hostileIgnore returns an ignore file of n patterns that match none of genTree's paths:
// of every shape the index takes ("indexed"), or all of the kind matched one by one
// ("wildcards", of which maxGeneralPatterns are applied).
func hostileIgnore(n int, shape string) string {
	var b strings.Builder
	for i := range n {
		if shape == "wildcards" {
			fmt.Fprintf(&b, "*mid%05d*\n", i)
			continue
		}
		switch i % 8 {
		case 0:
			fmt.Fprintf(&b, "name%d.tmp\n", i)
		case 1:
			fmt.Fprintf(&b, "*.ext%d\n", i)
		case 2:
			fmt.Fprintf(&b, "pre%d*\n", i)
		case 3:
			fmt.Fprintf(&b, "/dir%d/\n", i)
		case 4:
			fmt.Fprintf(&b, "build%d/**\n", i)
		case 5:
			fmt.Fprintf(&b, "**/cache%d\n", i)
		case 6:
			fmt.Fprintf(&b, "doc%d/*.bak\n", i)
		default:
			fmt.Fprintf(&b, "!*.[Ll]og%d\n", i)
		}
	}
	return b.String()
}

// BenchmarkHostileGitignore runs glob and grep over 2,000 files under a .gitignore of
// 20,000 patterns and, alternately, of 20 of the same kind, and reports the time of each
// call (ns-20/op, ns-20000/op) and their ratio (x-of-20): ignore matching costs about the
// same whatever the number of patterns, and a hostile checkout cannot make search slow.
// It fails when 20,000 patterns cost more than twice what 20 do.
//
//	go test -run '^$' -bench HostileGitignore ./agents/tools
func BenchmarkHostileGitignore(b *testing.B) {
	const files = 2000
	for _, shape := range []string{"indexed", "wildcards"} {
		var ws [2]*Workspace
		for k, n := range []int{20, 20_000} {
			dir := b.TempDir()
			genTree(b, dir, files, 10)
			if err := os.WriteFile(filepath.Join(dir, ".gitignore"), []byte(hostileIgnore(n, shape)), 0o644); err != nil {
				b.Fatal(err)
			}
			w, err := NewWorkspace(dir, ModePlan, WithLimits(Limits{GlobResults: 10 * files, GrepMatches: 10 * files, OutputChars: 1 << 30}))
			if err != nil {
				b.Fatal(err)
			}
			ws[k] = w
		}
		for _, tool := range []struct {
			name string
			args obj
		}{{NameGlob, obj{"pattern": "**/*.go"}}, {NameGrep, obj{"pattern": "TODO needle"}}} {
			b.Run(shape+"/"+tool.name, func(b *testing.B) {
				var spent [2]time.Duration
				var lines [2]int
				for b.Loop() {
					for k, w := range ws {
						start := time.Now()
						res := call(b, w, tool.name, tool.args)
						spent[k] += time.Since(start)
						if res.IsError {
							b.Fatal(res.Content)
						}
						lines[k] = 0
						for l := range strings.Lines(res.Content) {
							if !strings.HasPrefix(l, "[note: ") {
								lines[k]++
							}
						}
					}
				}
				if lines[0] != lines[1] || lines[0] < files/10 {
					b.Fatalf("the two trees gave %d and %d lines", lines[0], lines[1])
				}
				ratio := float64(spent[1]) / float64(spent[0])
				b.ReportMetric(float64(spent[0].Nanoseconds())/float64(b.N), "ns-20/op")
				b.ReportMetric(float64(spent[1].Nanoseconds())/float64(b.N), "ns-20000/op")
				b.ReportMetric(ratio, "x-of-20")
				if ratio > 2 {
					b.Errorf("20,000 patterns cost %.2f times what 20 do, want at most 2", ratio)
				}
			})
		}
	}
}
