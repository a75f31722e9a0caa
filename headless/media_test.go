package headless

import (
	"strings"
	"testing"
)

// mediaLine is a user line with text and one image.
const mediaLine = `{"type":"user","message":{"role":"user","content":[{"type":"text","text":"what is on it?"},` +
	`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]}}`

// A model that takes images sees them; one that does not refuses the turn with an error
// result, and the session goes on: the next message is answered, and the refused one never
// joined the chat.
func TestMediaTurns(t *testing.T) {
	t.Parallel()
	const rules = `
rules:
  - agent: parent
    when: {last_user_contains: "and now"}
    reply: {text: 'history: {{ match "what is on it" }}|'}
  - agent: parent
    reply: {text: 'saw {{ media }}'}
`
	tests := []struct {
		name, media string
		first       string // the first result's errors or result
		isError     bool
		history     string
	}{
		{"a model that takes images", "media: [image/png]\n", "saw image (image/png, 8 bytes)", false, "history: what is on it|"},
		{"a text model", "", "the model scripted does not take image (image/png, 8 bytes) input: the scenario takes text only", true, "history: |"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := model(t, tt.media+rules)
			h := startHost(t, sdkOpts(t, m))
			h.send(mediaLine)
			first := h.next("the first result", isType("result"))
			h.user("and now?")
			second := h.next("the second result", isType("result"))
			if _, err := h.closeStdin(); err != nil {
				t.Fatalf("Run: %v", err)
			}
			got := first.Get("result").Str
			if tt.isError {
				got = first.Get("errors.0").Str
				if first.Get("subtype").Str != "error_during_execution" || first.Get("terminal_reason").Str != "image_error" {
					t.Errorf("first result = %s", first.Raw)
				}
			}
			if !strings.Contains(got, tt.first) {
				t.Errorf("first result = %s, want %q", first.Raw, tt.first)
			}
			if second.Get("subtype").Str != "success" || second.Get("result").Str != tt.history {
				t.Errorf("second result = %s, want %q", second.Raw, tt.history)
			}
		})
	}
}
