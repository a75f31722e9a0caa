package sandbox

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Mode is what a sandboxed command may do, with Codex's names.
type Mode string

// The modes.
const (
	// ModeWorkspaceWrite (the default): write in the working directory (and an isolated
	// agent's worktree), the private TMPDIR and the --sandbox-writable directories; read
	// everywhere but STOKE_HOME and the credential stores; no network unless
	// --sandbox-network.
	ModeWorkspaceWrite Mode = "workspace-write"
	// ModeReadOnly: the same, with writes in the private TMPDIR only.
	ModeReadOnly Mode = "read-only"
	// ModeOff: no sandbox; commands run as stoke's own children, as before there was one.
	ModeOff Mode = "off"
)

// Modes returns the modes, the default first.
func Modes() []Mode { return []Mode{ModeWorkspaceWrite, ModeReadOnly, ModeOff} }

// ModeNames returns the modes joined by sep.
func ModeNames(sep string) string {
	var names []string
	for _, m := range Modes() {
		names = append(names, string(m))
	}
	return strings.Join(names, sep)
}

// ParseMode reads a mode. Qwen Code's boolean --sandbox spellings count: true is the
// default mode, false is off.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.TrimSpace(s)); m {
	case ModeWorkspaceWrite, ModeReadOnly, ModeOff:
		return m, nil
	case "true":
		return ModeWorkspaceWrite, nil
	case "false":
		return ModeOff, nil
	}
	return "", fmt.Errorf("%w %q: want one of %s", ErrUnknownMode, s, ModeNames(", "))
}

// Rank orders the modes by what they allow: read-only 0, workspace-write 1, off 2; -1
// for a mode stoke does not know. A project's settings may only lower it.
func (m Mode) Rank() int {
	switch m {
	case ModeReadOnly:
		return 0
	case ModeWorkspaceWrite:
		return 1
	case ModeOff:
		return 2
	}
	return -1
}

// CredentialStores are the files and directories, relative to the user's home, that a
// sandboxed command may not read (nor write): the usual homes of keys and tokens.
func CredentialStores() []string {
	return []string{
		".ssh", ".aws", ".gnupg", ".config/gcloud", ".config/gh", ".docker/config.json",
		".netrc", ".git-credentials", ".npmrc", ".pypirc", ".kube",
	}
}

// Config is a run's sandbox.
type Config struct {
	Mode Mode
	// Writable are more directories a workspace-write command may write
	// (--sandbox-writable; absolute).
	Writable []string
	// DenyRead are more paths a command may not read (--sandbox-deny-read; absolute),
	// besides STOKE_HOME and the credential stores.
	DenyRead []string
	// Network lets commands use the network (--sandbox-network).
	Network bool
	// Required refuses every command when the kernel cannot confine it
	// (--sandbox-required), instead of running it unconfined.
	Required bool
	// StokeHome is $STOKE_HOME, which commands may neither read nor write.
	StokeHome string
	// UserHome is the user's home directory: the credential stores and the caches are
	// found under it ("" when unknown).
	UserHome string
	// TempRoot is where the private TMPDIR is made (os.TempDir() when empty).
	TempRoot string
}

// denied returns every path a command may not touch: STOKE_HOME, the credential stores
// and DenyRead, absolute and clean.
func (c Config) denied() []string {
	var out []string
	if c.StokeHome != "" {
		out = append(out, filepath.Clean(c.StokeHome))
	}
	if c.UserHome != "" {
		for _, p := range CredentialStores() {
			out = append(out, filepath.Join(c.UserHome, filepath.FromSlash(p)))
		}
	}
	for _, p := range c.DenyRead {
		out = append(out, filepath.Clean(p))
	}
	return out
}

// Status is what system/init reports: the mode, whether the kernel enforces it, and
// why not (or what is missing) when it does not.
type Status struct {
	Mode     Mode   `json:"mode"`
	Enforced bool   `json:"enforced"`
	Reason   string `json:"reason"`
}

// Support is what this machine's kernel offers (stoke version --json).
type Support struct {
	// LandlockABI is the Landlock ABI version (0: no Landlock).
	LandlockABI int `json:"landlock_abi"`
	// Seccomp: seccomp filters can be installed.
	Seccomp bool `json:"seccomp"`
	// Enforced: workspace-write and read-only are enforced here.
	Enforced bool `json:"enforced"`
	// Reason says what is missing when Enforced is false.
	Reason string `json:"reason,omitempty"`
}

// minABI is the Landlock ABI below which the file system rules have a hole: truncation
// (ABI 3) is not controlled before it.
const minABI = 3

// support judges what the kernel offers.
func support(abi int, abiErr error, seccomp bool, goos string) Support {
	s := Support{LandlockABI: abi, Seccomp: seccomp}
	switch {
	case goos != "linux":
		s.Reason = "no sandbox on " + goos + ": stoke confines commands with Linux's Landlock and seccomp"
	case abi == 0 && abiErr != nil:
		s.Reason = fmt.Sprintf("Landlock is not available (%v): the kernel lacks it, it is not enabled at boot (lsm=), or a container's seccomp profile forbids it", abiErr)
	case abi == 0:
		s.Reason = "Landlock is not available"
	case abi < minABI:
		s.Reason = fmt.Sprintf("Landlock ABI %d: truncation is not confined before ABI %d (Linux 6.2)", abi, minABI)
	case !seccomp:
		s.Reason = "seccomp filters are not available: the network is not confined"
	default:
		s.Enforced = true
	}
	return s
}
