package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

// benchBinary is a plain build (no -cover, no -race) for the process benchmarks.
var benchBinary = sync.OnceValues(func() (string, error) {
	out := filepath.Join(h.binDir, "stoke-bench"+exeSuffix())
	cmd := exec.Command("go", "build", "-o", out, "github.com/stoke-cli/stoke")
	cmd.Stderr = os.Stderr
	return out, cmd.Run()
})

// BenchmarkProcess runs stoke as a user would and reports wall time per run (ns/op) and the
// peak resident set size of the process (peak-RSS-MB, the largest over all runs).
func BenchmarkProcess(b *testing.B) {
	bin, err := benchBinary()
	if err != nil {
		b.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
	}{
		{"version", []string{"version"}},
		{"one-turn", []string{"-p", "hi there", "--scenario", filepath.Join(h.scenarios, "hello.yaml"), "--output-format", "stream-json"}},
		{"nonce-scenario", []string{"-p", "Keep NONCE-BE7C4 safe with a background agent", "--scenario", filepath.Join(h.scenarios, "nonce-memory.yaml"), "--output-format", "stream-json"}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			home := b.TempDir()
			var peakKB int64
			for b.Loop() {
				cmd := exec.Command(bin, c.args...)
				cmd.Env = append(os.Environ(), "STOKE_HOME="+home)
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v\n%s", err, out)
				}
				if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && ru.Maxrss > peakKB {
					peakKB = ru.Maxrss
				}
			}
			b.ReportMetric(float64(peakKB)/1024, "peak-RSS-MB")
		})
	}
}
