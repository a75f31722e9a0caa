package openai

import (
	"errors"
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
	srv := openaitest.New(scripted.New(s), openaitest.WithAPIKey(testKey))
	t.Cleanup(srv.Close)
	m, err := New(Config{APIKey: testKey, BaseURL: srv.URL(), Model: "m-default", HTTPClient: srv.Client()})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return srv, m
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
			if err := m.CheckInput(tt.block); err != nil {
				t.Fatalf("CheckInput: %v", err)
			}
			req := &llm.Request{Agent: "parent", Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("look"), tt.block}}}}
			evs, err := llmtest.Collect(t.Context(), m, req)
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			body := srv.Requests()[0]
			if got := gjson.GetBytes(body, "messages.0.content.0").Raw; got != `{"text":"look","type":"text"}` {
				t.Errorf("first part = %s", got)
			}
			if got := gjson.GetBytes(body, "messages.0.content.1").Raw; got != tt.wire {
				t.Errorf("part sent = %s\nwant %s", got, tt.wire)
			}
			if got := llmtest.TextOf(evs); got != tt.saw {
				t.Errorf("the model saw %q, want %q", got, tt.saw)
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
	for _, b := range []llm.Block{
		{Type: llm.BlockDocument, Source: &llm.Source{Type: llm.SourceURL, URL: "https://example.com/a.pdf"}},
		{Type: llm.BlockImage, Source: &llm.Source{Type: llm.SourceBase64, MediaType: "image/tiff", Data: "SUk="}},
		{Type: llm.BlockDocument, Source: &llm.Source{Type: llm.SourceBase64, MediaType: "application/msword", Data: "0M8="}},
	} {
		err := m.CheckInput(b)
		var ie *llm.InputError
		if !errors.As(err, &ie) || !errors.Is(err, llm.ErrUnsupportedInput) || ie.Model != "m-default" {
			t.Errorf("CheckInput(%+v) = %v, want an *llm.InputError naming the model", b, err)
		}
	}
}
