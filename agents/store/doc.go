// Package store keeps stoke's sessions on disk. It owns the layout of $STOKE_HOME and
// every write under it; nothing outside it spells a file name of a session:
//
//	$STOKE_HOME/projects/<cwd-key>/<session-id>/
//	  session.json              Info, written atomically
//	  session.jsonl             the parent's transcript (Transcript, append-only JSONL)
//	  agents/<task-id>.jsonl    each subagent's transcript
//	  agents/<task-id>.meta.json  each subagent's sidecar, written atomically
//	  worktrees/                isolated agents' git worktrees
//
// A Session is one session directory. Transcripts are written through Transcript, one
// whole line per record, synced at turn boundaries; sidecars and session.json are replaced
// atomically (temporary file, rename). The store knows the transcript's records (Record)
// but not what a sidecar holds: the agents package owns that schema and hands the store
// bytes.
//
// Durability. A crash of the process loses nothing that was written: every record is
// written whole before anything announces it. Against a crash of the machine, a turn
// boundary makes the turn durable in two fsyncs: the task's transcript (its history, and
// the end-of-turn record carrying the row as the sidecar holds it), then the agents/
// directory, after the sidecar was replaced (SyncSidecars; one fsync serves every task
// that asks at once). A sidecar has no sync of its own: one left empty or torn is rebuilt
// from its transcript's last row. session.json's content is synced as it is written, its
// name with the parent's turn boundary (Session.Sync). A launch, or a queued turn that
// starts, is durable with the task's next boundary.
//
// Files. A Session holds no file open between writes: a transcript is opened for each
// write and sync, and a Session's writes hold at most MaxOpenFiles files at once, however
// many agents write; an open that fails for want of descriptors (EMFILE) is retried.
//
// Reading never fails on a torn or corrupt transcript line: it is skipped with a warning,
// so a crash mid-write loses only the record that was never complete.
package store
