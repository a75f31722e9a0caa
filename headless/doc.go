// Package headless is stoke's non-interactive run: a prompt in (-p, stdin text, or
// stream-json lines), parent turns, background agents and their notifications, the
// end-of-run policy, signals, and the final result on stdout.
//
// # Map
//
//	run.go        Run; the session (one run's state) and its loop: user turns as they come,
//	              a notification turn when the parent is idle, the result lines
//	options.go    Options, given by cmd and never changed by a run
//	host.go       the host interface: what an SDK host (package sdkhost) adds to a run, and
//	              the session's calls into it; the budget (--max-budget-usd)
//	meter.go      the model every agent calls through: the run's usage and cost
//	mailbox.go    the notifications waiting for the parent, coalesced while agents work
//	resume.go     opening a new or stored session (--resume, --continue)
//	workspace.go  the workspace tools, agent definitions, hooks of the run
//	signals.go    SIGINT and SIGTERM
//	errors.go     the errors cmd maps to exit codes
//
// Run owns the registry's lifetime: the registry's turns derive from the run's context,
// and the run ends only after every turn has settled (Registry.Wait), then shuts the
// registry down. The loop runs on Run's goroutine; the registry's turn goroutines reach it
// only through the mailbox (Push, and TurnSettled, which wakes the loop), and the stdin
// reader (sdkhost.ControlPlane) through its prompt channel.
package headless
