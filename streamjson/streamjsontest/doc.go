// Package streamjsontest checks stream-json output against the contract (DESIGN.md, and
// the minimum compatibility checklist of the stream-json conventions): the keys the
// Claude Agent SDKs read, the order of lines, one session, the task lifecycle. Tests and
// the e2e harness use it; stoke itself never does. SyncBuffer collects what a run writes
// from several goroutines.
package streamjsontest
