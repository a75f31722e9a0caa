package anthropic

import (
	"encoding/json"
	"errors"
	"fmt"

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
