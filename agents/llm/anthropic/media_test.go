package anthropic

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/llmtest"
	"github.com/stoke-cli/stoke/agents/llm/scripted"
)

// mediaEcho is a model that answers with what it saw of the latest user message's media.
func mediaEcho(t *testing.T) llm.Model {
	t.Helper()
	return scripted.New(mustScenario(t, "rules:\n  - reply: {text: 'saw {{ media }}'}\n"))
}

func TestMediaBlocks(t *testing.T) {
	t.Parallel()
	png := &llm.Source{Type: llm.SourceBase64, MediaType: "image/png", Data: "iVBORw0KGgo="}
	tests := []struct {
		name  string
		block llm.Block
		wire  string // the block as sent
		saw   string // what the model behind the API read
	}{
		{"base64 image", llm.Block{Type: llm.BlockImage, Source: png},
			`{"source":{"data":"iVBORw0KGgo=","media_type":"image/png","type":"base64"},"type":"image"}`,
			"saw image (image/png, 8 bytes)"},
		{"image url", llm.Block{Type: llm.BlockImage, Source: &llm.Source{Type: llm.SourceURL, URL: "https://example.com/a.png"}},
			`{"source":{"url":"https://example.com/a.png","type":"url"},"type":"image"}`,
			"saw image (url https://example.com/a.png)"},
		{"pdf with a title", llm.Block{Type: llm.BlockDocument, Title: "spec", Source: &llm.Source{Type: llm.SourceBase64, MediaType: "application/pdf", Data: "JVBERi0="}},
			`{"source":{"data":"JVBERi0=","media_type":"application/pdf","type":"base64"},"title":"spec","type":"document"}`,
			`saw document (application/pdf, 5 bytes) "spec"`},
		{"plain text document", llm.Block{Type: llm.BlockDocument, Source: &llm.Source{Type: llm.SourceText, MediaType: "text/plain", Data: "hello"}},
			`{"source":{"data":"hello","media_type":"text/plain","type":"text"},"type":"document"}`,
			"saw document (text/plain text, 5 bytes)"},
		{"base64 text document is sent as text", llm.Block{Type: llm.BlockDocument, Source: &llm.Source{Type: llm.SourceBase64, MediaType: "text/plain", Data: "aGVsbG8="}},
			`{"source":{"data":"hello","media_type":"text/plain","type":"text"},"type":"document"}`,
			"saw document (text/plain text, 5 bytes)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, m := serveModel(t, mediaEcho(t), func(*Config) {})
			body, saw := llmtest.SendMedia(t, srv, m, tt.block)
			got := gjson.GetBytes(body, "messages.0.content.1")
			if strings.ReplaceAll(got.Raw, `,"cache_control":{"type":"ephemeral"}`, "") != tt.wire {
				t.Errorf("block sent = %s\nwant %s", got.Raw, tt.wire)
			}
			if saw != tt.saw {
				t.Errorf("the model saw %q, want %q", saw, tt.saw)
			}
		})
	}
}

func TestMediaRefused(t *testing.T) {
	t.Parallel()
	_, m := serve(t, func(*Config) {})
	llmtest.CheckRefused(t, m, "claude-default",
		llm.Block{Type: llm.BlockImage, Source: &llm.Source{Type: llm.SourceBase64, MediaType: "image/bmp", Data: "Qk0="}},
		llm.Block{Type: llm.BlockImage},
		llm.Block{Type: llm.BlockDocument, Source: &llm.Source{Type: llm.SourceBase64, MediaType: "application/zip", Data: "UEs="}},
	)
}
