package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// repoURL is the clone URL the README's install step names.
const repoURL = "https://github.com/stoke-cli/stoke"

// TestReadmeInstall follows the README's first install step literally, on a fresh clone
// of this repository's HEAD (the URL replaced by the local path) with
// GOFLAGS=-buildvcs=false in the environment, as on machines that turn VCS stamping off:
// the stoke it installs names the clone's commit in `stoke version`. It builds stoke and
// its dependencies without -race or -cover, which nothing else in make test does: minutes
// of CPU on a cold build cache. So it runs when E2E_INSTALL=1 (make install-check), and
// skips otherwise.
func TestReadmeInstall(t *testing.T) {
	if os.Getenv("E2E_INSTALL") != "1" {
		t.Skip("set E2E_INSTALL=1 (make install-check): builds stoke from scratch in a fresh clone")
	}
	for _, tool := range []string{"git", "make", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("%s is not a git checkout: %v", root, err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	step := firstInstallStep(t, string(readme))
	if !strings.Contains(step, "git clone "+repoURL) || !strings.Contains(step, "stoke version") {
		t.Fatalf("the README's first install step does not clone, install and run stoke version:\n%s", step)
	}
	dir := t.TempDir()
	gobin := filepath.Join(dir, "bin")
	// The clone keeps the directory name the URL gives it.
	script := strings.ReplaceAll(step, "git clone "+repoURL, "git clone '"+strings.ReplaceAll(root, "'", `'\''`)+"' stoke")
	cmd := exec.Command("bash", "-e", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(hostEnvWithout("GOFLAGS=", "GOBIN=", "PATH=", "STOKE_"),
		"GOFLAGS=-buildvcs=false", "GOBIN="+gobin, "PATH="+gobin+string(os.PathListSeparator)+os.Getenv("PATH"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("the README's install step failed: %v\n%s", err, out.String())
	}
	commit := strings.TrimSpace(string(head))
	text := out.String()
	if !strings.Contains(text, "revision: "+commit+"\n") {
		t.Errorf("stoke version does not name the commit %s:\n%s", commit, text)
	}
	if !strings.Contains(text, "stoke ") || !strings.Contains(text, commit[:12]) || strings.Contains(text, devVersionText) {
		t.Errorf("the version does not name the commit %s:\n%s", commit[:12], text)
	}
}

// devVersionText is what stoke version says of a build that carries no version.
const devVersionText = "0.0.0-devel"

// firstInstallStep is the first sh code block of the README's Install section.
func firstInstallStep(t *testing.T, readme string) string {
	t.Helper()
	_, install, ok := strings.Cut(readme, "\n## Install\n")
	if !ok {
		t.Fatal("README.md has no Install section")
	}
	install, _, _ = strings.Cut(install, "\n## ")
	_, block, ok := strings.Cut(install, "```sh\n")
	if !ok {
		t.Fatal("the Install section has no sh block")
	}
	block, _, _ = strings.Cut(block, "```")
	return block
}
