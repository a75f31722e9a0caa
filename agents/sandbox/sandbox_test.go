package sandbox

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseMode(t *testing.T) {
	tests := []struct {
		in   string
		want Mode
		err  bool
	}{
		{"workspace-write", ModeWorkspaceWrite, false},
		{"read-only", ModeReadOnly, false},
		{"off", ModeOff, false},
		{"true", ModeWorkspaceWrite, false}, // Qwen Code's boolean --sandbox
		{"false", ModeOff, false},
		{"danger-full-access", "", true},
		{"", "", true},
	}
	for _, tt := range tests {
		got, err := ParseMode(tt.in)
		if got != tt.want || (err != nil) != tt.err {
			t.Errorf("ParseMode(%q) = %q, %v", tt.in, got, err)
		}
		if err != nil && !errors.Is(err, ErrUnknownMode) {
			t.Errorf("ParseMode(%q): %v is not ErrUnknownMode", tt.in, err)
		}
	}
	if !(ModeReadOnly.Rank() < ModeWorkspaceWrite.Rank() && ModeWorkspaceWrite.Rank() < ModeOff.Rank()) || Mode("x").Rank() != -1 {
		t.Error("Rank does not order read-only < workspace-write < off")
	}
}

func TestSupport(t *testing.T) {
	tests := []struct {
		abi      int
		seccomp  bool
		goos     string
		enforced bool
		reason   string
	}{
		{7, true, "linux", true, ""},
		{3, true, "linux", true, ""},
		{2, true, "linux", false, "truncation"},
		{0, true, "linux", false, "Landlock is not available"},
		{7, false, "linux", false, "seccomp"},
		{0, false, "darwin", false, "no sandbox on darwin"},
	}
	for _, tt := range tests {
		s := support(tt.abi, nil, tt.seccomp, tt.goos)
		if s.Enforced != tt.enforced || !strings.Contains(s.Reason, tt.reason) {
			t.Errorf("support(%d, %v, %s) = %+v", tt.abi, tt.seccomp, tt.goos, s)
		}
	}
}

func newTestSandbox(t *testing.T, cfg Config) *Sandbox {
	t.Helper()
	cfg.TempRoot = t.TempDir()
	sb, err := New(cfg, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = sb.Close() })
	return sb
}

func envValue(env []string, k string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if name, v, ok := strings.Cut(env[i], "="); ok && name == k {
			return v, true
		}
	}
	return "", false
}

func TestEnviron(t *testing.T) {
	home := t.TempDir()
	sb := newTestSandbox(t, Config{Mode: ModeWorkspaceWrite, UserHome: home})
	env := sb.Environ([]string{"HOME=" + home, "TMPDIR=/tmp", "PATH=/bin"}, sb.roots[0])
	tmp := sb.TempDir()
	for k, want := range map[string]string{
		"TMPDIR": tmp, "XDG_CACHE_HOME": filepath.Join(tmp, "cache"), "GOCACHE": filepath.Join(tmp, "cache", "go-build"),
		"npm_config_cache": filepath.Join(tmp, "cache", "npm"), "PIP_CACHE_DIR": filepath.Join(tmp, "cache", "pip"), "PATH": "/bin",
	} {
		if got, _ := envValue(env, k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if _, ok := envValue(env, "GOMODCACHE"); ok {
		t.Error("GOMODCACHE redirected with the network off: the shared cache is read where it is")
	}
	if n := slices.IndexFunc(env, func(kv string) bool { return kv == "TMPDIR=/tmp" }); n >= 0 {
		t.Error("the caller's TMPDIR is kept")
	}

	// a cache the user made writable stays where it is
	cache := filepath.Join(home, ".cache")
	sb = newTestSandbox(t, Config{Mode: ModeWorkspaceWrite, UserHome: home, Writable: []string{cache}, Network: true})
	env = sb.Environ([]string{"HOME=" + home}, sb.roots[0])
	if _, ok := envValue(env, "XDG_CACHE_HOME"); ok {
		t.Error("XDG_CACHE_HOME redirected although it is writable")
	}
	if got, _ := envValue(env, "GOMODCACHE"); got != filepath.Join(sb.TempDir(), "gomodcache") {
		t.Errorf("with the network, GOMODCACHE = %q", got)
	}
	if got, _ := envValue(env, "GOPROXY"); !strings.HasPrefix(got, "file://"+filepath.Join(home, "go", "pkg", "mod", "cache", "download")+",") {
		t.Errorf("GOPROXY = %q: the shared cache is not read first", got)
	}
}

func TestHint(t *testing.T) {
	home := t.TempDir()
	sb := newTestSandbox(t, Config{Mode: ModeWorkspaceWrite, UserHome: home, StokeHome: filepath.Join(home, ".stoke")})
	sb.confine = true
	root := sb.roots[0]
	tests := []struct{ out, want string }{
		{"touch: cannot touch '/etc/x': Permission denied", "--sandbox-writable DIR"},
		{"bash: /etc/x: Permission denied", "not /etc/x"},
		{"cat: " + filepath.Join(home, ".ssh", "id") + ": Permission denied", "--sandbox off"},
		{"curl: (6) Could not resolve host: example.com", "--sandbox-network"},
		{"bash: socket: Permission denied\nbash: /dev/tcp/1.2.3.4/80: Permission denied", "--sandbox-network"},
		{"bash: ./x: Permission denied", ""}, // inside the workspace: not the sandbox
		{"make: *** [all] Error 1", ""},
	}
	for _, tt := range tests {
		got := sb.Hint(tt.out, root)
		if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
			t.Errorf("Hint(%q) = %q, want %q in it", tt.out, got, tt.want)
		}
	}
	ro := newTestSandbox(t, Config{Mode: ModeReadOnly})
	ro.confine = true
	if got := ro.Hint("bash: x.txt: Permission denied", ro.roots[0]); !strings.Contains(got, "--sandbox workspace-write") && !strings.Contains(got, "--sandbox off") {
		t.Errorf("read-only hint: %q", got)
	}
}
