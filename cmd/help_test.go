package cmd

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// TestRootHelp: stoke --help has the Examples block, and the Claude Code flags a CI
// script reaches for in a group of their own, after stoke's flags and apart from them;
// the other Claude Code flags stay hidden, and subcommands' help has no such group.
func TestRootHelp(t *testing.T) {
	t.Parallel()
	p := newTestProcess(t)
	got := p.run(t, "--help")
	if got.code != 0 {
		t.Fatalf("exit %d: %s", got.code, got.stderr)
	}
	help := got.stdout
	if !strings.Contains(help, "Examples:\n"+rootExamples+"\n") {
		t.Errorf("no Examples block in\n%s", help)
	}
	own, claude, ok := strings.Cut(help, claudeHelpHeading)
	if !ok {
		t.Fatalf("no %q in\n%s", claudeHelpHeading, help)
	}
	_, own, ok = strings.Cut(own, "\nFlags:\n")
	if !ok || !strings.Contains(own, "--output-format") {
		t.Errorf("stoke's own flags are not before the Claude Code flags:\n%s", help)
	}
	if !strings.HasSuffix(strings.TrimSpace(claude), `Use "stoke [command] --help" for more information about a command.`) {
		t.Errorf("the group is not just before cobra's closing line:\n%s", claude)
	}
	shown := 0
	for _, cf := range claudeFlags() {
		// "--name VALUE", or "--name[=true|false]" for a boolean (pflag 1.1).
		flag := regexp.MustCompile(`--` + regexp.QuoteMeta(cf.name) + `[ \[]`)
		inOwn, inClaude := flag.MatchString(own), flag.MatchString(claude)
		switch {
		case inOwn:
			t.Errorf("--%s is among stoke's own flags", cf.name)
		case cf.help && !inClaude:
			t.Errorf("--%s is not in the Claude Code flags group", cf.name)
		case !cf.help && inClaude:
			t.Errorf("--%s is shown, but its help is off", cf.name)
		}
		if cf.help {
			shown++
		}
	}
	if shown < 10 {
		t.Errorf("%d Claude Code flags shown", shown)
	}
	for _, want := range []string{"--allowedTools", "--disallowedTools", "--max-budget-usd", "--append-system-prompt", "--permission-mode"} {
		if !strings.Contains(claude, want+" ") {
			t.Errorf("%s is not shown", want)
		}
	}

	sub := p.run(t, "sessions", "--help")
	if sub.code != 0 || strings.Contains(sub.stdout, claudeHelpHeading) || !strings.Contains(sub.stdout, "Use \"stoke sessions [command] --help\"") {
		t.Errorf("stoke sessions --help (exit %d):\n%s", sub.code, sub.stdout)
	}
}

// TestRootExamples runs every stoke command of the Examples block, as a shell would split
// it, up to the run itself (configuration and flags checked, the session not run): each
// one is accepted. The README shows the same commands.
func TestRootExamples(t *testing.T) {
	t.Parallel()
	file, err := syntax.NewParser().Parse(strings.NewReader(rootExamples), "examples")
	if err != nil {
		t.Fatalf("the examples are not shell: %v", err)
	}
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	syntax.Walk(file, func(node syntax.Node) bool {
		call, ok := node.(*syntax.CallExpr)
		if !ok || len(call.Args) == 0 || call.Args[0].Lit() != "stoke" {
			return true
		}
		n++
		var args []string
		for _, w := range call.Args[1:] {
			v, err := expand.Literal(nil, w)
			if err != nil {
				t.Fatalf("example %d: %v", n, err)
			}
			args = append(args, v)
		}
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			p := newTestProcess(t)
			p.env["OPENAI_API_KEY"] = "sk-test"
			p.stdin, p.tty = "diff --git a/x b/x\n", false
			writeFile(t, filepath.Join(p.cwd, "ci", "review.cassette.yaml"), exampleCassette)
			got := p.run(t, args...)
			if got.code != 0 || got.opts == nil {
				t.Errorf("exit %d: %s", got.code, got.stderr)
			}
		})
		return true
	})
	if n < 6 {
		t.Errorf("%d stoke commands in the examples", n)
	}
	for line := range strings.SplitSeq(rootExamples, "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.Contains(string(readme), line) {
			t.Errorf("README.md does not show the example line %q", line)
		}
	}
}

// exampleCassette is a cassette of one call, for the --replay example.
const exampleCassette = `cassette: {version: 1, seed: "0123456789abcdef"}
rules:
  - agent: parent
    when: {step: 1}
    once: true
    call: {}
    reply: {text: "No findings."}
`
