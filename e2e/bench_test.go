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
	"time"

	"github.com/tidwall/gjson"

	"github.com/stoke-cli/stoke/agents/llm/openai/openaitest"
	"github.com/stoke-cli/stoke/agents/llm/scripted"
)

// releaseFlags build a program as .goreleaser.yaml builds the released stoke: static
// (CGO_ENABLED=0, set in buildRelease), without file paths or symbol tables. The process
// benchmarks build every program they compare this way, so the ratios are between
// binaries of the same kind.
var releaseFlags = []string{"-trimpath", "-ldflags=-s -w"}

// buildRelease builds pkg (run in dir, with env added) into out with releaseFlags.
func buildRelease(dir, out, pkg string, env ...string) (string, error) {
	cmd := exec.Command("go", append(append([]string{"build"}, releaseFlags...), "-o", out, pkg)...)
	cmd.Dir, cmd.Stderr = dir, os.Stderr
	cmd.Env = append(append(os.Environ(), "CGO_ENABLED=0"), env...)
	return out, cmd.Run()
}

// benchBinary is stoke as released (no -cover, no -race) for the process benchmarks.
var benchBinary = sync.OnceValues(func() (string, error) {
	return buildRelease("", filepath.Join(h.binDir, "stoke-bench"+exeSuffix()), "github.com/stoke-cli/stoke")
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
	return buildRelease(dir, filepath.Join(dir, "hello"+exeSuffix()), "main.go", "GO111MODULE=off")
})

// sdkFloorBinary is the hello-world program with the official OpenAI and Anthropic SDKs
// linked (testdata/sdkfloor), at the versions go.mod pins: the start-up no stoke run can
// go below while it keeps those SDKs, whose package initialisation runs at every start.
var sdkFloorBinary = sync.OnceValues(func() (string, error) {
	return buildRelease("", filepath.Join(h.binDir, "sdkfloor"+exeSuffix()), "./testdata/sdkfloor")
})

// tmpfsDir returns a new directory on /dev/shm, removed when b ends, or skips b.
func tmpfsDir(b *testing.B) string {
	dir, err := os.MkdirTemp("/dev/shm", "stoke-bench-")
	if err != nil {
		b.Skipf("no tmpfs to put STOKE_HOME on: %v", err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// peakRSS runs bin under GNU time and returns its peak RSS in KiB, or 0 without GNU time.
// GNU time measures the program alone; the rusage of a child forked from this (large)
// test process would count pages of the parent it shared before exec.
func peakRSS(bin string, args, env []string, dir string) (int64, error) {
	gnuTime, err := exec.LookPath("/usr/bin/time")
	if err != nil {
		return 0, nil
	}
	cmd := exec.Command(gnuTime, append([]string{"-f", "%M", bin}, args...)...)
	cmd.Env, cmd.Dir = env, dir
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("%v\n%s", err, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
	return strconv.ParseInt(lines[len(lines)-1], 10, 64)
}

// BenchmarkFanOut is the load scenario of issue 12: the parent launches 1,000 background
// agents in one reply, which finish over 5 seconds, in a process limited to 1,024 open
// files (ulimit -n 1024), over the OpenAI-compatible mock (real HTTP) and over the
// scripted provider. It fails unless every agent completed, and reports the wall time per
// run (ns/op), the peak RSS per agent (RSS-KB/agent: above a one-turn run's, over the
// agents), the parent's model calls (parent-turns), and the bytes sent to the model by
// the parent (parent-MB) and by every agent (sent-MB; with the scripted provider,
// estimated from its token counts, which are bytes/4).
func BenchmarkFanOut(b *testing.B) {
	const agents = 1000
	bin, err := benchBinary()
	if err != nil {
		b.Fatal(err)
	}
	if err := exec.Command("sh", "-c", "ulimit -n 1024").Run(); err != nil {
		b.Skipf("cannot lower the open-file limit: %v", err)
	}
	dir := b.TempDir()
	scenario := fanOutFile(b, dir, scripted.FanOut{Agents: agents, Spread: 5 * time.Second})
	home := b.TempDir() // outside the working directory, as stoke requires
	baseKB, _, err := runLimited(bin, dir, home, nil, "-p", "hi there", "--scenario", filepath.Join(h.scenarios, "hello.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	args := []string{"-p", "fan out", "--output-format", "stream-json", "--max-background", fmt.Sprint(agents)}
	for _, provider := range []string{"openai-mock", "scripted"} {
		b.Run(provider, func(b *testing.B) {
			var peakKB int64
			var m fanOutMeasure
			for b.Loop() {
				var srv *openaitest.Server
				run := append([]string{}, args...)
				env := []string{}
				if provider == "scripted" {
					run = append(run, "--scenario", scenario)
				} else {
					model, err := scripted.Open(scenario)
					if err != nil {
						b.Fatal(err)
					}
					srv = openaitest.New(model)
					run = append(run, "--provider", "openai", "--base-url", srv.URL(), "--model", "mock")
					env = append(env, "OPENAI_API_KEY=sk-bench")
				}
				kb, out, err := runLimited(bin, dir, home, env, run...)
				if srv != nil {
					srv.Close()
				}
				if err != nil {
					b.Fatalf("%v\n%s", err, out)
				}
				peakKB = max(peakKB, kb)
				m = measureFanOut(b, out)
				if srv != nil {
					m.sentParent, m.sentAll = 0, 0
					for _, r := range srv.Requests() {
						m.sentAll += len(r)
						if gjson.GetBytes(r, `tools.#(function.name=="task")`).Exists() {
							m.sentParent += len(r)
						}
					}
				}
				if m.completed != agents {
					b.Fatalf("%d of %d agents completed", m.completed, agents)
				}
			}
			b.ReportMetric(float64(peakKB-baseKB)/agents, "RSS-KB/agent")
			b.ReportMetric(float64(peakKB)/1024, "peak-RSS-MB")
			b.ReportMetric(float64(m.parentTurns), "parent-turns")
			b.ReportMetric(float64(m.sentParent)/(1<<20), "parent-MB")
			b.ReportMetric(float64(m.sentAll)/(1<<20), "sent-MB")
		})
	}
}

// fanOutMeasure is what a fan-out run's events tell.
type fanOutMeasure struct {
	completed, parentTurns int
	sentParent, sentAll    int // bytes, estimated from the scripted provider's token counts
}

func measureFanOut(b *testing.B, out []byte) fanOutMeasure {
	var m fanOutMeasure
	for _, ev := range events(b, out) {
		switch {
		case ev.Get("subtype").String() == "task_notification" && ev.Get("status").String() == "completed":
			m.completed++
		case ev.Get("type").String() == "assistant" && ev.Get("parent_tool_use_id").Type == gjson.Null:
			m.parentTurns++
			m.sentParent += 4 * int(ev.Get("message.usage.input_tokens").Int())
		case ev.Get("type").String() == "result":
			m.sentAll = 4 * int(ev.Get("usage.input_tokens").Int())
		}
	}
	return m
}

// runLimited runs bin in dir with at most 1,024 open files, and returns its peak RSS in
// KiB (GNU time, when there is one) and its stdout.
func runLimited(bin, dir, home string, env []string, args ...string) (int64, []byte, error) {
	argv := []string{"-c", `ulimit -n 1024 && exec "$@"`, "sh"}
	gnuTime, timeErr := exec.LookPath("/usr/bin/time")
	if timeErr == nil {
		argv = append(argv, gnuTime, "-f", "%M")
	}
	cmd := exec.Command("sh", append(append(argv, bin), args...)...)
	cmd.Dir = dir
	cmd.Env = append(stokeEnv("STOKE_HOME="+home), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return 0, stdout.Bytes(), fmt.Errorf("%v\n%s", err, stderr.String())
	}
	if timeErr != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			return ru.Maxrss, stdout.Bytes(), nil
		}
		return 0, stdout.Bytes(), nil
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	kb, err := strconv.ParseInt(lines[len(lines)-1], 10, 64)
	return kb, stdout.Bytes(), err
}
