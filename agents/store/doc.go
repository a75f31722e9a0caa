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
// atomically and durably (temporary file, fsync, rename, directory fsync). The store knows
// the transcript's records (Record) but not what a sidecar holds: the agents package owns
// that schema and hands the store bytes.
//
// Reading never fails on a torn or corrupt transcript line: it is skipped with a warning,
// so a crash mid-write loses only the record that was never complete.
package store
