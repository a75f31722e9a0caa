// Package headless is stoke's non-interactive run: a prompt in (-p, stdin text, or
// stream-json lines), parent turns, background agents and their notifications, the
// end-of-run policy, signals, and the final result on stdout.
//
// # Map
//
//	run.go        Run (the CLI's entry) and Serve; the session: the loop that holds the
//	              parts and its own state — user turns as they come, a notification turn
//	              when the parent is idle, the result lines
//	assemble.go   Parts and Assemble: a session's parts built once, in named steps (store
//	              binding, event stream, SDK host, workspace, catalog, registry, roster,
//	              MCP servers, parent runtime, system/init), without running a turn
//	input.go      Input, the loop's user turns: stream-json lines or the text prompt
//	options.go    Options, given by cmd and never changed by a run
//	events.go     the event stream (stdout, the SDK's surface, Observe)
//	host.go       the host interface: what an SDK host (package sdkhost) adds to a run, and
//	              the loop's calls into it
//	meter.go      the model every agent calls through: the run's usage and cost; the
//	              budget (--max-budget-usd)
//	mailbox.go    the notifications waiting for the parent, coalesced while agents work
//	resume.go     opening a new or stored session (--resume, --continue)
//	workspace.go  the workspace and its tools, the agent types, hooks of the run
//	mcp.go        the MCP servers of the parent and of each agent type
//	signals.go    SIGINT and SIGTERM
//	errors.go     the errors cmd maps to exit codes
//
// A second entry point (the ACP server, package headless/acp) builds sessions as Run does,
// many in one process, each from its own Options: Assemble(ctx, opts, nil), then
// Serve(ctx, parts, in) with the user turns it reads, or Parts.Close without serving.
// Its sessions are Interactive (a parent turn only for an Input; notifications held
// while idle; a failed turn ends with its result and the session goes on), their events
// go to its Sink (events.go), and its Approvals decide what the approval mode does not
// allow (workspace.go).
//
// Run owns the registry's lifetime: the registry's turns derive from the run's context,
// and the run ends only after every turn has settled (Registry.Wait), then shuts the
// registry down. The loop runs on Run's goroutine; the registry's turn goroutines reach it
// only through the mailbox (Push, and TurnSettled, which wakes the loop), and the stdin
// reader (sdkhost.ControlPlane) through its prompt channel.
package headless
