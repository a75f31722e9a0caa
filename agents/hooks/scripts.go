package hooks

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/stoke-cli/stoke/agents/shellcmd"
)

// WithoutOutsideScripts returns cfg without the hooks that name a script of the project
// (a path word of the command, relative to projectDir or inside it, $CLAUDE_PROJECT_DIR
// and $STOKE_PROJECT_DIR included) that is a symbolic link to a file outside the
// project, and one warning per hook dropped. It is applied to the hooks of project
// configuration: a checkout must not run a file from elsewhere on the machine under
// the name of one of its own scripts.
func WithoutOutsideScripts(cfg Config, projectDir string) (Config, []string) {
	if len(cfg) == 0 {
		return cfg, nil
	}
	root, err := filepath.EvalSymlinks(projectDir)
	if err != nil {
		return cfg, nil
	}
	abs, _ := filepath.Abs(projectDir)
	out := Config{}
	var warnings []string
	for _, ev := range Events() {
		for _, h := range cfg[ev] {
			if target, link := outsideScript(h.Command, abs, root); link != "" {
				warnings = append(warnings, fmt.Sprintf("%s hook %q ignored: %s is a symbolic link to %s, outside the project", ev, h.Command, link, target))
				continue
			}
			out[ev] = append(out[ev], h)
		}
	}
	return out, warnings
}

// outsideScript returns the first path word of command (inside the project as written)
// whose target is outside root, and that target.
func outsideScript(command, dir, root string) (target, link string) {
	for _, v := range []string{"${CLAUDE_PROJECT_DIR}", "$CLAUDE_PROJECT_DIR", "${STOKE_PROJECT_DIR}", "$STOKE_PROJECT_DIR"} {
		command = strings.ReplaceAll(command, v, dir)
	}
	s, err := shellcmd.Parse(command)
	if err != nil {
		return "", ""
	}
	var words []shellcmd.Word
	for _, c := range s.Commands {
		words = append(words, c.Words...)
	}
	for _, rd := range s.Redirects {
		words = append(words, rd.Target)
	}
	for _, w := range words {
		if !w.Literal || !strings.Contains(w.Value, "/") {
			continue
		}
		p := w.Value
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		p = filepath.Clean(p)
		if !inside(dir, p) && !inside(root, p) {
			continue // not one of the project's files
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			continue // nothing there: the hook fails when it runs
		}
		if !inside(root, real) {
			return real, w.Value
		}
	}
	return "", ""
}

// inside reports whether p is dir or below it (both clean and absolute).
func inside(dir, p string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, string(filepath.Separator))+string(filepath.Separator))
}
