package e2e

// Custom testscript commands for the sandbox scripts (sandbox_*.txtar).
//
// netlisten
//
//	Listens on a TCP and a UDP port of 127.0.0.1 for the rest of the script, and sets
//	$TCP_PORT and $UDP_PORT.
//
// [!] netgot tcp|udp
//
//	Asserts that something reached that listener since the last netgot: a connection, a
//	datagram. It sends a sentinel itself (after what the commands before it sent, which
//	the kernel has queued first) and reads up to it, so it waits for nothing else.
//
// waitfile FILE
//
//	Waits until FILE exists and is not empty (a bound of 60 s on the wait, not a timed
//	assertion).
//
// [!] pidsgone FILE
//
//	Asserts that none of the processes whose pids FILE lists (one a line) runs, waiting
//	for them up to 60 s (a bound on the wait). With "!", that they all run now; they are
//	then killed at the end of the script.

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/stoke-cli/stoke/agents/sandbox/sandboxtest"
)

// netKey keys the script's *netState.
type netKey struct{}

// netState is the listeners of netlisten.
type netState struct {
	lb *sandboxtest.Loopback
}

func cmdNetListen(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: netlisten")
	}
	st := ts.Value(netKey{}).(*netState)
	lb, err := sandboxtest.Listen()
	ts.Check(err)
	st.lb = lb
	ts.Defer(lb.Close)
	for _, kv := range lb.Env() {
		k, v, _ := strings.Cut(kv, "=")
		ts.Setenv(k, v)
	}
}

func cmdNetGot(ts *testscript.TestScript, neg bool, args []string) {
	st := ts.Value(netKey{}).(*netState)
	if len(args) != 1 || (args[0] != "tcp" && args[0] != "udp") || st.lb == nil {
		ts.Fatalf("usage: netgot tcp|udp (after netlisten)")
	}
	got, err := st.lb.Reached(args[0])
	ts.Check(err)
	switch {
	case got && neg:
		ts.Fatalf("something reached the %s listener", args[0])
	case !got && !neg:
		ts.Fatalf("nothing reached the %s listener", args[0])
	}
}

func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: waitfile FILE")
	}
	p := ts.MkAbs(args[0])
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if fi, err := os.Stat(p); err == nil && fi.Size() > 0 {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("%s did not appear within a minute", args[0])
		}
	}
}

func cmdPidsGone(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: pidsgone FILE")
	}
	var pids []int
	for _, f := range strings.Fields(ts.ReadFile(args[0])) {
		pid, err := strconv.Atoi(f)
		ts.Check(err)
		pids = append(pids, pid)
	}
	if len(pids) == 0 {
		ts.Fatalf("%s lists no pid", args[0])
	}
	alive := func(pid int) bool {
		if syscall.Kill(pid, 0) != nil {
			return false
		}
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return true // no /proc: kill said it is there
		}
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		return i < 0 || i+2 >= len(s) || s[i+2] != 'Z' // a zombie has ended
	}
	if neg {
		for _, pid := range pids {
			if !alive(pid) {
				ts.Fatalf("process %d is gone", pid)
			}
			ts.Defer(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		}
		return
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		left := 0
		for _, pid := range pids {
			if alive(pid) {
				left++
			}
		}
		if left == 0 {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("%d of the processes in %s still run a minute on", left, args[0])
		}
	}
}
