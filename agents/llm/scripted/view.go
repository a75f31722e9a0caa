package scripted

import (
	"fmt"
	"strings"

	"github.com/stoke-cli/stoke/agents/llm"
)

// view is what conditions and template functions read from one request. It is built
// once per call and never modified.
type view struct {
	req            *llm.Request
	step           int
	lastUser       string
	lastToolResult string
	// media describes the images and documents of the latest user message.
	media string
	// segments are the searchable texts of the messages, oldest first, one per block:
	// text blocks, tool_use inputs (JSON), tool_result contents.
	segments []string
	// history is the system prompt and every segment joined with newlines, in reading order.
	history string
}

func newView(req *llm.Request) *view {
	v := &view{req: req, step: 1}
	for _, m := range req.Messages {
		if m.Role == llm.RoleAssistant {
			v.step++
		}
		for _, b := range m.Content {
			if s, ok := blockText(b); ok {
				v.segments = append(v.segments, s)
			}
		}
	}
	latest := lastUserBlocks(req.Messages)
	v.lastUser = userText(latest)
	v.lastToolResult = lastToolResult(req.Messages)
	v.media = userMedia(latest)
	parts := make([]string, 0, len(v.segments)+1)
	if req.System != "" {
		parts = append(parts, req.System)
	}
	v.history = strings.Join(append(parts, v.segments...), "\n")
	return v
}

// blockText is the searchable text of a block, if it has any.
func blockText(b llm.Block) (string, bool) {
	switch b.Type {
	case llm.BlockText:
		return b.Text, true
	case llm.BlockToolUse:
		return string(b.Input), len(b.Input) > 0
	case llm.BlockToolResult:
		return b.Content, true
	}
	return "", false
}

// lastUserBlocks is the content of the latest user message; nil when there is none.
func lastUserBlocks(msgs []llm.Message) []llm.Block {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleUser {
			return msgs[i].Content
		}
	}
	return nil
}

// userText joins the text blocks and tool_result contents of a user message.
func userText(blocks []llm.Block) string {
	var parts []string
	for _, b := range blocks {
		switch b.Type {
		case llm.BlockText:
			parts = append(parts, b.Text)
		case llm.BlockToolResult:
			parts = append(parts, b.Content)
		}
	}
	return strings.Join(parts, "\n")
}

// userMedia describes the image and document blocks of a user message, one "type (what
// it holds)" each, joined by "; ": "image (image/png, 68 bytes)".
func userMedia(blocks []llm.Block) string {
	var parts []string
	for _, b := range blocks {
		if b.Type == llm.BlockImage || b.Type == llm.BlockDocument {
			d := b.Type + " (" + b.Source.Describe() + ")"
			if b.Title != "" {
				d += fmt.Sprintf(" %q", b.Title)
			}
			parts = append(parts, d)
		}
	}
	return strings.Join(parts, "; ")
}

// lastToolResult is the content of the newest tool_result block in the history.
func lastToolResult(msgs []llm.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		for j := len(msgs[i].Content) - 1; j >= 0; j-- {
			if b := msgs[i].Content[j]; b.Type == llm.BlockToolResult {
				return b.Content
			}
		}
	}
	return ""
}

// hasTool reports whether the request declares a tool with that name.
func (v *view) hasTool(name string) bool {
	for _, t := range v.req.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}
