// Package cassette records the model calls of a run and replays them: a Recorder wraps
// any llm.Model (stoke --record FILE) and writes every call to a cassette; a Replayer
// (stoke --replay FILE) answers every call from one, with no network. docs/record-replay.md
// is the user's guide.
//
// A cassette is a scripted scenario (scenarios/README.md) with one rule per call: agent,
// when.step, once and a literal reply (text, tool calls with their ids and arguments in
// the order the model wrote them, usage, stop reason, or the error), plus a header
// (cassette:) and each rule's call metadata (call:) that the scripted provider ignores.
//
// A call is keyed by its agent's identity and its index among that agent's calls. The
// identity of a subagent is its type and the position of the tool call that launched it
// (identity.go), which parallel agents cannot share, and its task id is derived from that
// position and the cassette's seed, so a replay names every task as the recording did.
//
// Each call's request is fingerprinted (fingerprint.go): a hash of the normalised model,
// system prompt, tools and messages. The cassette keeps the fingerprint and an outline
// of the request (hashes, ids and names, never the text sent), from which a replay names
// the first field that differs.
//
// The recorder appends and syncs each entry as its answer ends, to FILE.partial, renamed
// to FILE when the run is over: a process that dies leaves the calls answered so far.
// It records, for each answer, the requests and the ends of turns that came before it; a
// strict replay waits for the same before answering, which keeps runs with parallel
// background agents deterministic.
package cassette
