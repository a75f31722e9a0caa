package acp

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/stoke-cli/stoke/agents"
	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/mcp"
	"github.com/stoke-cli/stoke/agents/tools"
)

// userMessage is a prompt's content as the parent's user message: text as it is; images
// as image blocks (the model must take them, llm.CheckInput); a resource link as a line
// naming it (the file tools read it); an embedded resource's text in a <context> block
// naming its URI, a blob that is an image or a PDF as an image or a document block.
// Audio, and other blobs, are refused.
func userMessage(content []sdk.ContentBlock) (llm.Message, error) {
	var out []llm.Block
	for i, c := range content {
		b, err := promptBlock(c)
		if err != nil {
			return llm.Message{}, fmt.Errorf("prompt[%d]: %w", i, err)
		}
		out = append(out, b)
	}
	if len(out) == 0 {
		return llm.Message{}, errors.New("the prompt is empty")
	}
	return llm.Message{Role: llm.RoleUser, Content: out}, nil
}

func promptBlock(c sdk.ContentBlock) (llm.Block, error) {
	switch {
	case c.Text != nil:
		return llm.TextBlock(c.Text.Text), nil
	case c.Image != nil:
		if c.Image.Data == "" && c.Image.Uri != nil {
			return llm.Block{Type: llm.BlockImage, Source: &llm.Source{Type: llm.SourceURL, URL: *c.Image.Uri}}, nil
		}
		return llm.Block{Type: llm.BlockImage, Source: &llm.Source{Type: llm.SourceBase64, MediaType: c.Image.MimeType, Data: c.Image.Data}}, nil
	case c.ResourceLink != nil:
		l := c.ResourceLink
		text := fmt.Sprintf("[@%s](%s)", l.Name, l.Uri)
		if l.Description != nil && *l.Description != "" {
			text += ": " + *l.Description
		}
		return llm.TextBlock(text), nil
	case c.Resource != nil:
		return embedded(c.Resource.Resource)
	case c.Audio != nil:
		return llm.Block{}, errors.New("audio is not supported (promptCapabilities.audio is false)")
	}
	return llm.Block{}, errors.New("a content block of no type stoke knows")
}

// embedded is an embedded resource as a block of the parent's user message.
func embedded(r sdk.EmbeddedResourceResource) (llm.Block, error) {
	if t := r.TextResourceContents; t != nil {
		return llm.TextBlock(fmt.Sprintf("<context ref=%q>\n%s\n</context>", t.Uri, t.Text)), nil
	}
	b := r.BlobResourceContents
	if b == nil {
		return llm.Block{}, errors.New("an embedded resource with neither text nor blob")
	}
	mime := ""
	if b.MimeType != nil {
		mime = *b.MimeType
	}
	switch {
	case strings.HasPrefix(mime, "image/"):
		return llm.Block{Type: llm.BlockImage, Source: &llm.Source{Type: llm.SourceBase64, MediaType: mime, Data: b.Blob}}, nil
	case mime == "application/pdf":
		return llm.Block{Type: llm.BlockDocument, Title: b.Uri, Source: &llm.Source{Type: llm.SourceBase64, MediaType: mime, Data: b.Blob}}, nil
	}
	return llm.Block{}, fmt.Errorf("embedded resource %s: a %q blob is not supported (text, images and PDF are)", b.Uri, mime)
}

// userChunk is a block of a stored user message as a user_message_chunk of a replay:
// the person's text and images; not the notifications, reminders and tool results that
// stoke put in the parent's conversation.
func userChunk(b llm.Block) (sdk.ContentBlock, bool) {
	switch b.Type {
	case llm.BlockText:
		t := strings.TrimSpace(b.Text)
		if t == "" || strings.HasPrefix(t, "<task-notification>") || strings.HasPrefix(t, "<system-reminder>") {
			return sdk.ContentBlock{}, false
		}
		return sdk.TextBlock(b.Text), true
	case llm.BlockImage:
		if s := b.Source; s != nil && s.Type == llm.SourceBase64 {
			return sdk.ImageBlock(s.Data, s.MediaType), true
		}
	}
	return sdk.ContentBlock{}, false
}

// takesImages reports whether the model takes images in prompts.
func takesImages(m llm.Model) bool {
	if m == nil {
		return false
	}
	probe := llm.Message{Role: llm.RoleUser, Content: []llm.Block{{Type: llm.BlockImage,
		Source: &llm.Source{Type: llm.SourceBase64, MediaType: "image/png", Data: "iVBORw0KGgo="}}}}
	return llm.CheckInput(m, probe) == nil
}

// mcpConfigs are the MCP servers a client names for a session, as stoke configures them.
func mcpConfigs(servers []sdk.McpServer) (map[string]mcp.ServerConfig, error) {
	out := map[string]mcp.ServerConfig{}
	for i, s := range servers {
		var name string
		var c mcp.ServerConfig
		switch {
		case s.Stdio != nil:
			name = s.Stdio.Name
			c = mcp.ServerConfig{Type: mcp.TransportStdio, Command: s.Stdio.Command, Args: s.Stdio.Args, Env: map[string]string{}}
			for _, e := range s.Stdio.Env {
				c.Env[e.Name] = e.Value
			}
		case s.Http != nil:
			name = s.Http.Name
			c = mcp.ServerConfig{Type: mcp.TransportHTTP, URL: s.Http.Url, Headers: headers(s.Http.Headers)}
		case s.Sse != nil:
			name = s.Sse.Name
			c = mcp.ServerConfig{Type: mcp.TransportSSE, URL: s.Sse.Url, Headers: headers(s.Sse.Headers)}
		default:
			return nil, fmt.Errorf("mcpServers[%d]: a transport stoke does not take (stdio, http and sse are)", i)
		}
		c.Source = "the ACP client"
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("mcpServers[%d] %q: %w", i, name, err)
		}
		if name == "" {
			return nil, fmt.Errorf("mcpServers[%d]: a server needs a name", i)
		}
		out[name] = c
	}
	return out, nil
}

func headers(hs []sdk.HttpHeader) map[string]string {
	out := make(map[string]string, len(hs))
	for _, h := range hs {
		out[h.Name] = h.Value
	}
	return out
}

// toolArgs are the arguments of the workspace and task tools that titles and locations
// name.
type toolArgs struct {
	FilePath    string `json:"file_path"`
	Offset      int    `json:"offset"`
	Content     string `json:"content"`
	OldString   string `json:"old_string"`
	NewString   string `json:"new_string"`
	Pattern     string `json:"pattern"`
	Path        string `json:"path"`
	Command     string `json:"command"`
	Description string `json:"description"`
	Background  bool   `json:"run_in_background"`
	TaskID      string `json:"task_id"`
}

// isEdit reports whether the tool named changes files.
func isEdit(name string) bool { return name == tools.NameWriteFile || name == tools.NameEdit }

// toolCall is a parent tool call as an ACP tool_call: its kind, a title that says what it
// does, the files it touches (absolute, under cwd), a diff for an edit.
func toolCall(b llm.Block, cwd string) *sdk.SessionUpdateToolCall {
	var a toolArgs
	_ = json.Unmarshal(b.Input, &a)
	tc := &sdk.SessionUpdateToolCall{ToolCallId: sdk.ToolCallId(b.ID), Status: sdk.ToolCallStatusInProgress,
		Kind: toolKind(b.Name), Title: toolTitle(b.Name, a), RawInput: rawInput(b.Input)}
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(cwd, p)
	}
	if p := abs(a.FilePath); p != "" {
		loc := sdk.ToolCallLocation{Path: p}
		if a.Offset > 0 {
			loc.Line = sdk.Ptr(a.Offset)
		}
		tc.Locations = []sdk.ToolCallLocation{loc}
		switch b.Name {
		case tools.NameWriteFile:
			old, err := os.ReadFile(p)
			if err == nil && len(old) <= maxDiffBytes {
				tc.Content = []sdk.ToolCallContent{sdk.ToolDiffContent(p, a.Content, string(old))}
			} else {
				tc.Content = []sdk.ToolCallContent{sdk.ToolDiffContent(p, a.Content)}
			}
		case tools.NameEdit:
			tc.Content = []sdk.ToolCallContent{sdk.ToolDiffContent(p, a.NewString, a.OldString)}
		}
	} else if p := abs(a.Path); p != "" && (b.Name == tools.NameGlob || b.Name == tools.NameGrep) {
		tc.Locations = []sdk.ToolCallLocation{{Path: p}}
	}
	return tc
}

// maxDiffBytes caps the old text a write_file diff shows.
const maxDiffBytes = 1 << 20

func toolKind(name string) sdk.ToolKind {
	switch name {
	case tools.NameReadFile:
		return sdk.ToolKindRead
	case tools.NameWriteFile, tools.NameEdit:
		return sdk.ToolKindEdit
	case tools.NameGlob, tools.NameGrep:
		return sdk.ToolKindSearch
	case tools.NameShell:
		return sdk.ToolKindExecute
	case agents.ToolTask, agents.ToolSendMessage:
		return sdk.ToolKindThink
	}
	return sdk.ToolKindOther
}

func toolTitle(name string, a toolArgs) string {
	switch name {
	case tools.NameReadFile:
		return "Read " + a.FilePath
	case tools.NameWriteFile:
		return "Write " + a.FilePath
	case tools.NameEdit:
		return "Edit " + a.FilePath
	case tools.NameGlob:
		return "Find " + a.Pattern
	case tools.NameGrep:
		return "Search " + a.Pattern
	case tools.NameShell:
		return "Run " + oneLine(a.Command, 120)
	case agents.ToolTask:
		if a.Background {
			return "Agent: " + a.Description + " (background)"
		}
		return "Agent: " + a.Description
	case agents.ToolSendMessage:
		return "Message to agent " + a.TaskID
	case agents.ToolTaskStop:
		return "Stop agent " + a.TaskID
	case agents.ToolListAgents:
		return "List agents"
	}
	return name
}

// oneLine is s on one line, cut to at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
