package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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

// helloBinary is a Go program that prints one line: the floor any Go CLI starts from on
// this machine, measured the same way, so stoke's numbers can be read as ratios.
var helloBinary = sync.OnceValues(func() (string, error) {
	dir := filepath.Join(h.binDir, "hello")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	src := "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello\") }\n"
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		return "", err
	}
	out := filepath.Join(dir, "hello"+exeSuffix())
	cmd := exec.Command("go", "build", "-o", out, "main.go")
	cmd.Dir, cmd.Stderr = dir, os.Stderr
	cmd.Env = append(os.Environ(), "GO111MODULE=off")
	return out, cmd.Run()
})

// BenchmarkProcess runs stoke as a user would and reports wall time per run (ns/op) and the
// peak resident set size of the process (peak-RSS-MB, the largest over all runs).
func BenchmarkProcess(b *testing.B) {
	bin, err := benchBinary()
	if err != nil {
		b.Fatal(err)
	}
	hello, err := helloBinary()
	if err != nil {
		b.Fatal(err)
	}
	cases := []struct {
		name string
		bin  string
		args []string
	}{
		{"hello-world-baseline", hello, nil},
		{"version", bin, []string{"version"}},
		{"one-turn", bin, []string{"-p", "hi there", "--scenario", filepath.Join(h.scenarios, "hello.yaml"), "--output-format", "stream-json"}},
		{"nonce-scenario", bin, []string{"-p", "Keep NONCE-BE7C4 safe with a background agent", "--scenario", filepath.Join(h.scenarios, "nonce-memory.yaml"), "--output-format", "stream-json"}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			home := b.TempDir()
			var peakKB int64
			for b.Loop() {
				kb, err := runMeasured(c.bin, c.args, "STOKE_HOME="+home)
				if err != nil {
					b.Fatal(err)
				}
				peakKB = max(peakKB, kb)
			}
			b.ReportMetric(float64(peakKB)/1024, "peak-RSS-MB")
		})
	}
}

// runMeasured runs bin and returns its peak RSS in KiB. GNU time measures the program
// alone; the rusage of a child forked from this (large) test process would count pages of
// the parent it shared before exec.
func runMeasured(bin string, args []string, env ...string) (int64, error) {
	if gnuTime, err := exec.LookPath("/usr/bin/time"); err == nil {
		cmd := exec.Command(gnuTime, append([]string{"-f", "%M", bin}, args...)...)
		cmd.Env = append(os.Environ(), env...)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Run(); err != nil {
			return 0, fmt.Errorf("%v\n%s", err, errb.String())
		}
		lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
		return strconv.ParseInt(lines[len(lines)-1], 10, 64)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("%v\n%s", err, out)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss, nil
	}
	return 0, nil
}
