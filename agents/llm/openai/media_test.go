package openai

import (
	"testing"

	"github.com/tidwall/gjson"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/llmtest"
	"github.com/stoke-cli/stoke/agents/llm/openai/openaitest"
	"github.com/stoke-cli/stoke/agents/llm/scripted"
)

// serveMedia starts a mock endpoint whose model answers with what it saw of the latest
// user message's media.
func serveMedia(t *testing.T) (*openaitest.Server, *Model) {
	t.Helper()
	s, err := scripted.Parse("media-echo", []byte("rules:\n  - reply: {text: 'saw {{ media }}'}\n"))
	if err != nil {
		t.Fatal(err)
	}
	return serveModel(t, scripted.New(s))
}

func TestMediaParts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		block llm.Block
		wire  string // the content part sent
		saw   string // what the model behind the endpoint read
	}{
		{"base64 image as a data URL", llm.Block{Type: llm.BlockImage, Source: &llm.Source{Type: llm.SourceBase64, MediaType: "image/png", Data: "iVBORw0KGgo="}},
			`{"image_url":{"url":"data:image/png;base64,iVBORw0KGgo="},"type":"image_url"}`,
			"saw image (image/png, 8 bytes)"},
		{"image url", llm.Block{Type: llm.BlockImage, Source: &llm.Source{Type: llm.SourceURL, URL: "https://example.com/a.png"}},
			`{"image_url":{"url":"https://example.com/a.png"},"type":"image_url"}`,
			"saw image (url https://example.com/a.png)"},
		{"pdf as a file part", llm.Block{Type: llm.BlockDocument, Title: "spec", Source: &llm.Source{Type: llm.SourceBase64, MediaType: "application/pdf", Data: "JVBERi0="}},
			`{"file":{"file_data":"data:application/pdf;base64,JVBERi0=","filename":"spec.pdf"},"type":"file"}`,
			`saw document (application/pdf, 5 bytes) "spec.pdf"`},
		{"plain text document as text", llm.Block{Type: llm.BlockDocument, Title: "notes", Source: &llm.Source{Type: llm.SourceText, MediaType: "text/plain", Data: "hello"}},
			`{"text":"<document title=\"notes\">\nhello\n</document>","type":"text"}`,
			"saw "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, m := serveMedia(t)
			body, saw := llmtest.SendMedia(t, srv, m, tt.block)
			if got := gjson.GetBytes(body, "messages.0.content.0").Raw; got != `{"text":"look","type":"text"}` {
				t.Errorf("first part = %s", got)
			}
			if got := gjson.GetBytes(body, "messages.0.content.1").Raw; got != tt.wire {
				t.Errorf("part sent = %s\nwant %s", got, tt.wire)
			}
			if saw != tt.saw {
				t.Errorf("the model saw %q, want %q", saw, tt.saw)
			}
		})
	}
}

func TestTextOnlyUserMessageStaysAString(t *testing.T) {
	t.Parallel()
	srv, m := serveMedia(t)
	if _, err := llmtest.Collect(t.Context(), m, hello()); err != nil {
		t.Fatal(err)
	}
	if got := gjson.GetBytes(srv.Requests()[0], "messages.0.content").Raw; got != `"hello"` {
		t.Errorf("content = %s, want a plain string", got)
	}
}

func TestMediaRefused(t *testing.T) {
	t.Parallel()
	_, m := serveMedia(t)
	llmtest.CheckRefused(t, m, "m-default",
		llm.Block{Type: llm.BlockDocument, Source: &llm.Source{Type: llm.SourceURL, URL: "https://example.com/a.pdf"}},
		llm.Block{Type: llm.BlockImage, Source: &llm.Source{Type: llm.SourceBase64, MediaType: "image/tiff", Data: "SUk="}},
		llm.Block{Type: llm.BlockDocument, Source: &llm.Source{Type: llm.SourceBase64, MediaType: "application/msword", Data: "0M8="}},
	)
}
