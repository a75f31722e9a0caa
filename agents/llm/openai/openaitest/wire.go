package openaitest

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/llmtest"
)

// The OpenAI chat-completions wire shapes, as much of them as stoke uses.

type chatRequest struct {
	Model         string         `json:"model"`
	Messages      []chatMessage  `json:"messages"`
	Tools         []chatTool     `json:"tools"`
	Stream        bool           `json:"stream"`
	StreamOptions *streamOptions `json:"stream_options"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatMessage struct {
	Role string `json:"role"`
	// Content is a string, null, or an array of content parts.
	Content    json.RawMessage `json:"content"`
	ToolCalls  []toolCall      `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

type contentPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL *struct {
		URL string `json:"url"`
	} `json:"image_url"`
	File *struct {
		FileData string `json:"file_data"`
		Filename string `json:"filename"`
	} `json:"file"`
}

type toolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function functionCall `json:"function"`
}

type functionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type chatTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

type chunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []chunkChoice `json:"choices"`
	Usage   *usage        `json:"usage,omitempty"`
}

type chunkChoice struct {
	Index        int     `json:"index"`
	Delta        delta   `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

type delta struct {
	Role      string          `json:"role,omitempty"`
	Content   *string         `json:"content,omitempty"`
	ToolCalls []toolCallDelta `json:"tool_calls,omitempty"`
}

type toolCallDelta struct {
	Index    int           `json:"index"`
	ID       string        `json:"id,omitempty"`
	Type     string        `json:"type,omitempty"`
	Function functionDelta `json:"function"`
}

type functionDelta struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type completion struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []completionChoice `json:"choices"`
	Usage   usage              `json:"usage"`
}

type completionChoice struct {
	Index        int               `json:"index"`
	Message      completionMessage `json:"message"`
	FinishReason string            `json:"finish_reason"`
}

type completionMessage struct {
	Role      string     `json:"role"`
	Content   *string    `json:"content"`
	ToolCalls []toolCall `json:"tool_calls,omitempty"`
}

type usage struct {
	PromptTokens        int64         `json:"prompt_tokens"`
	CompletionTokens    int64         `json:"completion_tokens"`
	TotalTokens         int64         `json:"total_tokens"`
	PromptTokensDetails *promptDetail `json:"prompt_tokens_details,omitempty"`
}

type promptDetail struct {
	CachedTokens int64 `json:"cached_tokens"`
}

type apiError struct {
	Error apiErrorBody `json:"error"`
}

type apiErrorBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// errBadRequest marks a request body the real API would reject with 400.
var errBadRequest = errors.New("invalid request")

var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// toRequest converts an OpenAI chat-completions body into an llm.Request. It rejects,
// as the real API does, histories where an assistant's tool calls are not answered by
// the tool messages right after it, and tool messages that answer no call.
func toRequest(body chatRequest) (*llm.Request, error) {
	if body.Model == "" {
		return nil, fmt.Errorf("%w: you must provide a model parameter", errBadRequest)
	}
	if len(body.Messages) == 0 {
		return nil, fmt.Errorf("%w: messages must not be empty", errBadRequest)
	}
	req := &llm.Request{Model: body.Model, Messages: []llm.Message{}}
	for _, t := range body.Tools {
		if t.Type != "function" || !toolName.MatchString(t.Function.Name) {
			return nil, fmt.Errorf("%w: tools: invalid function tool %q", errBadRequest, t.Function.Name)
		}
		req.Tools = append(req.Tools, llm.ToolSpec{
			Name:        t.Function.Name,
			Description: t.Function.Description,
			Parameters:  t.Function.Parameters,
		})
	}
	var system []string
	pending := map[string]bool{} // tool call ids the next tool messages must answer
	for i, m := range body.Messages {
		if m.Role != "tool" && len(pending) > 0 {
			return nil, fmt.Errorf("%w: messages[%d]: an assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'", errBadRequest, i)
		}
		text, err := contentText(m.Content, m.Role == "user")
		if err != nil {
			return nil, fmt.Errorf("%w: messages[%d].content: %v", errBadRequest, i, err)
		}
		switch m.Role {
		case "system", "developer":
			system = append(system, text)
		case "user":
			blocks, err := userBlocks(m.Content, text)
			if err != nil {
				return nil, fmt.Errorf("%w: messages[%d].content: %v", errBadRequest, i, err)
			}
			// A user message right after tool results belongs to the same turn (stoke
			// sends notifications that arrived mid-turn that way): merge it back into the
			// user message holding the results, as stoke's own history has it.
			if i > 0 && body.Messages[i-1].Role == "tool" {
				last := &req.Messages[len(req.Messages)-1]
				last.Content = append(last.Content, blocks...)
			} else {
				req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Content: blocks})
			}
		case "assistant":
			msg := llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{}}
			if text != "" {
				msg.Content = append(msg.Content, llm.TextBlock(text))
			}
			for _, c := range m.ToolCalls {
				if c.ID == "" || !toolName.MatchString(c.Function.Name) {
					return nil, fmt.Errorf("%w: messages[%d].tool_calls: missing id or invalid name", errBadRequest, i)
				}
				pending[c.ID] = true
				msg.Content = append(msg.Content, llm.Block{
					Type: llm.BlockToolUse, ID: c.ID, Name: c.Function.Name, Input: rawArguments(c.Function.Arguments),
				})
			}
			req.Messages = append(req.Messages, msg)
		case "tool":
			if !pending[m.ToolCallID] {
				return nil, fmt.Errorf("%w: messages[%d]: messages with role 'tool' must be a response to a preceding message with 'tool_calls' (tool_call_id %q)", errBadRequest, i, m.ToolCallID)
			}
			delete(pending, m.ToolCallID)
			result := llm.Block{Type: llm.BlockToolResult, ToolUseID: m.ToolCallID, Content: text}
			if i > 0 && body.Messages[i-1].Role == "tool" {
				last := &req.Messages[len(req.Messages)-1]
				last.Content = append(last.Content, result)
			} else {
				req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Content: []llm.Block{result}})
			}
		default:
			return nil, fmt.Errorf("%w: messages[%d]: unknown role %q", errBadRequest, i, m.Role)
		}
	}
	if len(pending) > 0 {
		return nil, fmt.Errorf("%w: an assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'", errBadRequest)
	}
	req.System = strings.Join(system, "\n\n")
	req.Agent = llmtest.AgentOf(req)
	return req, nil
}

// contentText reads a message content: a string, null, or text parts (joined). With
// media, image_url and file parts are allowed (userBlocks reads them) and skipped here.
func contentText(raw json.RawMessage, media bool) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []contentPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("want a string or an array of content parts")
	}
	var b strings.Builder
	for _, p := range parts {
		switch {
		case p.Type == "text":
			b.WriteString(p.Text)
		case media && (p.Type == "image_url" || p.Type == "file"):
		default:
			return "", fmt.Errorf("unsupported content part %q", p.Type)
		}
	}
	return b.String(), nil
}

// userBlocks reads a user message's content as blocks: one text block for a string or
// text parts alone (text is what contentText read), or, with media, one block per part: text, image_url (a data URL is a
// base64 image, another URL an image by url), file (a data URL's bytes as a base64
// document, the file name as its title).
func userBlocks(raw json.RawMessage, text string) ([]llm.Block, error) {
	var parts []contentPart
	if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &parts) != nil ||
		!slices.ContainsFunc(parts, func(p contentPart) bool { return p.Type != "text" }) {
		return []llm.Block{llm.TextBlock(text)}, nil
	}
	var out []llm.Block
	for j, p := range parts {
		switch p.Type {
		case "text":
			out = append(out, llm.TextBlock(p.Text))
		case "image_url":
			if p.ImageURL == nil || p.ImageURL.URL == "" {
				return nil, fmt.Errorf("[%d].image_url.url: missing", j)
			}
			src := &llm.Source{Type: llm.SourceURL, URL: p.ImageURL.URL}
			if mt, data, ok := dataURL(p.ImageURL.URL); ok {
				src = &llm.Source{Type: llm.SourceBase64, MediaType: mt, Data: data}
			}
			out = append(out, llm.Block{Type: llm.BlockImage, Source: src})
		case "file":
			if p.File == nil {
				return nil, fmt.Errorf("[%d].file: missing", j)
			}
			mt, data, ok := dataURL(p.File.FileData)
			if !ok {
				return nil, fmt.Errorf("[%d].file.file_data: not a base64 data URL", j)
			}
			out = append(out, llm.Block{Type: llm.BlockDocument, Title: p.File.Filename,
				Source: &llm.Source{Type: llm.SourceBase64, MediaType: mt, Data: data}})
		}
	}
	return out, nil
}

// dataURL splits "data:MEDIA;base64,DATA".
func dataURL(u string) (mediaType, data string, ok bool) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return "", "", false
	}
	head, data, ok := strings.Cut(rest, ",")
	mediaType, ok2 := strings.CutSuffix(head, ";base64")
	return mediaType, data, ok && ok2
}

// rawArguments turns a function call's arguments string into a tool_use input.
func rawArguments(args string) json.RawMessage {
	switch {
	case strings.TrimSpace(args) == "":
		return json.RawMessage(`{}`)
	case json.Valid([]byte(args)):
		return json.RawMessage(args)
	default:
		// Keep what the client sent, visibly, rather than guessing.
		b, _ := json.Marshal(args)
		return b
	}
}

// finishReason maps a stop reason to OpenAI's finish_reason.
func finishReason(stop string, toolCalls int) string {
	switch {
	case toolCalls > 0:
		return "tool_calls"
	case stop == llm.StopMaxTokens:
		return "length"
	default:
		return "stop"
	}
}
