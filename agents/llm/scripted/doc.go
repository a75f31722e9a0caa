// Package scripted is a model provider that answers from a scenario file instead of a
// network endpoint.
//
// A scenario is an ordered list of rules. For each request, the first rule whose agent
// and conditions match the request is chosen, and its reply is rendered with Go
// text/template functions that read the request itself (match, lastMatch, lastUser,
// lastToolResult, step, agent). A scripted run therefore only produces the expected
// output when the history the runtime sends really holds what the test expects.
//
// Every request is recorded (Model.Requests) and every rule that never fired is
// reported (Model.Unused), so tests can verify both what was sent and that the whole
// scenario was played. The format is documented in scenarios/README.md.
package scripted
