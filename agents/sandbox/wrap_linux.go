package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// WrapArg is the hidden first argument of the wrapper: stoke's binary, started by
// another process (an ACP client's terminal) with the policy as its next argument and
// the command after it. It carries the protocol's version.
const WrapArg = "__stoke-sandbox-wrap-v1"

// Wrap returns the command line that runs args in root, confined and supervised as Run
// would, from a process stoke does not start: an ACP client runs the shell tool's
// commands in its own terminal. The line is stoke's binary, WrapArg, the policy, then
// args (args[0] resolved on stoke's PATH when it is not a path). The wrapper confines a
// thread of its own and forks the command from it, kills what the command left running
// once it ends or when the wrapper is signalled or its parent dies, and exits with the
// command's status (128+n for signal n). Args carry no environment: the caller gives
// the command its own (env -i with Environ's). Done must be called once the command
// has ended. The error is ErrNotEnforced, ErrClosed or ErrHelper: nothing may run.
func (s *Sandbox) Wrap(root string, args []string) (*Wrapped, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	if len(args) == 0 {
		return nil, fmt.Errorf("%w: no command", ErrHelper)
	}
	if s.self == "" {
		return nil, fmt.Errorf("%w: stoke's own binary cannot be found", ErrHelper)
	}
	root = realPath(root)
	data, err := json.Marshal(s.policyFor(root, nil))
	if err != nil {
		return nil, fmt.Errorf("%w: policy: %v", ErrHelper, err)
	}
	cmd := slices.Clone(args)
	if filepath.Base(cmd[0]) == cmd[0] {
		if p, err := exec.LookPath(cmd[0]); err == nil {
			cmd[0] = p
		}
	}
	w := &Wrapped{Args: append([]string{s.self, WrapArg, string(data)}, cmd...), s: s, root: root}
	w.before = s.guard.check(root, s.suspicious())
	s.mu.Lock()
	s.outside++
	s.mu.Unlock()
	return w, nil
}

// wrapMain is the wrapper (Wrap): args are os.Args. Its own failures are one line on
// stderr and exit code 126, as a shell reports a command it cannot execute.
func wrapMain(args []string) int {
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "stoke: sandbox: %v\n", err)
		return 126
	}
	if len(args) < 4 {
		return fail(errors.New("the wrapper is started with a policy and a command, by the command lines stoke makes"))
	}
	var p policy
	if err := json.Unmarshal([]byte(args[2]), &p); err != nil {
		return fail(fmt.Errorf("the policy: %w", err))
	}
	p.Args = args[3:]
	// The terminal that started it ends it: when its parent dies, so does it, and with
	// it the command (its parent-death signal).
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		return fail(fmt.Errorf("parent-death signal: %w", err))
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fail(fmt.Errorf("become a subreaper: %w", err))
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	started := make(chan startResult, 1)
	ended := make(chan helperStatus, 1)
	go runConfined(p, started, ended)
	res := <-started
	if res.err != nil {
		return fail(res.err)
	}
	var killing atomic.Bool
	go func() {
		<-sigs
		killing.Store(true)
		killTree(res.pid)
	}()
	st := <-ended
	// The terminal's command is over: what it left running ends with it (its orphans are
	// this process's children; none left, nothing to look for).
	if !reapZombies() {
		killing.Store(true)
		reapAll(res.pid, &killing)
	}
	if st.signum != 0 {
		return 128 + int(st.signum)
	}
	return st.Code
}
