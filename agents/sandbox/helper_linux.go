package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// The helper's descriptors, set up by Run: the policy to read, the control pipe (its
// end of the file closing means "kill the command's tree"), the status to write.
const (
	fdPolicy  = 3
	fdControl = 4
	fdStatus  = 5
)

// helperStatus is what the helper reports once: how the command ended, or why it never
// ran.
type helperStatus struct {
	Code   int    `json:"code"`
	Signal string `json:"signal,omitempty"`
	Error  string `json:"error,omitempty"`
	// Background: processes the command started still run (the helper stays to reap
	// them, and kills them when its control pipe closes).
	Background bool `json:"background,omitempty"`
	// signum is the signal that ended the command (0: none), for the wrapper's status.
	signum syscall.Signal
}

// HelperMain is the supervisor of one sandboxed command (see the package doc). It is
// what stoke's binary runs when IsHelper(os.Args): it confines a thread of its own, forks
// the command from it, reports the command's end on its status pipe, reaps the
// command's orphans, and kills them all when its control pipe closes. It returns the
// process's exit code: 0 once every process of the command is gone, 2 on bad use.
func HelperMain() int {
	runtime.LockOSThread() // the main goroutine keeps its thread; the command's is another
	if len(os.Args) > 1 && os.Args[1] == WrapArg {
		return wrapMain(os.Args)
	}
	for _, fd := range []int{fdPolicy, fdControl, fdStatus} {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
			fmt.Fprintln(os.Stderr, "stoke: the sandbox helper is started by stoke itself, not by hand")
			return 2
		}
	}
	pol, err := readPolicy()
	status := os.NewFile(fdStatus, "status")
	control := os.NewFile(fdControl, "control")
	unix.CloseOnExec(fdStatus)
	unix.CloseOnExec(fdControl)
	report := func(st helperStatus) {
		data, _ := json.Marshal(st)
		_, _ = status.Write(append(data, '\n'))
		_ = status.Close()
	}
	if err != nil {
		report(helperStatus{Error: err.Error()})
		return 2
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		report(helperStatus{Error: fmt.Sprintf("become a subreaper: %v", err)})
		return 1
	}
	started := make(chan startResult, 1)
	ended := make(chan helperStatus, 1)
	go runConfined(pol, started, ended)
	res := <-started
	if res.err != nil {
		report(helperStatus{Error: res.err.Error()})
		return 1
	}
	releaseOutput() // only the command holds the output pipe now: it ends when they do

	var killing atomic.Bool
	pgid := res.pid
	kill := func() {
		killing.Store(true)
		killTree(pgid)
	}
	go func() {
		_, _ = io.Copy(io.Discard, control) // EOF: stoke closed it, or died
		kill()
	}()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	go func() {
		<-sigs
		kill()
	}()
	st := <-ended
	st.Background = !reapZombies()
	report(st)
	if !reapAll(pgid, &killing) {
		return 1
	}
	return 0
}

// reapAll reaps what the command (process group pgid) left running, until nothing is
// left; false if waiting failed. Orphans become this process's children; once the tree
// is being killed (killing), every child is killed again after each death, which also
// catches the orphans that death made.
func reapAll(pgid int, killing *atomic.Bool) bool {
	for {
		if killing.Load() {
			killTree(pgid)
		}
		var ws unix.WaitStatus
		_, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.ECHILD) {
			return true
		}
		if err != nil && !errors.Is(err, unix.EINTR) {
			return false
		}
	}
}

// reapZombies reaps the children that have ended and reports whether none is left. The
// command's orphans are this process's children by the time the command itself has
// been reaped, so none left means none of its processes runs any more.
func reapZombies() bool {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		switch {
		case errors.Is(err, unix.ECHILD):
			return true
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil || pid == 0:
			return false
		}
	}
}

// IsHelper reports whether args (os.Args) start the sandbox helper, or the wrapper of
// a command another process runs (Wrap).
func IsHelper(args []string) bool {
	return len(args) > 1 && (args[1] == HelperArg || args[1] == WrapArg)
}

// HelperArg is the hidden first argument with which stoke re-executes itself as the
// supervisor of a sandboxed command; it carries the protocol's version.
const HelperArg = "__stoke-sandbox-helper-v1"

func readPolicy() (policy, error) {
	var p policy
	f := os.NewFile(fdPolicy, "policy")
	if f == nil {
		return p, errors.New("no policy descriptor")
	}
	defer f.Close()
	if err := json.NewDecoder(f).Decode(&p); err != nil {
		return p, fmt.Errorf("read the policy: %w", err)
	}
	if len(p.Args) == 0 {
		return p, errors.New("the policy names no command")
	}
	return p, nil
}

// startResult is the command's process group (its pid), or why it did not start.
type startResult struct {
	pid int
	err error
}

// runConfined confines the OS thread it runs on and starts the command from it: a child
// takes its credentials (the Landlock domain), its seccomp filter and no_new_privs from
// the thread that forks it. The thread is never unlocked, so no other goroutine runs on
// it, and it is not the thread group leader, so that the process stays outside the
// command's domain (a process is signalled and traced through its leader).
func runConfined(p policy, started chan<- startResult, ended chan<- helperStatus) {
	runtime.LockOSThread()
	if unix.Gettid() == unix.Getpid() {
		go runConfined(p, started, ended) // another thread; this one keeps the leader
		select {}
	}
	if p.Confine {
		if err := confine(p); err != nil {
			started <- startResult{err: err}
			return
		}
	}
	cmd := &exec.Cmd{Path: p.Args[0], Args: p.Args, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}}
	if err := cmd.Start(); err != nil {
		started <- startResult{err: fmt.Errorf("start %s: %w", p.Args[0], err)}
		return
	}
	started <- startResult{pid: cmd.Process.Pid}
	_ = cmd.Wait()
	st := helperStatus{Code: cmd.ProcessState.ExitCode()}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		st.Signal, st.signum = ws.Signal().String(), ws.Signal()
	}
	ended <- st
	select {} // keep the thread (the command's parent-death signal watches it)
}

// confine applies no_new_privs, the seccomp filter and the Landlock domain to the
// calling thread.
func confine(p policy) error {
	abi, _ := ll.LandlockGetABIVersion()
	if err := dropCapabilities(); err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if seccompAvailable() {
		prog, err := filter(p.Network, abi < 9)
		if err == nil {
			err = loadFilter(prog)
		}
		if err != nil {
			return err
		}
	}
	if abi < 1 {
		return nil
	}
	cfg := landlockConfig(p.Network)
	fd, flags, err := cfg.NewRulesetFD(fsRules(p, abi)...)
	if err != nil {
		return fmt.Errorf("landlock ruleset: %w", err)
	}
	if fd < 0 {
		return nil
	}
	defer unix.Close(fd)
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("landlock_restrict_self: %w", err)
	}
	return nil
}

// droppedCapabilities are the capabilities a command run as root loses: those that reach
// past the sandbox or into other processes (tracing and reading stoke's memory and
// environment, administration, modules, raw I/O, device nodes, raw and admin network,
// the kernel log, bpf and perf, the clock, the LSMs, immutable files). Root keeps the
// rest, file permissions included.
func droppedCapabilities() []uintptr {
	return []uintptr{
		unix.CAP_SYS_PTRACE, unix.CAP_SYS_ADMIN, unix.CAP_SYS_MODULE, unix.CAP_SYS_RAWIO, unix.CAP_SYS_BOOT,
		unix.CAP_DAC_READ_SEARCH, unix.CAP_MKNOD, unix.CAP_NET_ADMIN, unix.CAP_NET_RAW, unix.CAP_SYS_TIME,
		unix.CAP_SYSLOG, unix.CAP_BPF, unix.CAP_PERFMON, unix.CAP_AUDIT_CONTROL, unix.CAP_MAC_ADMIN,
		unix.CAP_MAC_OVERRIDE, unix.CAP_LINUX_IMMUTABLE,
	}
}

// dropCapabilities takes droppedCapabilities out of the calling thread's bounding,
// effective, permitted and inheritable sets and clears its ambient set, so that the
// command (and whatever it executes, root's own recomputation included) never has them.
// A thread without capabilities has nothing to drop.
func dropCapabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	if data[0].Permitted == 0 && data[1].Permitted == 0 && data[0].Inheritable == 0 && data[1].Inheritable == 0 {
		return nil
	}
	for _, c := range droppedCapabilities() {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, c, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.EPERM) {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
		bit := uint32(1) << (c % 32)
		d := &data[c/32]
		d.Effective &^= bit
		d.Permitted &^= bit
		d.Inheritable &^= bit
	}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	_ = unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	return nil
}

// releaseOutput points the helper's own stdout and stderr at /dev/null, so that the
// output pipe closes when the command's processes are done with it.
func releaseOutput() {
	fd, err := unix.Open("/dev/null", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	_ = unix.Dup3(fd, 1, 0)
	_ = unix.Dup3(fd, 2, 0)
	_ = unix.Close(fd)
}

// killTree sends SIGKILL to the command's process group and to every child of this
// process: the command, and the orphans its processes left (in groups of their own
// too).
func killTree(pgid int) {
	_ = unix.Kill(-pgid, unix.SIGKILL)
	for _, pid := range children() {
		_ = unix.Kill(pid, unix.SIGKILL)
	}
}

// children lists this process's children from /proc.
func children() []int {
	self := os.Getpid()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses
		s := string(data)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 1 {
			if ppid, err := strconv.Atoi(f[1]); err == nil && ppid == self {
				out = append(out, pid)
			}
		}
	}
	return out
}
