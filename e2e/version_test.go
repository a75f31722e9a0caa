package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestVersionRevision: a stoke built from a git checkout reports that checkout's commit.
func TestVersionRevision(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed: no checkout to compare with")
	}
	if fi, err := os.Stat(filepath.Join(root, ".git")); err != nil || !fi.IsDir() {
		// The go command stamps VCS information only in a repository's main work tree
		// (a clone, as CI has), not in a linked worktree or an exported tree.
		t.Skipf("%s is not a repository's main work tree: the build carries no VCS stamp", root)
	}
	head, err := exec.Command(git, "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("git rev-parse HEAD: %v (not a usable checkout)", err)
	}
	out, err := exec.Command(filepath.Join(h.binDir, "stoke"+exeSuffix()), "version", "--json").Output()
	if err != nil {
		t.Fatalf("stoke version --json: %v", err)
	}
	var info struct {
		Version, Module, Revision, Time string
		Modified                        *bool
		Sandbox                         *struct {
			LandlockABI *int  `json:"landlock_abi"`
			Seccomp     *bool `json:"seccomp"`
			Enforced    *bool `json:"enforced"`
		}
	}
	if err := json.Unmarshal(out, &info); err != nil {
		t.Fatalf("stoke version --json printed %q: %v", out, err)
	}
	if want := strings.TrimSpace(string(head)); info.Revision != want {
		t.Errorf("revision %q, want HEAD %s", info.Revision, want)
	}
	if info.Module != "github.com/stoke-cli/stoke" || info.Version == "" || info.Time == "" || info.Modified == nil {
		t.Errorf("version info %+v", info)
	}
	if s := info.Sandbox; s == nil || s.LandlockABI == nil || s.Seccomp == nil || s.Enforced == nil {
		t.Errorf("version --json: sandbox %+v, want {landlock_abi, seccomp, enforced}", s)
	}
	text, err := exec.Command(filepath.Join(h.binDir, "stoke"+exeSuffix()), "version").Output()
	if err != nil || !strings.Contains(string(text), "revision: "+info.Revision) {
		t.Errorf("stoke version printed %q (%v), want the revision", text, err)
	}
}
