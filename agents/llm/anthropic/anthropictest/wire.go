package anthropictest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/llmtest"
)

// The Messages API wire shapes, as much of them as stoke uses.

// messagesRequest is a request body. System, message contents and tools stay raw,
// because the prompt cache is keyed by their exact bytes.
type messagesRequest struct {
	Model     string            `json:"model"`
	MaxTokens int64             `json:"max_tokens"`
	System    json.RawMessage   `json:"system"`
	Messages  []wireMessage     `json:"messages"`
	Tools     []json.RawMessage `json:"tools"`
	Stream    bool              `json:"stream"`
}

type wireMessage struct {
	Role string `json:"role"`
	// Content is a string or an array of content blocks.
	Content json.RawMessage `json:"content"`
}

// wireBlock is a content block of a request (text, tool_use, tool_result).
type wireBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"` // tool_result: a string or text blocks
	IsError   bool            `json:"is_error"`
	Source    *llm.Source     `json:"source"` // image, document
	Title     string          `json:"title"`  // document
}

type wireTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// message is a response message (non-streamed answer, and message_start).
type message struct {
	ID           string          `json:"id"`
	Type         string          `json:"type"`
	Role         string          `json:"role"`
	Model        string          `json:"model"`
	Content      []responseBlock `json:"content"`
	StopReason   *string         `json:"stop_reason"`
	StopSequence *string         `json:"stop_sequence"`
	Usage        usage           `json:"usage"`
}

// responseBlock is a content block of an answer: text or tool_use.
type responseBlock struct {
	Type  string          `json:"type"`
	Text  *string         `json:"text,omitempty"`
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
}

type usage struct {
	InputTokens              int64 `json:"input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
}

// Stream events.

type messageStart struct {
	Type    string  `json:"type"`
	Message message `json:"message"`
}

type blockStart struct {
	Type         string        `json:"type"`
	Index        int           `json:"index"`
	ContentBlock responseBlock `json:"content_block"`
}

type blockDelta struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
	Delta delta  `json:"delta"`
}

type delta struct {
	Type        string  `json:"type"`
	Text        *string `json:"text,omitempty"`
	PartialJSON *string `json:"partial_json,omitempty"`
}

type blockStop struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
}

type messageDelta struct {
	Type  string     `json:"type"`
	Delta stopDelta  `json:"delta"`
	Usage deltaUsage `json:"usage"`
}

type stopDelta struct {
	StopReason   string  `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
}

// deltaUsage is message_delta's usage: output tokens, and cumulative input counts when
// the server sends them.
type deltaUsage struct {
	OutputTokens             int64  `json:"output_tokens"`
	InputTokens              *int64 `json:"input_tokens,omitempty"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens,omitempty"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens,omitempty"`
}

type typeOnly struct {
	Type string `json:"type"`
}

type apiError struct {
	Type  string       `json:"type"`
	Error apiErrorBody `json:"error"`
}

type apiErrorBody struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// errBadRequest marks a request body the real API would reject with 400.
var errBadRequest = errors.New("invalid request")

// maxBreakpoints is the API's limit on blocks with cache_control in one request.
const maxBreakpoints = 4

var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,128}$`)

// parsed is a request body taken apart: the llm.Request handed to the model, and the
// prompt's elements in cache order (tools, system, messages) for the prompt cache.
type parsed struct {
	body  messagesRequest
	req   *llm.Request
	elems []element
}

// parse decodes and checks a request body the way the API does and converts it.
// Consecutive messages of the same role are merged, as the API merges them.
func parse(raw []byte) (*parsed, error) {
	var body messagesRequest
	if err := json.Unmarshal(raw, &body); err != nil {
		return nil, fmt.Errorf("%w: body is not valid JSON: %v", errBadRequest, err)
	}
	switch {
	case body.Model == "":
		return nil, fmt.Errorf("%w: model: Field required", errBadRequest)
	case body.MaxTokens <= 0:
		return nil, fmt.Errorf("%w: max_tokens: Field required (a positive integer)", errBadRequest)
	case len(body.Messages) == 0:
		return nil, fmt.Errorf("%w: messages: at least one message is required", errBadRequest)
	}
	p := &parsed{body: body, req: &llm.Request{Model: body.Model, Messages: []llm.Message{}}}
	if err := p.tools(); err != nil {
		return nil, err
	}
	if err := p.system(); err != nil {
		return nil, err
	}
	if err := p.messages(); err != nil {
		return nil, err
	}
	n := 0
	for _, e := range p.elems {
		if e.breakpoint {
			n++
		}
	}
	if n > maxBreakpoints {
		return nil, fmt.Errorf("%w: A maximum of %d blocks with cache_control may be provided. Found %d", errBadRequest, maxBreakpoints, n)
	}
	p.req.Agent = llmtest.AgentOf(p.req)
	return p, nil
}

func (p *parsed) tools() error {
	for i, raw := range p.body.Tools {
		var t wireTool
		if err := json.Unmarshal(raw, &t); err != nil {
			return fmt.Errorf("%w: tools.%d: %v", errBadRequest, i, err)
		}
		if (t.Type != "" && t.Type != "custom") || !toolName.MatchString(t.Name) {
			return fmt.Errorf("%w: tools.%d: invalid custom tool %q", errBadRequest, i, t.Name)
		}
		if gjson.GetBytes(t.InputSchema, "type").String() != "object" {
			return fmt.Errorf("%w: tools.%d.custom.input_schema.type: Field required (\"object\")", errBadRequest, i)
		}
		p.req.Tools = append(p.req.Tools, llm.ToolSpec{Name: t.Name, Description: t.Description, Parameters: t.InputSchema})
		p.add("tool", raw)
	}
	return nil
}

func (p *parsed) system() error {
	raw := p.body.System
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &p.req.System); err != nil {
			return fmt.Errorf("%w: system: %v", errBadRequest, err)
		}
		p.add("system", raw)
		return nil
	}
	var blocks []json.RawMessage
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return fmt.Errorf("%w: system: want a string or a list of text blocks", errBadRequest)
	}
	var texts []string
	for i, b := range blocks {
		var tb wireBlock
		if err := json.Unmarshal(b, &tb); err != nil || tb.Type != "text" || tb.Text == nil || *tb.Text == "" {
			return fmt.Errorf("%w: system.%d: want a non-empty text block", errBadRequest, i)
		}
		texts = append(texts, *tb.Text)
		p.add("system", b)
	}
	p.req.System = strings.Join(texts, "\n\n")
	return nil
}

func (p *parsed) messages() error {
	for i, m := range p.body.Messages {
		role := llm.Role(m.Role)
		if role != llm.RoleUser && role != llm.RoleAssistant {
			return fmt.Errorf("%w: messages.%d.role: Input should be 'user' or 'assistant'", errBadRequest, i)
		}
		blocks, raws, err := contentBlocks(m.Content)
		if err != nil {
			return fmt.Errorf("%w: messages.%d.content: %v", errBadRequest, i, err)
		}
		merge := len(p.req.Messages) > 0 && p.req.Messages[len(p.req.Messages)-1].Role == role
		for j, raw := range raws {
			kind := m.Role
			if j == 0 && !merge {
				kind += ">" // a new turn starts here
			}
			p.add(kind, raw)
		}
		if merge {
			last := &p.req.Messages[len(p.req.Messages)-1]
			last.Content = append(last.Content, blocks...)
		} else {
			p.req.Messages = append(p.req.Messages, llm.Message{Role: role, Content: blocks})
		}
	}
	return checkToolPairs(p.req.Messages)
}

// checkToolPairs rejects, as the API does, tool_use blocks that the next turn does
// not answer with a tool_result, and tool_result blocks that answer no tool_use of the
// turn before. msgs alternate roles.
func checkToolPairs(msgs []llm.Message) error {
	for i, m := range msgs {
		if m.Role != llm.RoleAssistant {
			continue
		}
		answered := map[string]bool{}
		if i+1 < len(msgs) {
			for _, b := range msgs[i+1].Content {
				if b.Type == llm.BlockToolResult {
					answered[b.ToolUseID] = true
				}
			}
		}
		for _, b := range m.ToolUses() {
			if !answered[b.ID] {
				return fmt.Errorf("%w: messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message", errBadRequest, i+1, b.ID)
			}
		}
	}
	for i, m := range msgs {
		if m.Role != llm.RoleUser {
			continue
		}
		uses := map[string]bool{}
		if i > 0 {
			for _, b := range msgs[i-1].ToolUses() {
				uses[b.ID] = true
			}
		}
		for _, b := range m.Content {
			if b.Type == llm.BlockToolResult && !uses[b.ToolUseID] {
				return fmt.Errorf("%w: messages.%d.content: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message", errBadRequest, i, b.ToolUseID)
			}
		}
	}
	return nil
}

// contentBlocks converts a message content (a string or blocks) and returns the raw
// bytes of each block, in order.
func contentBlocks(raw json.RawMessage) ([]llm.Block, []json.RawMessage, error) {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, nil, err
		}
		if s == "" {
			return nil, nil, errors.New("text content must be non-empty")
		}
		return []llm.Block{llm.TextBlock(s)}, []json.RawMessage{raw}, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(raw, &raws); err != nil || len(raws) == 0 {
		return nil, nil, errors.New("want a non-empty string or a non-empty list of content blocks")
	}
	blocks := make([]llm.Block, 0, len(raws))
	for j, r := range raws {
		var wb wireBlock
		if err := json.Unmarshal(r, &wb); err != nil {
			return nil, nil, fmt.Errorf("%d: %v", j, err)
		}
		switch wb.Type {
		case llm.BlockText:
			if wb.Text == nil || *wb.Text == "" {
				return nil, nil, fmt.Errorf("%d: text content blocks must be non-empty", j)
			}
			blocks = append(blocks, llm.TextBlock(*wb.Text))
		case llm.BlockToolUse:
			if wb.ID == "" || !toolName.MatchString(wb.Name) || gjson.ParseBytes(wb.Input).Type != gjson.JSON {
				return nil, nil, fmt.Errorf("%d: tool_use needs an id, a valid name and an object input", j)
			}
			blocks = append(blocks, llm.Block{Type: llm.BlockToolUse, ID: wb.ID, Name: wb.Name, Input: compact(wb.Input)})
		case llm.BlockToolResult:
			text, err := resultText(wb.Content)
			if err != nil {
				return nil, nil, fmt.Errorf("%d.content: %v", j, err)
			}
			blocks = append(blocks, llm.Block{Type: llm.BlockToolResult, ToolUseID: wb.ToolUseID, Content: text, IsError: wb.IsError})
		case llm.BlockImage, llm.BlockDocument:
			if err := checkSource(wb); err != nil {
				return nil, nil, fmt.Errorf("%d.source: %v", j, err)
			}
			blocks = append(blocks, llm.Block{Type: wb.Type, Source: wb.Source, Title: wb.Title})
		default:
			return nil, nil, fmt.Errorf("%d: unsupported content block type %q", j, wb.Type)
		}
	}
	return blocks, raws, nil
}

// checkSource rejects, as the API does, an image or document whose source is not one it
// takes: base64 images of the four image types, or by url; PDF documents as base64 or by
// url; plain-text documents.
func checkSource(b wireBlock) error {
	s := b.Source
	switch {
	case s == nil:
		return errors.New("field required")
	case s.Type == llm.SourceURL && s.URL != "":
		return nil
	case b.Type == llm.BlockImage && s.Type == llm.SourceBase64 && llm.ImageMediaType(s.MediaType) && s.Data != "":
		return nil
	case b.Type == llm.BlockDocument && s.Type == llm.SourceBase64 && s.MediaType == "application/pdf" && s.Data != "":
		return nil
	case b.Type == llm.BlockDocument && s.Type == llm.SourceText && s.MediaType == "text/plain":
		return nil
	}
	return fmt.Errorf("invalid %s source %q (%s)", b.Type, s.Type, s.MediaType)
}

// resultText reads a tool_result content: absent, a string, or text blocks (joined
// with blank lines).
func resultText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var parts []wireBlock
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("want a string or a list of text blocks")
	}
	texts := make([]string, 0, len(parts))
	for _, part := range parts {
		if part.Type != llm.BlockText || part.Text == nil || *part.Text == "" {
			return "", errors.New("want non-empty text blocks")
		}
		texts = append(texts, *part.Text)
	}
	return strings.Join(texts, "\n\n"), nil
}

func compact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return raw
	}
	return b.Bytes()
}

// add appends one prompt element: its bytes without the cache_control key, and
// whether it carried one.
func (p *parsed) add(kind string, raw json.RawMessage) {
	e := element{kind: kind, raw: raw}
	if raw[0] == '{' && gjson.GetBytes(raw, "cache_control").Exists() {
		e.breakpoint = true
		if stripped, err := sjson.DeleteBytes(raw, "cache_control"); err == nil {
			e.raw = stripped
		}
	}
	p.elems = append(p.elems, e)
}
