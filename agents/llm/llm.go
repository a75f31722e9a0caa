// Package llm is the neutral vocabulary every provider and the agent runtime share:
// messages made of content blocks, tool declarations, a request, the streamed events of
// one model call, and the Model interface.
//
// The shapes follow the Anthropic Messages API (content blocks, tool_use/tool_result),
// which maps one-to-one onto the stream-JSON events stoke writes and onto the OpenAI
// chat-completions shapes the openai provider translates to.
package llm

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"iter"
	"strings"
	"time"
)

// Role is who said a message: RoleUser (also carries tool results) or RoleAssistant.
type Role string

const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Block types.
const (
	BlockText       = "text"
	BlockToolUse    = "tool_use"
	BlockToolResult = "tool_result"
	// BlockImage and BlockDocument are media a user message carries (an SDK host's
	// prompt): only providers that accept them are sent them (see CheckInput).
	BlockImage    = "image"
	BlockDocument = "document"
)

// Block is one content block of a message. Which fields are set depends on Type:
// text: Text; tool_use: ID, Name, Input; tool_result: ToolUseID, Content, IsError;
// image: Source; document: Source and, optionally, Title.
type Block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   string          `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	Source    *Source         `json:"source,omitempty"`
	Title     string          `json:"title,omitempty"`
}

// Source kinds.
const (
	SourceBase64 = "base64" // Data is the base64 of the bytes, of MediaType
	SourceURL    = "url"    // URL names the bytes
	SourceText   = "text"   // Data is the text itself (a text/plain document)
)

// Source is the data of an image or document block, in the Anthropic API's shape.
type Source struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

// Describe names the source for messages: its kind and media type ("image/png, 4 KiB",
// "url https://…").
func (s *Source) Describe() string {
	if s == nil {
		return "no source"
	}
	switch s.Type {
	case SourceURL:
		return "url " + s.URL
	case SourceBase64:
		return fmt.Sprintf("%s, %d bytes", s.MediaType, decodedLen(s.Data))
	default:
		return fmt.Sprintf("%s text, %d bytes", cmp.Or(s.MediaType, "text/plain"), len(s.Data))
	}
}

// TextBlock returns a text block.
func TextBlock(s string) Block { return Block{Type: BlockText, Text: s} }

// decodedLen is the number of bytes the base64 text s holds.
func decodedLen(s string) int {
	s = strings.TrimRight(s, "=")
	return base64.RawStdEncoding.DecodedLen(len(s))
}

// Message is one entry of a chat history.
type Message struct {
	Role    Role    `json:"role"`
	Content []Block `json:"content"`
}

// UserText returns a user message holding one text block.
func UserText(s string) Message {
	return Message{Role: RoleUser, Content: []Block{TextBlock(s)}}
}

// Text returns the concatenated text blocks of the message.
func (m Message) Text() string {
	var out string
	for _, b := range m.Content {
		if b.Type == BlockText {
			out += b.Text
		}
	}
	return out
}

// ToolUses returns the tool_use blocks of the message, in order.
func (m Message) ToolUses() []Block {
	var out []Block
	for _, b := range m.Content {
		if b.Type == BlockToolUse {
			out = append(out, b)
		}
	}
	return out
}

// ToolSpec declares one tool to the model. Parameters is a JSON Schema object.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// SanitizeName replaces every character of s other than ASCII letters, digits, _ and -
// with _: what model APIs accept in tool names and tool-call ids.
func SanitizeName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			return r
		}
		return '_'
	}, s)
}

// Request is one model call.
type Request struct {
	// Agent names who is asking: "parent" for the top-level agent, else the subagent type.
	// Real providers ignore it; the scripted provider routes on it.
	Agent string `json:"agent"`
	// Model overrides the provider's default model when not empty.
	Model    string     `json:"model,omitempty"`
	System   string     `json:"system,omitempty"`
	Messages []Message  `json:"messages"`
	Tools    []ToolSpec `json:"tools,omitempty"`
	// Cache, when set, keeps the wire encoding of Messages between the requests of one
	// chat (the runtime passes its chat's); a provider may use it so that a request
	// encodes only the messages that are new. Nil: every request encodes every message.
	Cache *EncodeCache `json:"-"`
}

// Stop reasons, in the Anthropic vocabulary the stream-JSON events use.
const (
	StopEndTurn   = "end_turn"
	StopToolUse   = "tool_use"
	StopMaxTokens = "max_tokens"
)

// Usage counts tokens of one model call (or a sum of calls).
type Usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
}

// Add returns u + v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:              u.InputTokens + v.InputTokens,
		OutputTokens:             u.OutputTokens + v.OutputTokens,
		CacheCreationInputTokens: u.CacheCreationInputTokens + v.CacheCreationInputTokens,
		CacheReadInputTokens:     u.CacheReadInputTokens + v.CacheReadInputTokens,
	}
}

// Total is input plus output tokens (cache reads and writes are part of input).
func (u Usage) Total() int64 {
	return u.InputTokens + u.OutputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
}

// EventKind tells which fields of an Event are set.
type EventKind int

const (
	// EventTextDelta carries a piece of assistant text in Text.
	EventTextDelta EventKind = iota + 1
	// EventToolCall carries one complete tool call in ToolCall (arguments fully accumulated).
	EventToolCall
	// EventDone is the last event of a call: StopReason, Usage, and the provider's MessageID.
	EventDone
	// EventRetry says the call starts over: its stream broke before EventDone and the
	// request is sent again after a delay (Retry says why, and which attempt comes).
	// Every event of this call received so far is void; consumers discard what they
	// accumulated from them. Only a retrying wrapper (agents/llm/retry) yields it.
	EventRetry
)

// Retry describes the retry an EventRetry announces.
type Retry struct {
	// Attempt is the retry's number: 1 for the first retry, up to MaxRetries.
	Attempt    int
	MaxRetries int
	// Delay is the wait before the request is sent again.
	Delay time.Duration
	// Err is the failure of the attempt that is discarded.
	Err error
}

// Event is one streamed piece of a model call.
type Event struct {
	Kind       EventKind
	Text       string
	ToolCall   Block
	StopReason string
	Usage      Usage
	MessageID  string
	Model      string
	// Retry is set on EventRetry.
	Retry *Retry
}

// Model is a chat model that streams.
type Model interface {
	// Name is the model name reported in events.
	Name() string
	// Generate runs one model call. The sequence ends after an EventDone, or with a
	// non-nil error. An EventRetry voids the events before it (see EventRetry). It stops early (and releases the provider stream) when the
	// consumer stops ranging or ctx is cancelled. Safe for concurrent use: each call
	// is independent.
	Generate(ctx context.Context, req *Request) iter.Seq2[Event, error]
}
