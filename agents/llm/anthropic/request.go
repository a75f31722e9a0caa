package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/stoke-cli/stoke/agents/llm"
)

// maxBreakpoints is the API's limit on cache_control blocks per request.
const maxBreakpoints = 4

// emptyInput stands in for a tool_use block whose Input is empty.
const emptyInput = "{}"

// emptySchema is the input schema of a tool declared without parameters.
const emptySchema = `{"type":"object","properties":{}}`

// params translates req into Messages API parameters, with the cache breakpoints
// described in the package documentation. The translation is a pure function of
// req, model and maxTokens: the SDK marshals structs in field order, tool schemas
// and tool inputs go out as the raw JSON they came in as (compacted), and no map is
// iterated, so one llm.Request always serialises to the same bytes.
func params(req *llm.Request, model string, maxTokens int64) (sdk.MessageNewParams, error) {
	if req.Model != "" {
		model = req.Model
	}
	p := sdk.MessageNewParams{Model: sdk.Model(model), MaxTokens: maxTokens}
	for _, t := range req.Tools {
		tool, err := toolParam(t)
		if err != nil {
			return sdk.MessageNewParams{}, err
		}
		p.Tools = append(p.Tools, sdk.ToolUnionParam{OfTool: tool})
	}
	if req.System != "" {
		p.System = []sdk.TextBlockParam{{Text: req.System}}
	}
	for i, m := range req.Messages {
		blocks, err := contentBlocks(model, m)
		if err != nil {
			return sdk.MessageNewParams{}, fmt.Errorf("translate message %d: %w", i, err)
		}
		if len(blocks) == 0 {
			// Only empty text: the API rejects empty text blocks and empty
			// messages, and merges the consecutive same-role turns this leaves.
			continue
		}
		switch m.Role {
		case llm.RoleUser:
			p.Messages = append(p.Messages, sdk.NewUserMessage(blocks...))
		case llm.RoleAssistant:
			p.Messages = append(p.Messages, sdk.NewAssistantMessage(blocks...))
		}
	}
	setBreakpoints(&p)
	return p, nil
}

// setBreakpoints marks the cache breakpoints of p (see the package documentation).
func setBreakpoints(p *sdk.MessageNewParams) {
	marks := make([]*sdk.CacheControlEphemeralParam, 0, maxBreakpoints)
	if n := len(p.Tools); n > 0 {
		marks = append(marks, p.Tools[n-1].GetCacheControl())
	}
	if n := len(p.System); n > 0 {
		marks = append(marks, &p.System[n-1].CacheControl)
	}
	if n := len(p.Messages); n > 0 {
		marks = append(marks, lastBlock(p.Messages[n-1]).GetCacheControl())
		// The last user message followed by an assistant message, before the final
		// message: the final message of this agent's previous call.
		for i := n - 3; i >= 0; i-- {
			if p.Messages[i].OfUser != nil && p.Messages[i+1].OfAssistant != nil {
				marks = append(marks, lastBlock(p.Messages[i]).GetCacheControl())
				break
			}
		}
	}
	for _, cc := range marks {
		*cc = sdk.NewCacheControlEphemeralParam()
	}
}

// lastBlock returns the last content block of a (non-empty) user or assistant message.
func lastBlock(m sdk.MessageParam) sdk.ContentBlockParamUnion {
	var blocks []sdk.ContentBlockParamUnion
	switch {
	case m.OfUser != nil:
		blocks = m.OfUser.Content
	case m.OfAssistant != nil:
		blocks = m.OfAssistant.Content
	}
	return blocks[len(blocks)-1]
}

// contentBlocks translates the blocks of m one to one, leaving out empty text blocks.
// model names the model in the error of a block it does not take.
func contentBlocks(model string, m llm.Message) ([]sdk.ContentBlockParamUnion, error) {
	if m.Role != llm.RoleUser && m.Role != llm.RoleAssistant {
		return nil, fmt.Errorf("unknown role %q", m.Role)
	}
	out := make([]sdk.ContentBlockParamUnion, 0, len(m.Content))
	for j, b := range m.Content {
		switch b.Type {
		case llm.BlockText:
			if b.Text != "" {
				out = append(out, sdk.NewTextBlock(b.Text))
			}
		case llm.BlockToolUse:
			input := b.Input
			if len(input) == 0 {
				input = json.RawMessage(emptyInput)
			}
			if !json.Valid(input) {
				return nil, fmt.Errorf("block %d: tool_use %q input is not valid JSON", j, b.ID)
			}
			out = append(out, sdk.ContentBlockParamUnion{OfToolUse: &sdk.ToolUseBlockParam{
				ID: b.ID, Name: b.Name, Input: input,
			}})
		case llm.BlockToolResult:
			r := &sdk.ToolResultBlockParam{ToolUseID: b.ToolUseID}
			if b.Content != "" { // an empty text block would be rejected; no content is allowed
				r.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: b.Content}}}
			}
			if b.IsError {
				r.IsError = param.NewOpt(true)
			}
			out = append(out, sdk.ContentBlockParamUnion{OfToolResult: r})
		case llm.BlockImage, llm.BlockDocument:
			mb, err := mediaBlock(model, b)
			if err != nil {
				return nil, fmt.Errorf("block %d: %w", j, err)
			}
			out = append(out, mb)
		default:
			return nil, fmt.Errorf("block %d: unknown block type %q", j, b.Type)
		}
	}
	return out, nil
}

// toolParam declares one tool. The schema is sent as the raw JSON object it is
// (numbers keep their precision, keys their order); it must be a JSON object.
func toolParam(t llm.ToolSpec) (*sdk.ToolParam, error) {
	schema := t.Parameters
	if len(schema) == 0 {
		schema = json.RawMessage(emptySchema)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(schema, &top); err != nil || top == nil {
		if err == nil {
			err = errors.New("got null")
		}
		return nil, fmt.Errorf("translate tool %q: parameters must be a JSON object: %w", t.Name, err)
	}
	tool := &sdk.ToolParam{
		Name:        t.Name,
		InputSchema: param.Override[sdk.ToolInputSchemaParam](schema),
	}
	if t.Description != "" {
		tool.Description = param.NewOpt(t.Description)
	}
	return tool, nil
}

// messagesMark stands in for the messages in the envelope of a request body: a user
// message no translation makes (a NUL cannot come from a chat), replaced by the messages.
const messagesMark = "\x00stoke:messages\x00"

// streamFirst opens a request body: "stream" is true in every request stoke sends.
const streamFirst = `{"stream":true,`

// body encodes req as params would have the SDK encode it, byte for byte ("stream" aside,
// which comes first), but encodes each message once: the encoding of the messages is
// kept in req.Cache between the requests of a chat, and only the messages that are new
// (or changed), and the two that carry a cache breakpoint, are encoded again. The body's
// history is the cache's own bytes, not a copy. It returns the parameters of the request
// without its messages (the SDK's own bookkeeping).
func body(req *llm.Request, model string, maxTokens int64) (*llm.RequestBody, sdk.MessageNewParams, error) {
	if len(req.Messages) == 0 {
		p, err := params(req, model, maxTokens)
		if err != nil {
			return nil, p, err
		}
		data, err := p.MarshalJSON()
		if err != nil {
			return nil, p, fmt.Errorf("encode request: %w", err)
		}
		return llm.NewRequestBody([]byte(streamFirst), data[1:]), p, nil
	}
	key := envelopeKey{model: model, reqModel: req.Model, system: req.System, maxTokens: maxTokens, nTools: len(req.Tools)}
	if len(req.Tools) > 0 {
		key.tools = &req.Tools[0]
	}
	e, err := llm.CachedEnvelope(req.Cache, key, func() (envelope, error) { return newEnvelope(req, model, maxTokens) })
	if err != nil {
		return nil, e.params, err
	}
	env := e.params
	msgs, err := encodeMessages(req, string(env.Model))
	if err != nil {
		return nil, env, err
	}
	return llm.NewJSONBody(e.head, msgs, e.tail), env, nil
}

// envelopeKey is what a request's envelope depends on: the tool list by its identity (a
// chat's requests share their tool set's list).
type envelopeKey struct {
	model, reqModel, system string
	maxTokens               int64
	tools                   *llm.ToolSpec
	nTools                  int
}

// envelope is a request body without its messages: the bytes before them and after them,
// and the parameters of the request without messages.
type envelope struct {
	head, tail []byte
	params     sdk.MessageNewParams
}

// newEnvelope encodes the envelope of req, as the SDK would encode the request.
func newEnvelope(req *llm.Request, model string, maxTokens int64) (envelope, error) {
	env, err := params(&llm.Request{Model: req.Model, System: req.System, Tools: req.Tools}, model, maxTokens)
	if err != nil {
		return envelope{params: env}, err
	}
	mark := sdk.NewUserMessage(sdk.NewTextBlock(messagesMark))
	withMark := env
	withMark.Messages = []sdk.MessageParam{mark}
	// MarshalJSON, not json.Marshal: the SDK sends what MarshalJSON returns as it is
	// (json.Marshal would compact it again and escape HTML).
	data, err := withMark.MarshalJSON()
	if err != nil {
		return envelope{params: env}, fmt.Errorf("encode request: %w", err)
	}
	markJSON, err := mark.MarshalJSON()
	if err != nil {
		return envelope{params: env}, fmt.Errorf("encode request: %w", err)
	}
	at := bytes.Index(data, markJSON)
	if at < 0 {
		return envelope{params: env}, errors.New("encode request: no place for the messages in the envelope")
	}
	head := append([]byte(streamFirst), data[1:at]...)
	return envelope{head: head[:len(head):len(head)], tail: data[at+len(markJSON):], params: env}, nil
}

// encodeMessages encodes the messages of req that are sent (empty ones encode to
// nothing), in order: the messages before the first cache breakpoint as one slice of
// req.Cache, then one encoding each. The two messages that carry a breakpoint
// (breakpointMessages) are encoded with it, and are not kept so.
func encodeMessages(req *llm.Request, model string) ([][]byte, error) {
	owner := providerName + " " + model
	encode := func(i int, m llm.Message) ([]byte, error) {
		data, err := encodeMessage(model, m, false)
		if err != nil {
			return nil, fmt.Errorf("translate message %d: %w", i, err)
		}
		return data, nil
	}
	marks := breakpointMessages(req.Messages)
	lo := len(req.Messages)
	if len(marks) > 0 {
		lo = slices.Min(marks)
	}
	prefix, err := req.Cache.Join(owner, req.Messages, lo, encode)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, 0, len(req.Messages)-lo+1)
	out = append(out, prefix)
	for i := lo; i < len(req.Messages); i++ {
		m := req.Messages[i]
		data, ok := req.Cache.Get(owner, i, m)
		if !ok {
			if data, err = encode(i, m); err != nil {
				return nil, err
			}
			req.Cache.Put(owner, i, m, data)
		}
		if slices.Contains(marks, i) {
			if data, err = encodeMessage(model, m, true); err != nil {
				return nil, fmt.Errorf("translate message %d: %w", i, err)
			}
		}
		out = append(out, data)
	}
	return out, nil
}

// breakpointMessages are the indexes of the messages that carry a cache breakpoint: the last
// message sent, and the last user message sent, at least two sent messages before it,
// that a sent assistant message follows. A message is sent unless it holds only empty
// text.
func breakpointMessages(msgs []llm.Message) []int {
	var sent []int // the sent messages' indexes, from the last one back
	for i := len(msgs) - 1; i >= 0; i-- {
		if !isSent(msgs[i]) {
			continue
		}
		sent = append(sent, i)
		// sent[k] is the k-th from the end: the pair is sent[k] (user), sent[k-1] (assistant).
		if k := len(sent) - 1; k >= 2 && msgs[sent[k]].Role == llm.RoleUser && msgs[sent[k-1]].Role == llm.RoleAssistant {
			return []int{sent[0], sent[k]}
		}
	}
	if len(sent) == 0 {
		return nil
	}
	return sent[:1]
}

// isSent reports whether m encodes to a message: whether it holds a block that is not an
// empty text.
func isSent(m llm.Message) bool {
	return slices.ContainsFunc(m.Content, func(b llm.Block) bool { return b.Type != llm.BlockText || b.Text != "" })
}

// encodeMessage encodes the message m translates to, with a cache breakpoint on its last
// block when breakpoint is set; an empty message (only empty text) encodes to nothing.
func encodeMessage(model string, m llm.Message, breakpoint bool) ([]byte, error) {
	blocks, err := contentBlocks(model, m)
	if err != nil || len(blocks) == 0 {
		return []byte{}, err
	}
	msg := sdk.NewUserMessage(blocks...)
	if m.Role == llm.RoleAssistant {
		msg = sdk.NewAssistantMessage(blocks...)
	}
	if breakpoint {
		*lastBlock(msg).GetCacheControl() = sdk.NewCacheControlEphemeralParam()
	}
	data, err := msg.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	return data, nil
}
