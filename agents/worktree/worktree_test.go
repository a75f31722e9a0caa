package worktree

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func gitRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "root"},
	} {
		if _, err := git(context.Background(), dir, args...); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestWorktreeKeptWhenChanged(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t)
	w, err := New(t.Context(), repo, filepath.Join(t.TempDir(), "wt"), "a0123456789abcdef", 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.Path, "new.txt"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	msg, err := w.Finalize(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg, "kept") || !strings.Contains(msg, w.Branch) {
		t.Errorf("message = %q", msg)
	}
	if _, err := os.Stat(filepath.Join(w.Path, "new.txt")); err != nil {
		t.Errorf("kept worktree lost its file: %v", err)
	}
	if out, err := git(t.Context(), repo, "log", "--format=%s", w.Branch); err != nil || !strings.Contains(out, "stoke: changes") {
		t.Errorf("branch has no commit of the changes: %q %v", out, err)
	}
	if _, err := os.Stat(filepath.Join(repo, "new.txt")); !os.IsNotExist(err) {
		t.Errorf("the change leaked into the main checkout")
	}
}

func TestWorktreeRemovedWhenClean(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t)
	w, err := New(t.Context(), repo, filepath.Join(t.TempDir(), "wt"), "a0123456789abcdef", 2)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := w.Finalize(t.Context())
	if err != nil || !strings.Contains(msg, "removed") {
		t.Fatalf("Finalize = %q, %v", msg, err)
	}
	if _, err := os.Stat(w.Path); !os.IsNotExist(err) {
		t.Errorf("clean worktree still there")
	}
	if out, _ := git(t.Context(), repo, "branch", "--list", w.Branch); out != "" {
		t.Errorf("branch %s still there", w.Branch)
	}
}

func TestWorktreeOutsideRepo(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	_, err := New(t.Context(), t.TempDir(), t.TempDir(), "a0123456789abcdef", 1)
	if err == nil || !strings.Contains(err.Error(), ErrNotGitRepo.Error()) {
		t.Fatalf("err = %v", err)
	}
}

func TestGitHead(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t)
	sub := filepath.Join(repo, "a", "b")
	if err := os.MkdirAll(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	if got := GitHead(sub); got != "ref: refs/heads/main" {
		t.Errorf("GitHead = %q", got)
	}
	if _, err := git(t.Context(), repo, "checkout", "-q", "-b", "other"); err != nil {
		t.Fatal(err)
	}
	if got := GitHead(sub); got != "ref: refs/heads/other" {
		t.Errorf("after checkout GitHead = %q", got)
	}
	if got := GitHead(t.TempDir()); got != "" {
		t.Errorf("outside a repo GitHead = %q", got)
	}
}
