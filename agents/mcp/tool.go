package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/tools"
)

// Prefix starts the name of every MCP tool: mcp__<server>__<tool>.
const Prefix = "mcp__"

// maxResultChars bounds the text of one tool result the model sees (about 25,000 tokens,
// Claude Code's default for MCP output).
const maxResultChars = 100_000

// maxToolName is the longest tool name OpenAI's API accepts.
const maxToolName = 64

// ToolName is the name the model sees for tool of server: mcp__<server>__<tool>, with
// every character other than ASCII letters, digits, _ and - replaced by _ (the names
// model APIs accept).
// A name longer than the APIs accept is cut, and ends in a hash of server and tool
// (distinctName).
func ToolName(server, tool string) string {
	name := ServerPrefix(server) + llm.SanitizeName(tool)
	if len(name) > maxToolName {
		return distinctName(server, tool)
	}
	return name
}

// distinctName is the name of tool of server cut to leave room for "_" and 8 hex digits
// of a hash of both: a name of its own for a tool whose ToolName is too long, or is
// already another tool's once sanitized ("get.x" and "get_x").
func distinctName(server, tool string) string {
	sum := sha256.Sum256([]byte(server + "\x00" + tool))
	suffix := "_" + hex.EncodeToString(sum[:4])
	name := ServerPrefix(server) + llm.SanitizeName(tool)
	return name[:min(len(name), maxToolName-len(suffix))] + suffix
}

// ServerPrefix is the start of the names of server's tools: mcp__<server>__.
func ServerPrefix(server string) string { return Prefix + llm.SanitizeName(server) + "__" }

// Tool is one tool of a connected server, as a tools.Tool. It is not gated: the caller
// wraps it in the approval of command-running tools.
type Tool struct {
	server  *server
	session *sdk.ClientSession
	name    string // the server's name for it
	spec    llm.ToolSpec
	// readOnly: the server annotates the tool readOnlyHint (it changes nothing).
	readOnly bool
}

func newTool(s *server, session *sdk.ClientSession, t *sdk.Tool, name string) *Tool {
	desc := t.Description
	if desc == "" {
		desc = t.Title
	}
	return &Tool{server: s, session: session, name: t.Name, spec: llm.ToolSpec{
		Name:        name,
		Description: desc,
		Parameters:  inputSchema(t.InputSchema),
	}, readOnly: t.Annotations != nil && t.Annotations.ReadOnlyHint}
}

// Server is the name of the tool's server.
func (t *Tool) Server() string { return t.server.name }

// Spec implements tools.Tool: the server's description and input schema.
func (t *Tool) Spec() llm.ToolSpec { return t.spec }

// ReadOnly implements tools.ReadOnly: the server annotates the tool readOnlyHint, so
// consecutive calls of it (and of other read-only tools) in one reply run together. A
// hint is the server's word, as the MCP specification says; a server that is trusted to
// run is trusted to say it.
func (t *Tool) ReadOnly() bool { return t.readOnly }

// Run implements tools.Tool: one tools/call. What the tool reports as an error
// (isError) and what goes wrong on the way (the server is gone, the call timed out) are
// both error results the model sees; neither fails the run.
func (t *Tool) Run(ctx context.Context, call tools.Call) tools.Result {
	args := json.RawMessage(call.Input)
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	callCtx, cancel := context.WithTimeout(ctx, t.server.callTimeout)
	defer cancel()
	res, err := t.session.CallTool(callCtx, &sdk.CallToolParams{Name: t.name, Arguments: args})
	if err != nil {
		var answered *jsonrpc.Error
		switch {
		case ctx.Err() != nil:
			return tools.Errorf("MCP server %q: %s failed: cancelled: %v", t.server.name, t.name, context.Cause(ctx))
		case callCtx.Err() != nil:
			// The server may still answer later calls: it stays connected.
			return tools.Errorf("MCP server %q: %s did not answer within %s; the call was cancelled", t.server.name, t.name, t.server.callTimeout)
		case !errors.As(err, &answered):
			t.server.markLost(err) // not an answer from the server: the transport failed
		}
		return tools.Errorf("MCP server %q: %s failed: %s", t.server.name, t.name, redact(err.Error(), t.server.conf.secrets()))
	}
	return tools.Result{Content: t.server.creds.Redact(resultText(res)), IsError: res.IsError}
}

// inputSchema is the schema the model is given: the server's, without a $schema key
// (model APIs and our validator want plain draft 2020-12 objects), or an empty object
// schema when the server sent none.
func inputSchema(s any) json.RawMessage {
	m, ok := s.(map[string]any)
	if !ok || len(m) == 0 {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	c := make(map[string]any, len(m))
	for k, v := range m {
		if k != "$schema" {
			c[k] = v
		}
	}
	if _, ok := c["type"]; !ok {
		c["type"] = "object"
	}
	data, err := json.Marshal(c)
	if err != nil {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return data
}

// resultText renders a call's content as the text of a tool result: text as it is,
// embedded text resources by their text, and a one-line note for what a text result
// cannot hold (images, audio, binary resources, links). A result with structured content
// only is its JSON.
func resultText(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image: %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio: %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource link: %s %s]", c.URI, c.Name))
		case *sdk.EmbeddedResource:
			switch r := c.Resource; {
			case r == nil:
			case r.Text != "":
				parts = append(parts, r.Text)
			default:
				parts = append(parts, fmt.Sprintf("[resource: %s, %s, %d bytes]", r.URI, r.MIMEType, len(r.Blob)))
			}
		default:
			if data, err := json.Marshal(c); err == nil {
				parts = append(parts, string(data))
			}
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if data, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(data))
		}
	}
	text := strings.Join(parts, "\n")
	if len(text) > maxResultChars {
		cut := maxResultChars
		for cut > 0 && !utf8Start(text[cut]) {
			cut--
		}
		text = text[:cut] + fmt.Sprintf("\n[output truncated: %d of %d bytes shown]", cut, len(text))
	}
	return text
}

// utf8Start reports whether b can start a UTF-8 sequence.
func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
