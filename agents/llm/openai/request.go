package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/stoke-cli/stoke/agents/llm"
)

// textSeparator joins several text blocks of one message into one string content.
// Plain string content is what every OpenAI-compatible server understands.
const textSeparator = "\n\n"

// emptyArguments stands in for a tool call whose Input is empty.
const emptyArguments = "{}"

// params translates req into chat-completions parameters. The translation is a pure
// function of req and model, and the SDK marshals structs in field order and maps in
// key order, so one llm.Request always serialises to the same bytes (prompt caches
// depend on that).
func params(req *llm.Request, model string) (sdk.ChatCompletionNewParams, error) {
	if req.Model != "" {
		model = req.Model
	}
	var msgs []sdk.ChatCompletionMessageParamUnion
	if req.System != "" {
		msgs = append(msgs, sdk.SystemMessage(req.System))
	}
	for i, m := range req.Messages {
		switch m.Role {
		case llm.RoleUser:
			var err error
			if msgs, err = appendUser(msgs, m, model); err != nil {
				return sdk.ChatCompletionNewParams{}, fmt.Errorf("translate message %d: %w", i, err)
			}
		case llm.RoleAssistant:
			msgs = append(msgs, assistantMessage(m))
		default:
			return sdk.ChatCompletionNewParams{}, fmt.Errorf("translate message %d: unknown role %q", i, m.Role)
		}
	}
	var tools []sdk.ChatCompletionToolUnionParam // nil, not empty: some servers reject "tools":[]
	for _, t := range req.Tools {
		fn, err := functionDefinition(t)
		if err != nil {
			return sdk.ChatCompletionNewParams{}, err
		}
		tools = append(tools, sdk.ChatCompletionFunctionTool(fn))
	}
	return sdk.ChatCompletionNewParams{
		Model:         model,
		Messages:      msgs,
		Tools:         tools,
		StreamOptions: sdk.ChatCompletionStreamOptionsParam{IncludeUsage: param.NewOpt(true)},
	}, nil
}

// appendUser appends one tool message per tool_result block, then (if there is any
// text or media) one user message: OpenAI requires tool messages right after the
// assistant message that made the calls. Text alone is sent as one string; with images or
// documents the message is a list of content parts, in the blocks' order.
func appendUser(msgs []sdk.ChatCompletionMessageParamUnion, m llm.Message, model string) ([]sdk.ChatCompletionMessageParamUnion, error) {
	media := slices.ContainsFunc(m.Content, func(b llm.Block) bool {
		return b.Type == llm.BlockImage || b.Type == llm.BlockDocument
	})
	var (
		texts      []string                                  // text alone
		parts      []sdk.ChatCompletionContentPartUnionParam // with media
		hasResults bool
	)
	for _, b := range m.Content {
		switch b.Type {
		case llm.BlockToolResult:
			// An error result is sent as-is: chat completions has no error flag, and
			// the tool layer already words the content as an error.
			msgs = append(msgs, sdk.ToolMessage(b.Content, b.ToolUseID))
			hasResults = true
		case llm.BlockText:
			if media {
				parts = append(parts, sdk.TextContentPart(b.Text))
			} else {
				texts = append(texts, b.Text)
			}
		case llm.BlockImage, llm.BlockDocument:
			p, err := mediaPart(model, b)
			if err != nil {
				return nil, err
			}
			parts = append(parts, p)
		}
	}
	switch {
	case media:
		msgs = append(msgs, sdk.UserMessage(parts))
	case len(texts) > 0 || !hasResults:
		msgs = append(msgs, sdk.UserMessage(strings.Join(texts, textSeparator)))
	}
	return msgs, nil
}

// assistantMessage carries the text blocks as content and the tool_use blocks as
// tool_calls. Content is omitted when there is no text but there are tool calls.
func assistantMessage(m llm.Message) sdk.ChatCompletionMessageParamUnion {
	var (
		texts []string
		a     sdk.ChatCompletionAssistantMessageParam
	)
	for _, b := range m.Content {
		switch b.Type {
		case llm.BlockText:
			texts = append(texts, b.Text)
		case llm.BlockToolUse:
			args := string(b.Input)
			if args == "" {
				args = emptyArguments
			}
			a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
					ID: b.ID,
					Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{
						Name:      b.Name,
						Arguments: args,
					},
				},
			})
		}
	}
	if len(texts) > 0 || len(a.ToolCalls) == 0 {
		a.Content.OfString = param.NewOpt(strings.Join(texts, textSeparator))
	}
	return sdk.ChatCompletionMessageParamUnion{OfAssistant: &a}
}

// functionDefinition declares one tool. The schema's top-level values are kept as
// raw JSON, so nested schemas reach the endpoint byte for byte (numbers keep their
// precision); only the top-level keys are put in sorted order.
func functionDefinition(t llm.ToolSpec) (shared.FunctionDefinitionParam, error) {
	fn := shared.FunctionDefinitionParam{Name: t.Name}
	if t.Description != "" {
		fn.Description = param.NewOpt(t.Description)
	}
	schema := t.Parameters
	if len(schema) == 0 {
		schema = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(schema, &top); err != nil {
		return fn, fmt.Errorf("translate tool %q: parameters must be a JSON object: %w", t.Name, err)
	}
	fn.Parameters = make(shared.FunctionParameters, len(top))
	for k, v := range top {
		fn.Parameters[k] = v
	}
	return fn, nil
}

// messagesMark stands in for the messages in the envelope of a request body: a user
// message no translation makes (a NUL cannot come from a chat), replaced by the messages.
const messagesMark = "\x00stoke:messages\x00"

// streamFirst opens a request body: "stream" is true in every request stoke sends.
const streamFirst = `{"stream":true,`

// body encodes req as params would have the SDK encode it, byte for byte ("stream" aside,
// which comes first), but encodes each message once: the encoding of the messages is kept
// in req.Cache between the requests of a chat, and only the messages that are new (or
// changed) are encoded again. The body's history is the cache's own bytes, not a copy.
// It returns the model the request names too.
func body(req *llm.Request, model string) (*llm.RequestBody, string, error) {
	if len(req.Messages) == 0 {
		p, err := params(req, model)
		if err != nil {
			return nil, "", err
		}
		data, err := p.MarshalJSON()
		if err != nil {
			return nil, "", fmt.Errorf("encode request: %w", err)
		}
		return llm.NewRequestBody([]byte(streamFirst), data[1:]), p.Model, nil
	}
	key := envelopeKey{model: model, reqModel: req.Model, system: req.System, nTools: len(req.Tools)}
	if len(req.Tools) > 0 {
		key.tools = &req.Tools[0]
	}
	env, err := llm.CachedEnvelope(req.Cache, key, func() (envelope, error) { return newEnvelope(req, model) })
	if err != nil {
		return nil, "", err
	}
	owner := providerName + " " + env.model
	encode := func(i int, m llm.Message) ([]byte, error) {
		data, err := encodeMessage(m, env.model)
		if err != nil {
			return nil, fmt.Errorf("translate message %d: %w", i, err)
		}
		return data, nil
	}
	// The history before the last message is one slice of the cache; the last message,
	// which the next may still merge into, is kept apart.
	last := len(req.Messages) - 1
	prefix, err := req.Cache.Join(owner, req.Messages, last, encode)
	if err != nil {
		return nil, "", err
	}
	data, ok := req.Cache.Get(owner, last, req.Messages[last])
	if !ok {
		if data, err = encode(last, req.Messages[last]); err != nil {
			return nil, "", err
		}
		req.Cache.Put(owner, last, req.Messages[last], data)
	}
	return llm.NewJSONBody(env.head, [][]byte{env.system, prefix, data}, env.tail), env.model, nil
}

// envelopeKey is what a request's envelope depends on: the tool list by its identity (a
// chat's requests share their tool set's list).
type envelopeKey struct {
	model, reqModel, system string
	tools                   *llm.ToolSpec
	nTools                  int
}

// envelope is a request body without its messages: the bytes before them and after them,
// the system message, and the model named.
type envelope struct {
	head, tail, system []byte
	model              string
}

// newEnvelope encodes the envelope of req, as the SDK would encode the request.
func newEnvelope(req *llm.Request, model string) (envelope, error) {
	p, err := params(&llm.Request{Model: req.Model, Tools: req.Tools}, model)
	if err != nil {
		return envelope{}, err
	}
	mark := sdk.UserMessage(messagesMark)
	p.Messages = []sdk.ChatCompletionMessageParamUnion{mark}
	// MarshalJSON, not json.Marshal: the SDK sends what MarshalJSON returns as it is
	// (json.Marshal would compact it again and escape HTML).
	data, err := p.MarshalJSON()
	if err != nil {
		return envelope{}, fmt.Errorf("encode request: %w", err)
	}
	markJSON, err := mark.MarshalJSON()
	if err != nil {
		return envelope{}, fmt.Errorf("encode request: %w", err)
	}
	at := bytes.Index(data, markJSON)
	if at < 0 {
		return envelope{}, errors.New("encode request: no place for the messages in the envelope")
	}
	e := envelope{tail: data[at+len(markJSON):], model: p.Model}
	head := append([]byte(streamFirst), data[1:at]...)
	e.head = head[:len(head):len(head)]
	if req.System != "" {
		if e.system, err = sdk.SystemMessage(req.System).MarshalJSON(); err != nil {
			return envelope{}, fmt.Errorf("encode request: %w", err)
		}
	}
	return e, nil
}

// encodeMessage encodes the chat-completions messages m translates to, comma-separated.
func encodeMessage(m llm.Message, model string) ([]byte, error) {
	var msgs []sdk.ChatCompletionMessageParamUnion
	switch m.Role {
	case llm.RoleUser:
		var err error
		if msgs, err = appendUser(nil, m, model); err != nil {
			return nil, err
		}
	case llm.RoleAssistant:
		msgs = append(msgs, assistantMessage(m))
	default:
		return nil, fmt.Errorf("unknown role %q", m.Role)
	}
	var out []byte
	for i, msg := range msgs {
		data, err := msg.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("encode: %w", err)
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, data...)
	}
	return out, nil
}
