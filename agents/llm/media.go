package llm

import (
	"errors"
	"fmt"
	"slices"
)

// ErrUnsupportedInput is wrapped by the errors of CheckInput: the model does not take a
// block of the message (an image for a text-only model, a document it cannot read, a
// block type stoke does not know).
var ErrUnsupportedInput = errors.New("the model does not take this input")

// InputError says which block of a message a model does not take, and why.
type InputError struct {
	Model  string // the model's name
	Type   string // the block's type: image, document, or another type an SDK host sent
	Source string // what the block holds (Source.Describe); "" for other types
	Reason string // why the model does not take it
}

func (e *InputError) Error() string {
	what := e.Type
	if e.Source != "" {
		what += " (" + e.Source + ")"
	}
	return fmt.Sprintf("the model %s does not take %s input: %s", e.Model, what, e.Reason)
}

func (e *InputError) Unwrap() error { return ErrUnsupportedInput }

// InputChecker is implemented by a Model that takes blocks other than text and tool
// blocks in user messages. CheckInput returns nil when the model takes b (an image or a
// document), and an error saying why not otherwise. It sends nothing.
type InputChecker interface {
	CheckInput(b Block) error
}

// Wrapper is implemented by a Model that wraps another (a retrying, metering or recording
// wrapper): CheckInput asks the model it wraps.
type Wrapper interface {
	Unwrap() Model
}

// CheckInput reports whether m takes every block of msg, before msg joins a chat: text and
// tool blocks always; images and documents when m, or a model it wraps, says so
// (InputChecker); nothing else. The error wraps ErrUnsupportedInput.
func CheckInput(m Model, msg Message) error {
	for _, b := range msg.Content {
		switch b.Type {
		case BlockText, BlockToolUse, BlockToolResult:
			continue
		}
		if err := checkBlock(m, b); err != nil {
			return err
		}
	}
	return nil
}

func checkBlock(m Model, b Block) error {
	outer := m.Name()
	if b.Type != BlockImage && b.Type != BlockDocument {
		return &InputError{Model: outer, Type: b.Type, Reason: "stoke passes text, images and documents to models, no other block type"}
	}
	for m != nil {
		if c, ok := m.(InputChecker); ok {
			return c.CheckInput(b)
		}
		w, ok := m.(Wrapper)
		if !ok {
			break
		}
		m = w.Unwrap()
	}
	return &InputError{Model: outer, Type: b.Type, Source: b.Source.Describe(), Reason: "it takes text only"}
}

// ImageMediaType reports whether mt is an image format the Anthropic and OpenAI APIs take:
// JPEG, PNG, GIF or WebP.
func ImageMediaType(mt string) bool {
	switch mt {
	case "image/jpeg", "image/png", "image/gif", "image/webp":
		return true
	}
	return false
}

// CheckMedia is the common part of a provider's CheckInput: the block has a source of a
// kind in kinds, and an image's media type is one ImageMediaType takes. model names the
// model in the error.
func CheckMedia(model string, b Block, kinds ...string) error {
	fail := func(reason string) error {
		return &InputError{Model: model, Type: b.Type, Source: b.Source.Describe(), Reason: reason}
	}
	switch {
	case b.Source == nil:
		return fail("the block has no source")
	case !slices.Contains(kinds, b.Source.Type):
		return fail(fmt.Sprintf("a %s source is not supported (want %v)", b.Source.Type, kinds))
	case b.Type == BlockImage && b.Source.Type == SourceBase64 && !ImageMediaType(b.Source.MediaType):
		return fail("images must be image/jpeg, image/png, image/gif or image/webp")
	}
	return nil
}
