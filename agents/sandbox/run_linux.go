package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// Supervises reports whether Run runs the commands (under a helper that confines them
// where the kernel can, and ends their processes with stoke); when false the shell
// tool runs them itself.
func (s *Sandbox) Supervises() bool { return s.Confines() }

// probe reads the kernel's Landlock ABI version and whether seccomp filters work.
func probe() (abi int, seccomp bool, err error) {
	abi, err = ll.LandlockGetABIVersion()
	if err != nil {
		abi = 0
	}
	return abi, seccompAvailable(), err
}

// Run runs one command under a helper (HelperMain) that confines it as the mode says
// and supervises its processes: it returns when the command has ended and its output is
// closed (or WaitDelay after, killing the processes that still hold it), while
// processes the command left running in the background, their output elsewhere, keep
// running until Close or stoke's death. The guard checks the workspace's protected
// configuration before and after. The error is ErrNotEnforced, ErrClosed or ErrHelper:
// the command did not run.
func (s *Sandbox) Run(ctx context.Context, req Request) (Outcome, error) {
	var out Outcome
	if err := s.Check(); err != nil {
		return out, err
	}
	root := realPath(req.Root)
	out.Notes = s.guard.check(root, s.suspicious())
	data, err := json.Marshal(s.policyFor(root, req.Args))
	if err != nil {
		return out, fmt.Errorf("%w: policy: %v", ErrHelper, err)
	}
	var files pipes
	defer files.close()
	polR, polW := files.pipe()
	ctlR, ctlW := files.pipe()
	stR, stW := files.pipe()
	outR, outW := files.pipe()
	if files.err != nil {
		return out, fmt.Errorf("%w: %v", ErrHelper, files.err)
	}
	cmd := &exec.Cmd{
		Path: s.exe, Args: []string{"stoke-sandbox", HelperArg},
		Env: s.Environ(req.Env, root), Dir: req.Root,
		Stdout: outW, Stderr: outW,
		ExtraFiles:  []*os.File{polR, ctlR, stW},
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	err = cmd.Start()
	files.release(polR, ctlR, stW, outW) // the helper's ends
	if err != nil {
		return out, fmt.Errorf("%w: start: %v", ErrHelper, err)
	}
	files.keep(ctlW) // owned by the supervisor from here
	h := &supervisor{cmd: cmd, ctl: ctlW}
	if !s.track(h) {
		h.stop()
		_ = cmd.Wait()
		return out, ErrClosed
	}
	go func() {
		_ = cmd.Wait()
		h.stop()
		s.untrack(h)
	}()
	files.keep(polW)
	go func() {
		_, _ = polW.Write(data)
		_ = polW.Close()
	}()
	copied := make(chan struct{})
	go func() {
		_, _ = io.Copy(req.Output, outR)
		close(copied)
	}()
	statusc := make(chan helperStatus, 1)
	go func() { statusc <- readStatus(stR) }()

	timer := time.NewTimer(req.Timeout)
	defer timer.Stop()
	var st helperStatus
	select {
	case st = <-statusc:
	case <-ctx.Done():
		out.Cancelled = true
		st = end(h, statusc, req.WaitDelay)
	case <-timer.C:
		out.TimedOut = true
		st = end(h, statusc, req.WaitDelay)
	}
	if !drain(copied, req.WaitDelay) {
		out.BackgroundKilled = true
		h.stop()
		if !drain(copied, req.WaitDelay) {
			_ = outR.Close() // a process escaped the helper's kill: stop reading
			<-copied
		}
	}
	if st.Error != "" {
		h.ended.Store(true)
		return out, fmt.Errorf("%w: %s", ErrHelper, st.Error)
	}
	h.background.Store(st.Background)
	h.ended.Store(true)
	out.ExitCode, out.Signal = st.Code, st.Signal
	if st.Signal != "" {
		out.ExitCode = -1
	}
	out.Notes = append(out.Notes, s.guard.check(root, true)...)
	return out, nil
}

// end makes the helper kill the command's tree and waits for the command's status; a
// helper that does not answer within grace is killed with its process group.
func end(h *supervisor, statusc <-chan helperStatus, grace time.Duration) helperStatus {
	h.stop()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case st := <-statusc:
		return st
	case <-t.C:
		_ = syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL)
		return <-statusc
	}
}

// drain waits up to d for done.
func drain(done <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// readStatus reads the helper's one status line; a helper that died before writing one
// is an error status.
func readStatus(r io.Reader) helperStatus {
	line, err := bufio.NewReader(r).ReadBytes('\n')
	var st helperStatus
	if len(line) == 0 {
		if err == nil || errors.Is(err, io.EOF) {
			return helperStatus{Error: "the helper ended without a status"}
		}
		return helperStatus{Error: fmt.Sprintf("read the helper's status: %v", err)}
	}
	if err := json.Unmarshal(line, &st); err != nil {
		return helperStatus{Error: fmt.Sprintf("the helper's status: %v", err)}
	}
	return st
}

// pipes are the descriptors of one Run, closed at its end unless handed over.
type pipes struct {
	open []*os.File
	err  error
}

func (p *pipes) pipe() (r, w *os.File) {
	if p.err != nil {
		return nil, nil
	}
	r, w, p.err = os.Pipe()
	if p.err == nil {
		p.open = append(p.open, r, w)
	}
	return r, w
}

// release closes fs now.
func (p *pipes) release(fs ...*os.File) {
	for _, f := range fs {
		_ = f.Close()
		p.keep(f)
	}
}

// keep takes f off the list closed at the end.
func (p *pipes) keep(f *os.File) {
	for i, o := range p.open {
		if o == f {
			p.open = append(p.open[:i], p.open[i+1:]...)
			return
		}
	}
}

func (p *pipes) close() {
	for _, f := range p.open {
		_ = f.Close()
	}
}
