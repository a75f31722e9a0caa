// Package acp serves the Agent Client Protocol (ACP v1, JSON-RPC over stdio) as an agent:
// `stoke --acp`, the entry point through which editors (Zed, JetBrains IDEs, Neovim,
// Emacs) drive stoke. One process serves many sessions; each is a headless session of its
// own (headless.Assemble, then headless.Serve with the prompts it reads), built from its
// own Options: its working directory with that project's settings, its MCP servers, its
// store binding, its registry.
//
// # Map
//
//	server.go   Serve and the agent's methods: initialize, authenticate, session/new,
//	            session/load, session/resume, session/list, session/close, session/set_mode,
//	            session/set_config_option, session/set_model, session/cancel, session/prompt
//	session.go  one ACP session: its parts, the loop that serves them, the prompt running,
//	            cancel and close
//	updates.go  the session's events as session/update notifications (headless.ModelSink):
//	            message chunks, tool calls, the turns of background agents; the replay of
//	            a loaded session's history
//	content.go  ACP content (text, images, resource links, embedded resources) as the
//	            parent's user message; tool titles, kinds, locations and diffs
//	approve.go  session modes (the approval modes) and session/request_permission for
//	            the calls the mode in force does not allow (headless.Approvals)
//	files.go    fs/read_text_file and fs/write_text_file for the file tools (tools.Files)
//	terminal.go terminal/* for the shell tool (tools.Terminal)
//	model.go    the model selector (the "model" configuration option, session/set_model)
//
// The protocol's plumbing (framing, request ids, the generated types) is
// github.com/coder/acp-go-sdk's; this package maps stoke onto it and holds no state of its
// own outside the server value Serve makes.
package acp
