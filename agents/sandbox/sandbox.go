package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
)

// Sandbox is one run's sandbox: its mode, the private TMPDIR its commands share, the
// supervisors of the commands whose processes may still run, and the guard of the
// protected configuration of every workspace a command ran in. It is safe for
// concurrent use. Close ends it.
type Sandbox struct {
	cfg     Config
	status  Status
	confine bool   // apply Landlock (and seccomp when there is one) to the commands
	exe     string // the helper: this very binary
	// self is this binary's path, for the command lines another process starts (Wrap):
	// there /proc/self/exe would name that process.
	self  string
	tmp   string // the private TMPDIR ("" for ModeOff)
	roots []string
	guard *guard
	*runs // shared with the sandboxes Rooted makes
}

// runs is what a sandbox knows of the commands it ran.
type runs struct {
	mu     sync.Mutex
	closed bool
	live   map[*supervisor]struct{} // helpers still running
	wg     sync.WaitGroup           // their reapers
	// outside counts the wrapped commands another process runs (Wrap) that have not
	// ended.
	outside int
	// dirty: processes that outlived their command have run since the guard last
	// looked, so what changed in a protected path may be theirs.
	dirty bool
}

// New returns the run's sandbox for the session's working directories roots (writable
// in workspace-write, the first one where the command runs unless a call names another
// root), and makes its private TMPDIR. With ModeOff it confines nothing: Confines
// reports false, and the shell tool runs commands as it always did.
func New(cfg Config, roots ...string) (*Sandbox, error) {
	if cfg.Mode == "" {
		cfg.Mode = ModeWorkspaceWrite
	}
	if cfg.Mode.Rank() < 0 {
		return nil, fmt.Errorf("new sandbox: %w %q", ErrUnknownMode, cfg.Mode)
	}
	s := &Sandbox{cfg: cfg, exe: "/proc/self/exe", guard: newGuard(), runs: &runs{live: map[*supervisor]struct{}{}}}
	if self, err := os.Executable(); err == nil {
		s.self = self
	}
	for _, r := range roots {
		s.roots = append(s.roots, realPath(r))
	}
	if cfg.Mode == ModeOff {
		s.status = Status{Mode: ModeOff, Reason: "--sandbox off"}
		return s, nil
	}
	sup := Probe()
	s.status = Status{Mode: cfg.Mode, Enforced: sup.Enforced, Reason: sup.Reason}
	s.confine = sup.LandlockABI > 0
	tmp, err := os.MkdirTemp(cfg.TempRoot, "stoke-sandbox-")
	if err != nil {
		return nil, fmt.Errorf("new sandbox: private TMPDIR: %w", err)
	}
	s.tmp = realPath(tmp)
	return s, nil
}

// Rooted returns the same run's sandbox (its TMPDIR, guard, supervisors, Close) for a
// session whose working directories are roots instead of New's, in mode m when m
// confines more than the run's mode: under ACP each session has its own directory, and
// its commands may write it, not the launch's; its project's settings may narrow the
// mode. A run with ModeOff has no TMPDIR to narrow into: its sessions stay off, and
// ok is false when m asked for more.
func (s *Sandbox) Rooted(m Mode, roots ...string) (_ *Sandbox, ok bool) {
	if s == nil {
		return nil, true
	}
	c := *s
	if m.Rank() >= 0 && m.Rank() < s.cfg.Mode.Rank() {
		if s.cfg.Mode == ModeOff {
			return s, false
		}
		c.cfg.Mode, c.status.Mode = m, m
	}
	c.roots = nil
	for _, r := range roots {
		c.roots = append(c.roots, realPath(r))
	}
	return &c, true
}

// Status is what system/init reports.
func (s *Sandbox) Status() Status { return s.status }

// Confines reports whether the shell tool should run its commands through the sandbox:
// the mode is not off.
func (s *Sandbox) Confines() bool { return s != nil && s.cfg.Mode != ModeOff }

// Mode returns the mode.
func (s *Sandbox) Mode() Mode { return s.cfg.Mode }

// Config returns the configuration the sandbox was made with.
func (s *Sandbox) Config() Config { return s.cfg }

// TempDir returns the private TMPDIR ("" with ModeOff).
func (s *Sandbox) TempDir() string { return s.tmp }

// Check says why a command may not run: ErrNotEnforced when the sandbox is required and
// the kernel cannot enforce it, ErrClosed after Close.
func (s *Sandbox) Check() error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	switch {
	case closed:
		return ErrClosed
	case s.cfg.Required && !s.status.Enforced && s.cfg.Mode != ModeOff:
		return fmt.Errorf("%w: %s (--sandbox-required: no command runs unconfined; set --sandbox off, or run where Landlock is available)", ErrNotEnforced, s.status.Reason)
	}
	return nil
}

// Close ends every process the run's commands left behind (their supervisors kill
// their trees), checks the protected configuration one last time, and removes the
// private TMPDIR. It returns what the guard had to put back, one line each.
func (s *Sandbox) Close() ([]string, error) {
	if s == nil {
		return nil, nil
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, nil
	}
	s.closed = true
	sups := make([]*supervisor, 0, len(s.live))
	for h := range s.live {
		sups = append(sups, h)
	}
	s.mu.Unlock()
	for _, h := range sups {
		h.stop()
	}
	s.wg.Wait()
	notes := s.guard.all(s.suspicious())
	var err error
	if s.tmp != "" {
		err = os.RemoveAll(s.tmp)
	}
	return notes, err
}

// track records a running supervisor; false when the sandbox is closed.
func (s *Sandbox) track(h *supervisor) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.live[h] = struct{}{}
	s.wg.Add(1)
	return true
}

// untrack forgets a supervisor that has exited.
func (s *Sandbox) untrack(h *supervisor) {
	s.mu.Lock()
	delete(s.live, h)
	if h.background.Load() {
		s.dirty = true
	}
	s.mu.Unlock()
	s.wg.Done()
}

// suspicious reports whether a sandboxed process may have changed something since the
// guard last looked: a command runs (the calls of one reply run at once; a wrapped one
// in another process's terminal included), or one that outlived its command runs or
// has run. It clears the mark of those that have ended.
func (s *Sandbox) suspicious() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	sus := s.dirty || s.outside > 0
	for h := range s.live {
		sus = sus || !h.ended.Load() || h.background.Load()
	}
	s.dirty = false
	return sus
}

// policy is what the helper applies to one command, sent to it as JSON.
type policy struct {
	// Args is the command, Args[0] an absolute path.
	Args []string `json:"args"`
	// Confine: apply Landlock (and seccomp); false: only supervise.
	Confine bool `json:"confine"`
	// Read are hierarchies read (and executed); Write hierarchies read and written;
	// Devices device files read and written; Deny paths neither read nor written, even
	// below a Read or Write hierarchy. All absolute, symbolic links resolved.
	Read    []string `json:"read"`
	Write   []string `json:"write"`
	Devices []string `json:"devices"`
	Deny    []string `json:"deny"`
	// Network: sockets of every family, TCP connect and bind.
	Network bool `json:"network"`
}

// devices are the device files every command may read and write.
func devices() []string {
	return []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}
}

// writable returns the hierarchies a command run in root may write.
func (s *Sandbox) writable(root string) []string {
	out := []string{s.tmp}
	if s.cfg.Mode != ModeWorkspaceWrite {
		return out
	}
	for _, r := range append(append([]string{realPath(root)}, s.roots...), s.cfg.Writable...) {
		if r = realPath(r); r != "" && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// policyFor returns the policy of args run in root.
func (s *Sandbox) policyFor(root string, args []string) policy {
	p := policy{Args: args, Confine: s.confine, Read: []string{"/"}, Write: s.writable(root), Devices: devices(), Network: s.cfg.Network}
	// /dev is not read as a whole: a block device holds every file, STOKE_HOME's too.
	p.Deny = append(p.Deny, "/dev")
	for _, d := range s.cfg.denied() {
		p.Deny = append(p.Deny, realPath(d))
	}
	return p
}

// inside reports whether p is one of dirs or below one.
func inside(p string, dirs []string) bool {
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if p == d || strings.HasPrefix(p, strings.TrimSuffix(d, string(filepath.Separator))+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// realPath returns p absolute and clean, with its symbolic links resolved as far as it
// exists.
func realPath(p string) string {
	if p == "" {
		return ""
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r
	}
	// resolve the part that exists
	dir, base := filepath.Split(abs)
	if dir = filepath.Clean(dir); dir != abs {
		if r := realPath(dir); r != "" {
			return filepath.Join(r, base)
		}
	}
	return abs
}

// Environ returns env for a sandboxed command: TMPDIR (and TMP, TEMP) is the private
// one, and the caches tools write under the home (XDG_CACHE_HOME, GOCACHE, npm's, pip's;
// GOMODCACHE's writes when the network is on) point into it, unless the user made
// their directory writable.
func (s *Sandbox) Environ(env []string, root string) []string {
	get := func(k string) string {
		for i := len(env) - 1; i >= 0; i-- {
			if name, v, ok := strings.Cut(env[i], "="); ok && name == k {
				return v
			}
		}
		return ""
	}
	out := slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return name == "TMPDIR" || name == "TMP" || name == "TEMP"
	})
	out = append(out, "TMPDIR="+s.tmp, "TMP="+s.tmp, "TEMP="+s.tmp)
	home := get("HOME")
	if home == "" {
		home = s.cfg.UserHome
	}
	writable := s.writable(root)
	redirect := func(name, current, sub string) {
		if current != "" && inside(realPath(current), writable) {
			return
		}
		out = append(out, name+"="+filepath.Join(s.tmp, "cache", sub))
	}
	or := func(v, def string) string {
		if v != "" || home == "" {
			return v
		}
		return filepath.Join(home, def)
	}
	cache := or(get("XDG_CACHE_HOME"), ".cache")
	redirect("XDG_CACHE_HOME", cache, "")
	if gc := get("GOCACHE"); gc != "off" {
		if gc == "" && cache != "" {
			gc = filepath.Join(cache, "go-build")
		}
		redirect("GOCACHE", gc, "go-build")
	}
	redirect("npm_config_cache", or(get("npm_config_cache"), ".npm"), "npm")
	pip := get("PIP_CACHE_DIR")
	if pip == "" && cache != "" {
		pip = filepath.Join(cache, "pip")
	}
	redirect("PIP_CACHE_DIR", pip, "pip")
	if s.cfg.Network {
		out = s.moduleCache(out, get, home, writable)
	}
	return out
}

// moduleCache points GOMODCACHE into the private tmp when the network is on and the
// module cache is not writable: downloads land there, and the shared cache is still
// read, as a file proxy ahead of GOPROXY. With the network off nothing is downloaded,
// and the shared cache is read where it is.
func (s *Sandbox) moduleCache(out []string, get func(string) string, home string, writable []string) []string {
	mc := get("GOMODCACHE")
	if mc == "" {
		gopath := get("GOPATH")
		if gopath == "" && home != "" {
			gopath = filepath.Join(home, "go")
		}
		if first, _, _ := strings.Cut(gopath, string(os.PathListSeparator)); first != "" {
			mc = filepath.Join(first, "pkg", "mod")
		}
	}
	if mc == "" || inside(realPath(mc), writable) {
		return out
	}
	proxy := get("GOPROXY")
	if proxy == "" {
		proxy = "https://proxy.golang.org,direct"
	}
	return append(out, "GOMODCACHE="+filepath.Join(s.tmp, "gomodcache"),
		"GOPROXY=file://"+filepath.ToSlash(filepath.Join(mc, "cache", "download"))+","+proxy)
}

// Probe reports what this machine's kernel offers.
func Probe() Support {
	abi, seccomp, err := probe()
	return support(abi, err, seccomp, runtime.GOOS)
}
