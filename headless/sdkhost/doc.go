// Package sdkhost serves an SDK host that drives stoke as its executable (stream-json
// both ways): the Claude Agent SDK (pathToClaudeCodeExecutable) and Qwen Code's SDK
// (pathToQwenExecutable, --channel=SDK), each in its dialect; and applies Claude Code's
// options (--allowedTools, --permission-prompt-tool, --max-budget-usd, ...) in any run.
//
//	options.go   Options (the Claude Code and Qwen Code options), Start (the stdin reader,
//	             initialize: prompts, agents in either SDK's form)
//	control.go   ControlPlane: stdin routed by type, stoke's own control requests and their replies
//	host.go      Host: turns (interrupt), session states, the initialize reply, Close
//	requests.go  the host's control requests: answered (stop_task, mcp_status, ...) or
//	             refused with an error_code
//	hooks.go     the host's hook callbacks: prompt submit, tool calls, Stop, the subagent lifecycle
//	approve.go   the approver of workspace tool calls (live mode, rules, can_use_tool), --tools
//	surface.go   the SDK surface: the dialect's tool names and vocabulary on the events
//	mcp.go       the host's MCP servers: in-process ones through mcp_message, delivered ones
//	model.go     the parent's model as set_model names it, and --max-session-turns
//	stream.go    stream_event lines (--include-partial-messages)
//
// The run loop (package headless) calls a Host at fixed points: while it builds the run
// (Parent, Tools, Approval, Agents, MCPServers, Surface, and the Host as the registry's
// agents.Lifecycle) and at each parent turn (SubmitPrompt, BeginTurn, Idle), then Close. A
// plain run has no Host. This package imports nothing of headless.
package sdkhost
