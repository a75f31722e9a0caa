package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/stoke-cli/stoke/agents/secrets"
)

// Worktree is a temporary git worktree an isolated agent's turn runs in.
type Worktree struct {
	Repo   string // the repository's top level
	Path   string // the worktree's directory
	Branch string // the branch created for it
	base   string // the commit it started from
}

// ErrNotGitRepo: worktree isolation needs the working directory to be in a git repository.
var ErrNotGitRepo = errors.New("worktree isolation needs a git repository")

// New creates a worktree of the repository holding cwd, on a new branch named
// stoke/<id>-<turn>, checked out at HEAD, under dir. id names what the worktree is for
// (a task id); it must be safe in a file and a branch name.
func New(ctx context.Context, cwd, dir, id string, turn int) (*Worktree, error) {
	if cwd == "" {
		return nil, fmt.Errorf("%w: no working directory given", ErrNotGitRepo)
	}
	top, err := git(ctx, cwd, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotGitRepo, err)
	}
	base, err := git(ctx, top, "rev-parse", "HEAD")
	if err != nil {
		return nil, fmt.Errorf("%w: no commit to branch from: %v", ErrNotGitRepo, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create worktree dir: %w", err)
	}
	w := &Worktree{
		Repo:   top,
		Path:   filepath.Join(dir, fmt.Sprintf("%s-%d", id, turn)),
		Branch: fmt.Sprintf("stoke/%s-%d", id, turn),
		base:   base,
	}
	if _, err := git(ctx, top, "worktree", "add", "-b", w.Branch, w.Path, base); err != nil {
		return nil, fmt.Errorf("create worktree: %w", err)
	}
	return w, nil
}

// Finalize ends the worktree after its turn: kept (with its branch, changes committed) when
// the agent changed anything, removed with its branch when clean. It returns one line for
// the turn's result saying which.
func (w *Worktree) Finalize(ctx context.Context) (string, error) {
	status, err := git(ctx, w.Path, "status", "--porcelain")
	if err != nil {
		return "", fmt.Errorf("finalize worktree: %w", err)
	}
	head, err := git(ctx, w.Path, "rev-parse", "HEAD")
	if err != nil {
		return "", fmt.Errorf("finalize worktree: %w", err)
	}
	if status == "" && head == w.base {
		if _, err := git(ctx, w.Repo, "worktree", "remove", "--force", w.Path); err != nil {
			return "", fmt.Errorf("remove worktree: %w", err)
		}
		if _, err := git(ctx, w.Repo, "branch", "-D", w.Branch); err != nil {
			return "", fmt.Errorf("delete worktree branch: %w", err)
		}
		return "The worktree had no changes and was removed.", nil
	}
	if status != "" {
		if _, err := git(ctx, w.Path, "add", "-A"); err != nil {
			return "", fmt.Errorf("commit worktree: %w", err)
		}
		if _, err := git(ctx, w.Path, "-c", "user.name=stoke", "-c", "user.email=stoke@localhost",
			"commit", "-q", "--no-verify", "-m", "stoke: changes of "+w.Branch); err != nil {
			return "", fmt.Errorf("commit worktree: %w", err)
		}
	}
	return fmt.Sprintf("The worktree was kept with its changes at %s on branch %s.", w.Path, w.Branch), nil
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var keys *secrets.Policy // nil: the provider keys are kept from git and what it runs (hooks, filters)
	cmd.Env = keys.Environ(os.Environ())
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// GitHead names what is checked out in the repository holding dir: "ref: refs/heads/x" or
// a commit id, read from the HEAD file (no git process). Empty outside a repository.
func GitHead(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		gitPath := filepath.Join(d, ".git")
		st, err := os.Stat(gitPath)
		if err == nil {
			gitDir := gitPath
			if !st.IsDir() { // a worktree or submodule: "gitdir: <path>"
				data, err := os.ReadFile(gitPath)
				if err != nil {
					return ""
				}
				gitDir = strings.TrimSpace(strings.TrimPrefix(string(data), "gitdir:"))
				if !filepath.IsAbs(gitDir) {
					gitDir = filepath.Join(d, gitDir)
				}
			}
			head, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
			if err != nil {
				return ""
			}
			return strings.TrimSpace(string(head))
		}
		if parent := filepath.Dir(d); parent == d {
			return ""
		}
	}
}
