package llm_test

import (
	"context"
	"errors"
	"iter"
	"strings"
	"testing"

	"github.com/stoke-cli/stoke/agents/llm"
)

// textModel takes text only: it implements neither InputChecker nor Wrapper.
type textModel struct{}

func (textModel) Name() string { return "text-model" }
func (textModel) Generate(context.Context, *llm.Request) iter.Seq2[llm.Event, error] {
	return func(func(llm.Event, error) bool) {}
}

// pngModel takes PNG images only.
type pngModel struct{ textModel }

func (pngModel) CheckInput(b llm.Block) error {
	if b.Type == llm.BlockImage && b.Source != nil && b.Source.MediaType == "image/png" {
		return nil
	}
	return &llm.InputError{Model: "png-model", Type: b.Type, Reason: "PNG only"}
}

// wrapper wraps a model, as the retrying and metering wrappers do.
type wrapper struct{ llm.Model }

func (w wrapper) Name() string      { return "outer" }
func (w wrapper) Unwrap() llm.Model { return w.Model }
func (w wrapper) Generate(ctx context.Context, r *llm.Request) iter.Seq2[llm.Event, error] {
	return w.Model.Generate(ctx, r)
}

func TestCheckInput(t *testing.T) {
	t.Parallel()
	png := llm.Block{Type: llm.BlockImage, Source: &llm.Source{Type: llm.SourceBase64, MediaType: "image/png", Data: "AAAA"}}
	jpeg := llm.Block{Type: llm.BlockImage, Source: &llm.Source{Type: llm.SourceBase64, MediaType: "image/jpeg", Data: "AAAA"}}
	text := llm.UserText("hi")
	with := func(bs ...llm.Block) llm.Message {
		return llm.Message{Role: llm.RoleUser, Content: append([]llm.Block{llm.TextBlock("look")}, bs...)}
	}
	tests := []struct {
		name    string
		m       llm.Model
		msg     llm.Message
		wantErr string // "" for none
	}{
		{"text to a text model", textModel{}, text, ""},
		{"an image to a text model", textModel{}, with(png), "the model text-model does not take image (image/png, 3 bytes) input: it takes text only"},
		{"an image to a model that takes it", pngModel{}, with(png), ""},
		{"another image to that model", pngModel{}, with(jpeg), "PNG only"},
		{"through a wrapper, the wrapped model decides", wrapper{pngModel{}}, with(png), ""},
		{"through two wrappers", wrapper{wrapper{pngModel{}}}, with(jpeg), "PNG only"},
		{"a wrapper of a text model", wrapper{textModel{}}, with(png), "the model outer does not take image"},
		{"a block type stoke does not know", pngModel{}, with(llm.Block{Type: "search_result"}), "does not take search_result input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := llm.CheckInput(tt.m, tt.msg)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("CheckInput = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, llm.ErrUnsupportedInput)):
				t.Errorf("CheckInput = %v, want an ErrUnsupportedInput containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestCheckMedia(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		b    llm.Block
		want string
	}{
		{llm.Block{Type: llm.BlockImage}, "no source"},
		{llm.Block{Type: llm.BlockImage, Source: &llm.Source{Type: llm.SourceText, Data: "x"}}, "a text source is not supported"},
		{llm.Block{Type: llm.BlockImage, Source: &llm.Source{Type: llm.SourceBase64, MediaType: "image/bmp"}}, "images must be image/jpeg, image/png"},
		{llm.Block{Type: llm.BlockImage, Source: &llm.Source{Type: llm.SourceURL, URL: "https://x/a.bmp"}}, ""},
	} {
		err := llm.CheckMedia("m", tt.b, llm.SourceBase64, llm.SourceURL)
		if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("CheckMedia(%+v) = %v, want %q", tt.b, err, tt.want)
		}
	}
}

// A model under Limit takes what the model it wraps takes.
func TestCheckInputSeesThroughLimit(t *testing.T) {
	t.Parallel()
	png := llm.Block{Type: llm.BlockImage, Source: &llm.Source{Type: llm.SourceBase64, MediaType: "image/png", Data: "AAAA"}}
	msg := llm.Message{Role: llm.RoleUser, Content: []llm.Block{png}}
	if err := llm.CheckInput(llm.Limit(pngModel{}, 1), msg); err != nil {
		t.Errorf("CheckInput through Limit: %v", err)
	}
}
