package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/store"
)

// procCase is one program BenchmarkProcess runs in its series.
type procCase struct {
	name   string
	bin    string
	args   []string
	env    []string
	dir    string  // working directory ("" the test's)
	target float64 // the bound on the wall time over the floor's (0: none)
	ms     float64 // the bound on the wall time in ms (0: none)
	rssMB  float64 // the bound on the peak RSS (0: none)
	reset  func() error
	walls  []time.Duration
	cpus   []time.Duration
	peakKB int64
}

// BenchmarkProcess runs stoke as a user would, next to two baselines built the same way
// by the benchmark itself (releaseFlags): a Go hello world, and the floor, the hello world
// that links the two official provider SDKs at the versions go.mod pins
// (testdata/sdkfloor). Each iteration is one round of the series: every program once, in
// turn, so that a drift of the machine's speed touches all of them alike; the figures are
// the medians over the rounds of each program's wall time, CPU time (user plus system),
// and of its wall time over the floor's in the same round (×floor). The peak RSS is GNU
// time's, the largest of three runs before the series. A figure with a target in the
// issue prints it, and whether the median meets it. Run it with -benchtime=Nx (N rounds;
// make bench gives 20).
func BenchmarkProcess(b *testing.B) {
	bin, err := benchBinary()
	if err != nil {
		b.Fatal(err)
	}
	hello, err := helloBinary()
	if err != nil {
		b.Fatal(err)
	}
	floor, err := sdkFloorBinary()
	if err != nil {
		b.Fatal(err)
	}
	home, shm := b.TempDir(), tmpfsDir(b)
	oneTurn := []string{"-p", "hi there", "--scenario", filepath.Join(h.scenarios, "hello.yaml"), "--output-format", "stream-json"}
	tenTrue := []string{"-p", "run true", "--scenario", filepath.Join(h.scenarios, "shell-true.yaml"), "--approval-mode", "yolo", "--output-format", "stream-json"}
	resumeCWD, resumeHome := b.TempDir(), b.TempDir()
	const resumeID = "27272727-2727-4727-8727-272727272727"
	reset := storedParent(b, resumeHome, resumeCWD, resumeID, 10000)
	// A resumed parent's steps count its stored history: a rule for any step.
	anyStep := filepath.Join(b.TempDir(), "any-step.yaml")
	if err := os.WriteFile(anyStep, []byte("rules:\n  - agent: parent\n    reply: {text: ok, literal: true}\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	cases := []*procCase{
		{name: "provider-sdk-floor", bin: floor},
		{name: "hello-world", bin: hello},
		{name: "version", bin: bin, args: []string{"version"}, target: 1.1},
		{name: "one-turn", bin: bin, args: oneTurn, env: []string{"STOKE_HOME=" + home}, target: 1.3, rssMB: 20},
		{name: "one-turn-tmpfs", bin: bin, args: oneTurn, env: []string{"STOKE_HOME=" + shm}},
		// the sandbox: a run with no command costs what it did; a command costs one helper
		// process more (ten-true minus ten-true-sandbox-off, over ten)
		{name: "one-turn-sandbox-off", bin: bin, args: append(slices.Clone(oneTurn), "--sandbox", "off"), env: []string{"STOKE_HOME=" + home}},
		{name: "ten-true", bin: bin, args: tenTrue, env: []string{"STOKE_HOME=" + home}},
		{name: "ten-true-sandbox-off", bin: bin, args: append(slices.Clone(tenTrue), "--sandbox", "off"), env: []string{"STOKE_HOME=" + home}},
		{name: "nonce-scenario", bin: bin, args: []string{"-p", "Keep NONCE-BE7C4 safe with a background agent", "--scenario",
			filepath.Join(h.scenarios, "nonce-memory.yaml"), "--output-format", "stream-json"}, env: []string{"STOKE_HOME=" + home}},
		{name: "resume-10000-messages", bin: bin, args: []string{"--resume", resumeID, "-p", "next", "--scenario", anyStep, "--output-format", "stream-json"},
			env: []string{"STOKE_HOME=" + resumeHome}, dir: resumeCWD, ms: 40, reset: reset},
	}
	for _, c := range cases {
		c.env = stokeEnv(c.env...)
		for range 3 {
			kb, err := peakRSS(c.bin, c.args, c.env, c.dir)
			if err != nil {
				b.Fatalf("%s: %v", c.name, err)
			}
			c.peakKB = max(c.peakKB, kb)
			if c.reset != nil {
				if err := c.reset(); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	for b.Loop() {
		for _, c := range cases {
			wall, cpu, err := runProcess(c.bin, c.args, c.env, c.dir)
			if err != nil {
				b.Fatalf("%s: %v", c.name, err)
			}
			c.walls, c.cpus = append(c.walls, wall), append(c.cpus, cpu)
			if c.reset != nil {
				b.StopTimer()
				if err := c.reset(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		}
	}
	// On stdout, not b.Log: the testing package cuts a benchmark's log to a few lines.
	fmt.Print(processTable(cases))
	for _, c := range cases[1:] {
		b.ReportMetric(medianRatio(c.walls, cases[0].walls), "x-floor:"+c.name)
	}
}

// processTable prints the series' figures, a line a program, with the targets.
func processTable(cases []*procCase) string {
	floor := cases[0]
	var out strings.Builder
	fmt.Fprintf(&out, "BenchmarkProcess: %d rounds, interleaved; medians; ×floor is the wall time over the floor's in the same round\n", len(floor.walls))
	fmt.Fprintf(&out, "%-24s %9s %9s %8s %8s %9s  %s\n", "program", "wall ms", "cpu ms", "×floor", "cpu×fl", "peak MB", "target")
	for _, c := range cases {
		wall, cpu := ms(median(c.walls)), ms(median(c.cpus))
		ratio, cpuRatio := medianRatio(c.walls, floor.walls), medianRatio(c.cpus, floor.cpus)
		rss := float64(c.peakKB) / 1024
		var targets []string
		if c.target > 0 {
			targets = append(targets, verdict(fmt.Sprintf("≤ %.1f× floor", c.target), ratio, c.target, "×"))
		}
		if c.ms > 0 {
			targets = append(targets, verdict(fmt.Sprintf("≤ %.0f ms", c.ms), wall, c.ms, " ms"))
		}
		if c.rssMB > 0 {
			targets = append(targets, verdict(fmt.Sprintf("peak RSS ≤ %.0f MB", c.rssMB), rss, c.rssMB, " MB"))
		}
		fmt.Fprintf(&out, "%-24s %9.2f %9.2f %8.2f %8.2f %9.1f  %s\n", c.name, wall, cpu, ratio, cpuRatio, rss, strings.Join(targets, "; "))
	}
	return out.String()
}

// verdict says whether got meets the bound want (at most), and by how much it misses.
func verdict(target string, got, want float64, unit string) string {
	if got <= want {
		return target + ": met"
	}
	return fmt.Sprintf("%s: missed by %.2f%s", target, got-want, unit)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// medianRatio is the median over the rounds of a[i]/b[i].
func medianRatio(a, b []time.Duration) float64 {
	var rs []float64
	for i := range min(len(a), len(b)) {
		if b[i] > 0 {
			rs = append(rs, float64(a[i])/float64(b[i]))
		}
	}
	if len(rs) == 0 {
		return 0
	}
	slices.Sort(rs)
	return rs[len(rs)/2]
}

// storedParent stores a session of working directory cwd whose parent transcript holds n
// messages, and returns what cuts that transcript back to them (a resumed run appends its
// turn).
func storedParent(b *testing.B, home, cwd, id string, n int) func() error {
	b.Helper()
	sess := store.New(home, cwd, id)
	now := time.Now().UTC()
	if err := sess.WriteInfo(store.Info{SessionID: id, CWD: cwd, CreatedAt: now, UpdatedAt: now}); err != nil {
		b.Fatal(err)
	}
	tr, err := store.OpenTranscript(sess.ParentTranscript(), nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := tr.Write(store.Record{Type: store.RecordMeta, SessionID: id, CWD: cwd}); err != nil {
		b.Fatal(err)
	}
	for i := range n {
		m := llm.UserText(fmt.Sprintf("question %d: lorem ipsum dolor sit amet, consectetur adipiscing elit", i))
		if i%2 == 1 {
			m = llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock(fmt.Sprintf("answer %d", i))}}
		}
		if err := tr.Append(m); err != nil {
			b.Fatal(err)
		}
	}
	if err := tr.Close(); err != nil {
		b.Fatal(err)
	}
	st, err := os.Stat(sess.ParentTranscript())
	if err != nil {
		b.Fatal(err)
	}
	return func() error { return os.Truncate(sess.ParentTranscript(), st.Size()) }
}

// runProcess runs bin directly (so the wall time is the program's alone) and returns its
// wall time and the CPU time it used.
func runProcess(bin string, args, env []string, dir string) (wall, cpu time.Duration, err error) {
	cmd := exec.Command(bin, args...)
	cmd.Env, cmd.Dir = env, dir
	var errb bytes.Buffer
	cmd.Stderr = &errb
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, 0, fmt.Errorf("%v\n%s", err, errb.String())
	}
	return time.Since(start), cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), nil
}
