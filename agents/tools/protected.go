package tools

import (
	"fmt"
	"strings"
)

// protectedDirs are the directories that configure stoke, Claude Code, Qwen Code and git:
// a file written there can change what the next run in this directory may do (settings,
// agent files, hooks) or run commands (git hooks and config).
func protectedDirs() []string {
	return []string{".stoke", ".claude", ".qwen", ".git"}
}

// protectedFiles are files of the same kind outside those directories.
func protectedFiles() []string {
	return []string{".mcp.json"}
}

// Protected reports whether rel, a slash path relative to the workspace root, is (or is
// inside) configuration the workspace tools do not write below yolo, and says what it
// is. Every component counts, a nested repository's .git too, and names are compared
// without regard to case (the file systems of macOS and Windows ignore it).
func Protected(rel string) (string, bool) {
	for comp := range strings.SplitSeq(rel, "/") {
		for _, d := range protectedDirs() {
			if strings.EqualFold(comp, d) {
				return fmt.Sprintf("inside %s/, which configures %s", d, configures(d)), true
			}
		}
		for _, f := range protectedFiles() {
			if strings.EqualFold(comp, f) {
				return fmt.Sprintf("%s, which configures MCP servers", f), true
			}
		}
	}
	return "", false
}

func configures(dir string) string {
	switch dir {
	case ".stoke":
		return "stoke"
	case ".claude":
		return "Claude Code"
	case ".qwen":
		return "Qwen Code"
	default:
		return "git (hooks, config)"
	}
}
