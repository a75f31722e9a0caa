package acp

import (
	"context"
	"errors"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/stoke-cli/stoke/agents/tools"
)

// terminalClient is what the shell tool needs of the connection: the client's terminal/*
// requests, each returning when the client answered or ctx ended.
type terminalClient interface {
	CreateTerminal(ctx context.Context, req sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error)
	WaitForTerminalExit(ctx context.Context, req sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error)
	TerminalOutput(ctx context.Context, req sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error)
	KillTerminal(ctx context.Context, req sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error)
	ReleaseTerminal(ctx context.Context, req sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error)
}

// terminals run the shell tool's commands in the client's terminals (tools.Terminal),
// when it offers them: the command line as stoke would run it (its environment and, where
// the workspace confines commands, its confinement included), shown in the tool call
// while it runs; killed at its timeout or when the turn is cancelled; released after.
type terminals struct {
	conn    terminalClient
	updates *updates
	id      sdk.SessionId
}

// terminalWrapUp bounds the requests that kill and release a terminal after the turn's
// context has ended.
const terminalWrapUp = 5 * time.Second

// Run implements tools.Terminal.
func (t *terminals) Run(ctx context.Context, req tools.TerminalRequest) (tools.TerminalResult, error) {
	limit := req.OutputLimit
	created, err := t.conn.CreateTerminal(ctx, sdk.CreateTerminalRequest{SessionId: t.id, Command: req.Args[0], Args: req.Args[1:],
		Cwd: &req.Dir, Env: []sdk.EnvVariable{}, OutputByteLimit: &limit})
	if err != nil {
		return tools.TerminalResult{}, err
	}
	tid := created.TerminalId
	t.updates.terminal(req.CallID, tid)
	after, stop := context.WithTimeout(context.WithoutCancel(ctx), req.Timeout+terminalWrapUp)
	defer stop()
	defer func() {
		_, _ = t.conn.ReleaseTerminal(after, sdk.ReleaseTerminalRequest{SessionId: t.id, TerminalId: tid})
	}()
	wctx, cancel := context.WithTimeout(ctx, req.Timeout)
	defer cancel()
	var res tools.TerminalResult
	exit, err := t.conn.WaitForTerminalExit(wctx, sdk.WaitForTerminalExitRequest{SessionId: t.id, TerminalId: tid})
	if err != nil {
		if wctx.Err() == nil {
			return res, err
		}
		// Timed out, or the turn was cancelled: the command is killed; what it wrote stays.
		res.TimedOut = ctx.Err() == nil
		if _, kerr := t.conn.KillTerminal(after, sdk.KillTerminalRequest{SessionId: t.id, TerminalId: tid}); kerr != nil {
			return res, errors.Join(err, kerr)
		}
	}
	out, err := t.conn.TerminalOutput(after, sdk.TerminalOutputRequest{SessionId: t.id, TerminalId: tid})
	if err != nil {
		return res, err
	}
	res.Output, res.Truncated = out.Output, out.Truncated
	status := sdk.TerminalExitStatus{ExitCode: exit.ExitCode, Signal: exit.Signal}
	if out.ExitStatus != nil {
		status = *out.ExitStatus
	}
	res.ExitCode, res.Signal = -1, "killed"
	switch {
	case status.ExitCode != nil:
		res.ExitCode = *status.ExitCode
	case status.Signal != nil:
		res.Signal = *status.Signal
	}
	return res, nil
}
