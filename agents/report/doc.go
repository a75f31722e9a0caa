// Package report draws a stored session: Load reads what the session directory holds (the
// parent's transcript, each agent's transcript and sidecar, session.json) into a Report,
// the model every rendering is made from, and HTML, Markdown and JSON render it.
//
//	Report        the session, its totals, one Lane per agent (the parent first), the agents
//	              table, the notifications the parent received, and what the session did not
//	              record (Missing: a session written by an older stoke still reports)
//	Lane          one agent's turns over time
//	Turn          one instruction of an agent: when it was queued, started and ended, how it
//	              ran (fresh, resident, revived), its outcome, usage, cost, tool calls and
//	              conversation
//
// The JSON model is documented in docs/report.md, so that others can draw their own. Text
// from the session is redacted (Options.Redact) before it is cut to a readable length;
// the HTML escapes everything it shows (html/template) and forbids every script but its
// own and every request (Content-Security-Policy), so that the report of an untrusted
// session is inert.
package report
