// Package runtime owns one agent: a chat and its prepared tools. Execute runs one turn —
// the instruction as a user message, then model calls and tool rounds until the model
// answers without tool calls — asking its Inbox for the input that arrived meanwhile; the
// turn ends with one of the turn reasons (ReasonCompleted, ...), which this package alone
// spells. How the calls of one reply are ordered is a policy it is handed (Config.Order,
// callorder.go), never a tool it knows by name. The agent loop knows no task: it must not
// import package agents (the registry, its controllers and the task tools),
// agents/catalog (subagent types), or anything of headless and cmd.
package runtime
