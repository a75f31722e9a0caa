package scripted

import (
	"errors"
	"strings"
	"testing"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/llmtest"
)

func TestMediaKey(t *testing.T) {
	t.Parallel()
	png := llm.Block{Type: llm.BlockImage, Source: &llm.Source{Type: llm.SourceBase64, MediaType: "image/png", Data: "iVBORw0KGgo="}}
	pdf := llm.Block{Type: llm.BlockDocument, Title: "spec", Source: &llm.Source{Type: llm.SourceBase64, MediaType: "application/pdf", Data: "JVBERi0="}}
	url := llm.Block{Type: llm.BlockImage, Source: &llm.Source{Type: llm.SourceURL, URL: "https://example.com/a.png"}}
	tests := []struct {
		name, media string
		block       llm.Block
		wantErr     string
	}{
		{"text only by default", "", png, "the scenario takes text only"},
		{"a listed type", "media: [image/png]\n", png, ""},
		{"an unlisted type", "media: [image/png]\n", pdf, "the scenario takes image/png only"},
		{"a url source by url", "media: [url]\n", url, ""},
		{"any", "media: ['*']\n", pdf, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := Parse("m", []byte(tt.media+"rules:\n  - reply: {text: 'saw {{ media }}'}\n"))
			if err != nil {
				t.Fatal(err)
			}
			err = New(s).CheckInput(tt.block)
			if tt.wantErr == "" {
				if err != nil {
					t.Errorf("CheckInput = %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, llm.ErrUnsupportedInput) {
				t.Errorf("CheckInput = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestMediaTemplate(t *testing.T) {
	t.Parallel()
	s, err := Parse("m", []byte("media: ['*']\nrules:\n  - reply: {text: 'saw {{ media }}'}\n"))
	if err != nil {
		t.Fatal(err)
	}
	req := &llm.Request{Agent: "parent", Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{
		llm.TextBlock("look"),
		{Type: llm.BlockImage, Source: &llm.Source{Type: llm.SourceBase64, MediaType: "image/png", Data: "iVBORw0KGgo="}},
		{Type: llm.BlockDocument, Title: "spec", Source: &llm.Source{Type: llm.SourceText, MediaType: "text/plain", Data: "hello"}},
	}}}}
	evs, err := llmtest.Collect(t.Context(), New(s), req)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := llmtest.TextOf(evs), `saw image (image/png, 8 bytes); document (text/plain text, 5 bytes) "spec"`; got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
}
