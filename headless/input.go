package headless

import (
	"context"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/headless/sdkhost"
)

// Input is one user turn a session's loop runs (Serve), or the error that ended the
// input: a stream-json line that could not be read ends the run with ErrUsage.
type Input struct {
	Msg llm.Message
	Err error
	// Line is the stdin line the message came on (1-based; 0 when it came otherwise).
	Line int
	// Cancel, when closed while the input's turn runs, ends that turn alone (with
	// ErrTurnCancelled as its cause; the result says so) and the session goes on: an
	// interactive session's client cancelling a prompt. Nil: the turn is not cancelled so.
	Cancel <-chan struct{}
}

// inputs are the user turns of a CLI run: the stream-json lines the control plane reads
// from stdin, or the one text prompt. The channel is closed after the last one, or when
// ctx ends.
func inputs(ctx context.Context, opts Options, cp *sdkhost.ControlPlane) <-chan Input {
	if cp != nil {
		// The control plane's reader routes stdin by type: user lines come here.
		return sdkhost.Prompts(ctx, cp, func(msg llm.Message, line int, err error) Input {
			return Input{Msg: msg, Line: line, Err: err}
		})
	}
	return textInput(ctx, llm.UserText(opts.Prompt))
}

// textInput is the one user turn msg as a session's input: the channel yields it, then is
// closed (or is closed when ctx ends first).
func textInput(ctx context.Context, msg llm.Message) <-chan Input {
	ch := make(chan Input)
	go func() {
		defer close(ch)
		select {
		case ch <- Input{Msg: msg}:
		case <-ctx.Done():
		}
	}()
	return ch
}
