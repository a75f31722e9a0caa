package anthropic

import (
	"encoding/base64"
	"fmt"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/stoke-cli/stoke/agents/llm"
)

// CheckInput implements llm.InputChecker: the Messages API takes images (JPEG, PNG, GIF,
// WebP; base64 or a URL) and documents (PDF, base64 or a URL; plain text).
func (m *Model) CheckInput(b llm.Block) error {
	_, err := mediaBlock(m.model, b)
	return err
}

// mediaBlock translates an image or document block.
func mediaBlock(model string, b llm.Block) (sdk.ContentBlockParamUnion, error) {
	if err := llm.CheckMedia(model, b, llm.SourceBase64, llm.SourceURL, llm.SourceText); err != nil {
		return sdk.ContentBlockParamUnion{}, err
	}
	s := b.Source
	fail := func(reason string) (sdk.ContentBlockParamUnion, error) {
		return sdk.ContentBlockParamUnion{}, &llm.InputError{Model: model, Type: b.Type, Source: s.Describe(), Reason: reason}
	}
	if b.Type == llm.BlockImage {
		switch s.Type {
		case llm.SourceBase64:
			return sdk.NewImageBlockBase64(s.MediaType, s.Data), nil
		case llm.SourceURL:
			return sdk.NewImageBlock(sdk.URLImageSourceParam{URL: s.URL}), nil
		}
		return fail("an image needs a base64 or url source")
	}
	var doc sdk.ContentBlockParamUnion
	switch {
	case s.Type == llm.SourceURL:
		doc = sdk.NewDocumentBlock(sdk.URLPDFSourceParam{URL: s.URL})
	case s.Type == llm.SourceText:
		doc = sdk.NewDocumentBlock(sdk.PlainTextSourceParam{Data: s.Data})
	case s.MediaType == "application/pdf":
		doc = sdk.NewDocumentBlock(sdk.Base64PDFSourceParam{Data: s.Data})
	case s.MediaType == "text/plain":
		text, err := base64.StdEncoding.DecodeString(s.Data)
		if err != nil {
			return fail(fmt.Sprintf("the base64 data does not decode: %v", err))
		}
		doc = sdk.NewDocumentBlock(sdk.PlainTextSourceParam{Data: string(text)})
	default:
		return fail("documents must be application/pdf or text/plain")
	}
	if b.Title != "" {
		doc.OfDocument.Title = param.NewOpt(b.Title)
	}
	return doc, nil
}
