// Package catalog owns the subagent types of a run: the built-in one, and the agent files
// of $STOKE_HOME, .qwen, .claude and .stoke (Markdown with YAML front matter, as Claude
// Code and Qwen Code write them), with what they make of models (ResolveModel), tools,
// approval modes, hooks, MCP servers (MCPPlan) and the caps of a turn; LoadDefinitions
// builds the Catalog a registry launches from, and Inspect says what it found and why.
// It describes types and runs nothing: it must not import package agents (the tasks of a
// session), agents/runtime (one agent's loop) or anything of headless and cmd.
package catalog
