// Package agents owns the tasks of a session: the registry of its subagents (launch,
// send, collect, stop), each task's controller (its row, its turns, their transcript and
// sidecar, its revival), the caps and queues of turns, the roster a resumed session
// brings back, the notifications, the retention of settled rows, and the task tools the
// parent model calls (task, send_message, task_stop, list_agents), with the ordered-tools
// policy (TaskToolOrder) it hands the agent loop. A background task stays hot between
// turns and is continued on the same in-memory chat; once the process has exited it is
// revived from its transcript. It builds on the packages below it — agents/runtime (one
// agent's loop), agents/catalog (subagent types), agents/worktree, agents/store — and must
// not import headless or cmd, which sit above it.
//
// # Map
//
//	registry.go      Registry: the index of tasks, Launch Send Stop Wait CancelAll Shutdown
//	                 Reset
//	collect.go       Collect: a task's recorded outcome, and what a collect cut short returns
//	slots.go         the caps: slots of foreground and background turns, the FIFO queue of
//	                 turns waiting for one
//	config.go        RegistryConfig, its defaults, and TaskStore (what the registry stores with)
//	row.go           Row, Status, Outcome; the row state machine; the registry's row queries
//	controller.go    controller: one task — its row, runtime, transcript, worktree, the
//	                 cancel func and sequence of its turns; its state and scheduling
//	controller_turn.go     a turn: run (under its type's time limit), settle, finish
//	controller_persist.go  the task's transcript records and sidecar writes
//	controller_revive.go   the runtime revived from the transcript
//	controller_worktree.go the git worktree of an isolated turn, made and finalized
//	runner.go        turnRunner: where a turn runs (localRunner: this process)
//	env.go           what the controllers of one registry share
//	lifecycle.go     Lifecycle: every subagent turn, told to the command hooks
//	                 (CommandHooks), an SDK host and the run loop alike
//	notification.go  task_started, task_notification, the <task-notification> text
//	retention.go     pruning settled rows (MaxRetained), releasing resident runtimes
//	                 (ReleaseResidents, CheckWorkspace: a branch switch)
//	roster.go        LoadRoster and Restore: the tasks a resumed session brings back
//	sidecar.go       Sidecar: the schema of a task's sidecar (the store keeps the file)
//	tasktools.go     the task tools over a Registry and their call order (TaskToolOrder);
//	                 their descriptions are the .md files named after them (task.md, ...),
//	                 embedded
//	taskid.go        TaskID: generated, checked before any path is built
//	errors.go        sentinels
//
// Sub-packages: runtime (one agent: a chat and its tools), catalog (subagent types),
// worktree (the git worktree of an isolated turn), store (the session directory on disk:
// transcripts, sidecars, session.json), llm (the model vocabulary and providers), tools
// (workspace tools), mcp (the MCP client), permission (permission rules), hooks (command
// hooks), trace (OpenTelemetry), shellcmd, secrets.
//
// # Concurrency
//
// Every exported method of Registry is safe for concurrent use. Launch (foreground) and
// Collect block, under the caller's context; Send, Stop and CancelAll never wait for a
// turn; Wait blocks until every turn has settled; Shutdown waits for every turn to end.
//
// Two kinds of lock, always taken in this order:
//
//  1. Registry.mu guards the index (tasks), the lifetime context and the closed flag, and
//     every admission of a turn: Launch and Send take the turn's slot (or its place in the
//     queue, slots.mu, a leaf lock) and schedule the turn in one critical section with it,
//     so that Shutdown either waits for the turn or makes the launch fail, and Stop and
//     CancelAll always reach the turn's cancel func, queued or running.
//  2. controller.mu guards one task: its row, the messages queued for its running turn,
//     its runtime and transcript, and the cancel func of its latest turn. The start of a
//     queued turn (its slot came free) and the transitions out of running (complete, end)
//     happen under it alone, so the runtime's callbacks — the Inbox (Drain, Settle: claim
//     queued messages or commit the completion, atomically), the stop hook, the progress
//     events — never take Registry.mu.
//
// A turn waits for its slot on its own goroutine (the caller's, for a foreground launch),
// holding no lock; it gives the slot back, to the oldest waiter, once its outcome is
// recorded. The task calls of one parent reply take their slots in call order
// (TaskToolOrder, runtime.Admit: each waits, holding no lock, until the calls before it
// were admitted).
//
// Nothing is called while a lock is held except row transitions, transcript writes and
// cancel funcs: events, notifications, lifecycle calls and hooks run outside both, and a
// sidecar write holds only its task's write lock (controller.wmu).
//
// One task's turns never overlap: each scheduled turn waits until the previous one has
// finished, whichever runtime it ran on. A turn has settled once its outcome is recorded,
// its notification delivered (Notify), the rows it pushed over MaxRetained disposed and
// Lifecycle.TurnSettled returned; only then do Collect and Wait return for it.
//
// Every goroutine the registry starts is a turn: it ends when its turn has settled, its
// context derives from the registry's lifetime (cancelled by Shutdown) or, for a
// foreground turn, runs on the caller's goroutine; Shutdown waits for all of them.
package agents
