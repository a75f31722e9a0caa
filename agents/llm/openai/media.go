package openai

import (
	"encoding/base64"
	"fmt"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"

	"github.com/stoke-cli/stoke/agents/llm"
)

// CheckInput implements llm.InputChecker: chat completions take images (JPEG, PNG, GIF,
// WebP; base64, sent as a data URL, or a URL) and documents (PDF as base64, sent as a file
// part; plain text, sent as text). Whether the model itself reads them is the endpoint's
// answer.
func (m *Model) CheckInput(b llm.Block) error {
	_, err := mediaPart(m.model, b)
	return err
}

// mediaPart translates an image or document block into a content part.
func mediaPart(model string, b llm.Block) (sdk.ChatCompletionContentPartUnionParam, error) {
	kinds := []string{llm.SourceBase64, llm.SourceURL}
	if b.Type == llm.BlockDocument {
		kinds = []string{llm.SourceBase64, llm.SourceText}
	}
	if err := llm.CheckMedia(model, b, kinds...); err != nil {
		return sdk.ChatCompletionContentPartUnionParam{}, err
	}
	s := b.Source
	fail := func(reason string) (sdk.ChatCompletionContentPartUnionParam, error) {
		return sdk.ChatCompletionContentPartUnionParam{}, &llm.InputError{Model: model, Type: b.Type, Source: s.Describe(), Reason: reason}
	}
	if b.Type == llm.BlockImage {
		url := s.URL
		if s.Type == llm.SourceBase64 {
			url = "data:" + s.MediaType + ";base64," + s.Data
		}
		return sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{URL: url}), nil
	}
	switch {
	case s.Type == llm.SourceText:
		return sdk.TextContentPart(documentText(b.Title, s.Data)), nil
	case s.MediaType == "application/pdf":
		name := b.Title
		if name == "" {
			name = "document"
		}
		if !strings.HasSuffix(strings.ToLower(name), ".pdf") {
			name += ".pdf"
		}
		return sdk.FileContentPart(sdk.ChatCompletionContentPartFileFileParam{
			FileData: param.NewOpt("data:application/pdf;base64," + s.Data),
			Filename: param.NewOpt(name),
		}), nil
	case s.MediaType == "text/plain":
		text, err := base64.StdEncoding.DecodeString(s.Data)
		if err != nil {
			return fail(fmt.Sprintf("the base64 data does not decode: %v", err))
		}
		return sdk.TextContentPart(documentText(b.Title, string(text))), nil
	}
	return fail("documents must be application/pdf or text/plain")
}

// documentText is a plain-text document as the text the model reads.
func documentText(title, text string) string {
	if title == "" {
		return "<document>\n" + text + "\n</document>"
	}
	return fmt.Sprintf("<document title=%q>\n%s\n</document>", title, text)
}
