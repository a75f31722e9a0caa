// Package sdkhost serves a Claude Agent SDK host that drives stoke as its Claude Code
// executable (stream-json both ways), and applies Claude Code's options (--allowedTools,
// --permission-prompt-tool, --max-budget-usd, ...) in any run.
//
//	options.go  Options (the Claude Code options), Start (the stdin reader, initialize)
//	control.go  ControlPlane: stdin routed by type, stoke's own control requests and their replies
//	host.go     Host: control requests, turns (interrupt), session states, Close
//	hooks.go    the host's hook callbacks: prompt submit, tool calls, Stop, the subagent lifecycle
//	approve.go  the approver of workspace tool calls (live mode, rules, can_use_tool), --tools
//	model.go    the parent's model as set_model names it
//	stream.go   stream_event lines (--include-partial-messages)
//
// The run loop (package headless) calls a Host at fixed points: while it builds the run
// (Parent, Tools, Approval, Agents, and the Host as the registry's agents.Lifecycle) and
// at each parent turn (SubmitPrompt, BeginTurn, Idle), then Close. A plain run has no
// Host. This package imports nothing of headless.
package sdkhost
