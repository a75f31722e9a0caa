package streamjson

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/stoke-cli/stoke/agents/llm"
)

// MaxInputLineBytes bounds one stdin line (a user message with pasted files can be large).
const MaxInputLineBytes = 64 << 20

// InputKind tells what a stdin line is.
type InputKind int

// Input kinds. The zero InputKind is not a kind.
const (
	// InputUser is a user message: one parent turn.
	InputUser InputKind = iota + 1
	// InputControlRequest is an SDK control request ("initialize", "interrupt", …) to answer.
	InputControlRequest
	// InputControlResponse answers a control request stoke sent.
	InputControlResponse
	// InputControlCancel cancels an in-flight control request.
	InputControlCancel
	// InputOther is any other type ("keep_alive", future types); callers ignore it.
	InputOther
)

func (k InputKind) String() string {
	switch k {
	case InputUser:
		return "user"
	case InputControlRequest:
		return "control_request"
	case InputControlResponse:
		return "control_response"
	case InputControlCancel:
		return "control_cancel_request"
	case InputOther:
		return "other"
	default:
		return fmt.Sprintf("InputKind(%d)", int(k))
	}
}

// Input is one decoded stdin line.
type Input struct {
	Kind InputKind
	// Line is the 1-based line number (blank lines count).
	Line int
	// Raw is the line itself, without surrounding whitespace.
	Raw json.RawMessage
	// Type is the line's "type" as written.
	Type string
	// Message is the user message of an InputUser line (role user, at least one block).
	Message llm.Message
	// RequestID names the request of a control line: request_id for control_request and
	// control_cancel_request, response.request_id for control_response.
	RequestID string
	// Subtype is request.subtype of a control_request ("initialize", "interrupt", …) and
	// response.subtype of a control_response ("success", "error").
	Subtype string
}

// Decoder reads --input-format stream-json lines: one JSON object per line (Claude's
// SDKUserMessage and the SDK control envelopes). Not safe for concurrent use.
type Decoder struct {
	r       *bufio.Reader
	line    int
	maxLine int
	eof     bool
}

// NewDecoder returns a Decoder reading r.
func NewDecoder(r io.Reader) *Decoder {
	return &Decoder{r: bufio.NewReaderSize(r, 64<<10), maxLine: MaxInputLineBytes}
}

// Next returns the next non-blank line, io.EOF after the last one, a *DecodeError (wrapping
// ErrMalformed) for a line it cannot accept, or a wrapped read error. After a *DecodeError
// the line is consumed, so Next may be called again.
func (d *Decoder) Next() (Input, error) {
	for {
		raw, err := d.readLine()
		if err != nil {
			return Input{}, err
		}
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 {
			continue
		}
		in, reason := decodeLine(raw)
		if reason != "" {
			return Input{}, &DecodeError{Line: d.line, Reason: reason}
		}
		in.Line = d.line
		return in, nil
	}
}

// readLine returns the next line without its '\n'; a last line without '\n' counts.
func (d *Decoder) readLine() ([]byte, error) {
	if d.eof {
		return nil, io.EOF
	}
	var line []byte
	tooLong := false
	for {
		chunk, err := d.r.ReadSlice('\n')
		if !tooLong && len(line)+len(chunk) > d.maxLine+1 { // +1: the '\n'
			tooLong, line = true, nil
		}
		if !tooLong {
			line = append(line, chunk...)
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			d.eof = true
			if len(line) == 0 && !tooLong {
				return nil, io.EOF
			}
		case err != nil:
			return nil, fmt.Errorf("read stdin line %d: %w", d.line+1, err)
		}
		d.line++
		if tooLong {
			return nil, &DecodeError{Line: d.line, Reason: fmt.Sprintf("line longer than %d bytes", d.maxLine)}
		}
		return bytes.TrimSuffix(line, []byte{'\n'}), nil
	}
}

// decodeLine decodes one non-blank line; a non-empty reason says why it is malformed.
func decodeLine(raw []byte) (Input, string) {
	// json.Valid, not gjson.ValidBytes: it bounds nesting depth, where gjson's recursive
	// validator overflows the stack on a line of millions of '['.
	if !json.Valid(raw) {
		return Input{}, "not valid JSON"
	}
	obj := gjson.ParseBytes(raw)
	if !obj.IsObject() {
		return Input{}, "not a JSON object"
	}
	typ := obj.Get("type")
	if typ.Type != gjson.String || typ.Str == "" {
		return Input{}, `no "type" string`
	}
	in := Input{Raw: raw, Type: typ.Str}
	var reason string
	switch typ.Str {
	case "user":
		in.Kind = InputUser
		in.Message, reason = decodeUserMessage(obj.Get("message"))
	case "control_request":
		in.Kind = InputControlRequest
		in.RequestID, reason = requiredString(obj, "request_id", typ.Str)
		in.Subtype = obj.Get("request.subtype").String()
	case "control_response":
		in.Kind = InputControlResponse
		in.RequestID, reason = requiredString(obj, "response.request_id", typ.Str)
		in.Subtype = obj.Get("response.subtype").String()
	case "control_cancel_request":
		in.Kind = InputControlCancel
		in.RequestID, reason = requiredString(obj, "request_id", typ.Str)
	default:
		in.Kind = InputOther
	}
	if reason != "" {
		return Input{}, reason
	}
	return in, ""
}

func requiredString(obj gjson.Result, path, typ string) (string, string) {
	v := obj.Get(path)
	if v.Type != gjson.String || v.Str == "" {
		return "", fmt.Sprintf("%s line without a %q string", typ, path)
	}
	return v.Str, ""
}

// decodeUserMessage decodes the message of a user line: content is a string (one text block)
// or an array of blocks: text, tool_result, image and document (their source and title
// kept as they came), and blocks of other types (kept with their type only). Whether the
// model takes an image, a document or another type is decided per turn, not here.
func decodeUserMessage(msg gjson.Result) (llm.Message, string) {
	if !msg.IsObject() {
		return llm.Message{}, `user line without a "message" object`
	}
	if role := msg.Get("role"); role.Exists() && (role.Type != gjson.String || role.Str != string(llm.RoleUser)) {
		return llm.Message{}, fmt.Sprintf(`user line with message.role %s, want "user"`, role.Raw)
	}
	content := msg.Get("content")
	switch {
	case !content.Exists():
		return llm.Message{}, "user line without message.content"
	case content.Type == gjson.String:
		return llm.UserText(content.Str), ""
	case !content.IsArray():
		return llm.Message{}, "user line: message.content is neither a string nor an array"
	}
	items := content.Array()
	if len(items) == 0 {
		return llm.Message{}, "user line: message.content is an empty array"
	}
	blocks := make([]llm.Block, 0, len(items))
	for i, item := range items {
		b, reason := decodeUserBlock(item)
		if reason != "" {
			return llm.Message{}, fmt.Sprintf("user line: message.content[%d]: %s", i, reason)
		}
		blocks = append(blocks, b)
	}
	return llm.Message{Role: llm.RoleUser, Content: blocks}, ""
}

func decodeUserBlock(item gjson.Result) (llm.Block, string) {
	if !item.IsObject() {
		return llm.Block{}, "not an object"
	}
	typ := item.Get("type")
	if typ.Type != gjson.String {
		return llm.Block{}, `no "type" string`
	}
	switch typ.Str {
	case llm.BlockText:
		text := item.Get("text")
		if text.Type != gjson.String {
			return llm.Block{}, `text block without a "text" string`
		}
		return llm.TextBlock(text.Str), ""
	case llm.BlockToolResult:
		return decodeToolResult(item)
	case llm.BlockImage, llm.BlockDocument:
		return decodeMedia(typ.Str, item)
	default:
		return llm.Block{Type: typ.Str}, ""
	}
}

// decodeMedia decodes an image or document block: its source (base64 data of a media
// type, a url, or a document's text) and a document's title. A missing or malformed
// source is kept as it came (nil when it is not an object): the turn is refused then.
func decodeMedia(typ string, item gjson.Result) (llm.Block, string) {
	b := llm.Block{Type: typ, Title: item.Get("title").String()}
	if src := item.Get("source"); src.IsObject() {
		b.Source = &llm.Source{
			Type: src.Get("type").String(), MediaType: src.Get("media_type").String(),
			Data: src.Get("data").String(), URL: src.Get("url").String(),
		}
	}
	return b, ""
}

// decodeToolResult decodes a tool_result block; content may be absent, a string, or an
// array of text blocks (joined with newlines).
func decodeToolResult(item gjson.Result) (llm.Block, string) {
	id := item.Get("tool_use_id")
	if id.Type != gjson.String || id.Str == "" {
		return llm.Block{}, `tool_result block without a "tool_use_id" string`
	}
	b := llm.Block{Type: llm.BlockToolResult, ToolUseID: id.Str}
	switch isErr := item.Get("is_error"); {
	case !isErr.Exists(), isErr.Type == gjson.Null:
	case isErr.IsBool():
		b.IsError = isErr.Bool()
	default:
		return llm.Block{}, "tool_result is_error is not a boolean"
	}
	content := item.Get("content")
	switch {
	case !content.Exists(), content.Type == gjson.Null:
	case content.Type == gjson.String:
		b.Content = content.Str
	case content.IsArray():
		parts := content.Array()
		texts := make([]string, 0, len(parts))
		for i, part := range parts {
			text := part.Get("text")
			if !part.IsObject() || part.Get("type").Str != llm.BlockText || text.Type != gjson.String {
				return llm.Block{}, fmt.Sprintf("tool_result content[%d] is not a text block", i)
			}
			texts = append(texts, text.Str)
		}
		b.Content = strings.Join(texts, "\n")
	default:
		return llm.Block{}, "tool_result content is neither a string nor an array"
	}
	return b, ""
}
