// Package worktree owns the git worktree an isolated agent's turn runs in: New makes one
// on a branch of its own, keyed by a plain id and turn, and Finalize keeps it (changes
// committed) or removes it once the turn has ended; GitHead reads what a repository has
// checked out. It knows no task, type or run: it must not import package agents,
// agents/catalog, agents/runtime, or anything of headless and cmd.
package worktree
