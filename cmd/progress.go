package cmd

import (
	"io"

	"golang.org/x/term"

	"github.com/stoke-cli/stoke/agents/llm/price"
	"github.com/stoke-cli/stoke/headless"
	"github.com/stoke-cli/stoke/headless/progress"
)

// newProgress returns the run's progress reporter on stderr (--progress).
func newProgress(deps *Deps, cfg *Config) *progress.Reporter {
	terminal, width := terminalOf(deps.ErrOut)
	return progress.New(progress.Config{
		Mode:     cfg.Progress,
		Out:      deps.ErrOut,
		Terminal: terminal,
		Width:    width,
		Prices:   price.Default().With(cfg.Prices),
	})
}

// attachProgress feeds prog from the run's events and starts it; the returned function
// stops it (erasing its live line). When stdout shows on a terminal too, the live line is
// erased before each write to it.
func attachProgress(prog *progress.Reporter, deps *Deps, opts *headless.Options) func() {
	opts.Observe = prog.Observe
	if isTerminal, _ := terminalOf(deps.Out); isTerminal {
		opts.Stdout = prog.Wrap(opts.Stdout)
	}
	prog.Start()
	return prog.Stop
}

// terminalOf reports whether w is a terminal, and a function returning its width.
func terminalOf(w io.Writer) (bool, func() int) {
	f, ok := w.(interface{ Fd() uintptr })
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return false, nil
	}
	return true, func() int {
		cols, _, err := term.GetSize(int(f.Fd()))
		if err != nil {
			return 0
		}
		return cols
	}
}
