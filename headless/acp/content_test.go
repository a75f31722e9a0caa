package acp

import (
	"encoding/json"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/stoke-cli/stoke/agents"
	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/streamjson"
)

func TestUserMessage(t *testing.T) {
	t.Parallel()
	pdf, png := "application/pdf", "image/png"
	desc := "the spec"
	tests := []struct {
		name    string
		in      sdk.ContentBlock
		want    llm.Block
		wantErr string
	}{
		{"text", sdk.TextBlock("hi"), llm.TextBlock("hi"), ""},
		{"image", sdk.ImageBlock("AAAA", "image/png"), llm.Block{Type: llm.BlockImage, Source: &llm.Source{Type: llm.SourceBase64, MediaType: "image/png", Data: "AAAA"}}, ""},
		{"resource link", sdk.ContentBlock{ResourceLink: &sdk.ContentBlockResourceLink{Type: "resource_link", Name: "main.go", Uri: "file:///p/main.go", Description: &desc}},
			llm.TextBlock("[@main.go](file:///p/main.go): the spec"), ""},
		{"embedded text", sdk.ResourceBlock(sdk.EmbeddedResourceResource{TextResourceContents: &sdk.TextResourceContents{Uri: "file:///p/a.go", Text: "package a"}}),
			llm.TextBlock("<context ref=\"file:///p/a.go\">\npackage a\n</context>"), ""},
		{"embedded image", sdk.ResourceBlock(sdk.EmbeddedResourceResource{BlobResourceContents: &sdk.BlobResourceContents{Uri: "file:///p/a.png", Blob: "AAAA", MimeType: &png}}),
			llm.Block{Type: llm.BlockImage, Source: &llm.Source{Type: llm.SourceBase64, MediaType: png, Data: "AAAA"}}, ""},
		{"embedded pdf", sdk.ResourceBlock(sdk.EmbeddedResourceResource{BlobResourceContents: &sdk.BlobResourceContents{Uri: "file:///p/a.pdf", Blob: "AAAA", MimeType: &pdf}}),
			llm.Block{Type: llm.BlockDocument, Title: "file:///p/a.pdf", Source: &llm.Source{Type: llm.SourceBase64, MediaType: pdf, Data: "AAAA"}}, ""},
		{"audio", sdk.AudioBlock("AAAA", "audio/wav"), llm.Block{}, "audio is not supported"},
		{"other blob", sdk.ResourceBlock(sdk.EmbeddedResourceResource{BlobResourceContents: &sdk.BlobResourceContents{Uri: "file:///p/a.bin", Blob: "AAAA"}}), llm.Block{}, "blob is not supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			msg, err := userMessage([]sdk.ContentBlock{tt.in})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(msg)
			want, _ := json.Marshal(llm.Message{Role: llm.RoleUser, Content: []llm.Block{tt.want}})
			if string(got) != string(want) {
				t.Fatalf("message %s, want %s", got, want)
			}
		})
	}
	if _, err := userMessage(nil); err == nil {
		t.Fatal("an empty prompt was taken")
	}
}

func TestStopReason(t *testing.T) {
	t.Parallel()
	result := func(subtype, terminal string) *streamjson.Result {
		r := streamjson.NewResult(subtype)
		r.TerminalReason, r.Errors = terminal, []string{"the model failed"}
		return r
	}
	tests := []struct {
		name      string
		lastStop  string
		r         *streamjson.Result
		cancelled bool
		want      sdk.StopReason // "" for an error
	}{
		{"end turn", llm.StopEndTurn, result(streamjson.ResultSuccess, streamjson.TerminalCompleted), false, sdk.StopReasonEndTurn},
		{"max tokens", llm.StopMaxTokens, result(streamjson.ResultSuccess, streamjson.TerminalCompleted), false, sdk.StopReasonMaxTokens},
		{"refusal", "refusal", result(streamjson.ResultSuccess, streamjson.TerminalCompleted), false, sdk.StopReasonRefusal},
		{"max turns", llm.StopToolUse, result(streamjson.ResultErrorMaxTurns, streamjson.TerminalMaxTurns), false, sdk.StopReasonMaxTurnRequests},
		{"cancelled", llm.StopToolUse, result(streamjson.ResultErrorDuringExecution, streamjson.TerminalAborted), true, sdk.StopReasonCancelled},
		{"cancelled as it failed", "", result(streamjson.ResultErrorDuringExecution, streamjson.TerminalModelError), true, sdk.StopReasonCancelled},
		{"model error", "", result(streamjson.ResultErrorDuringExecution, streamjson.TerminalModelError), false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			u := newUpdates(nil, "s", "/", nil) // stopReason sends nothing
			u.stop = tt.lastStop
			resp, err := u.stopReason(tt.r, tt.cancelled)
			if tt.want == "" {
				if err == nil || !strings.Contains(err.Error(), "the model failed") {
					t.Fatalf("stop %q, err %v: want the turn's error", resp.StopReason, err)
				}
				return
			}
			if err != nil || resp.StopReason != tt.want {
				t.Fatalf("stop %q, err %v: want %q", resp.StopReason, err, tt.want)
			}
		})
	}
}

// An agent's turn call is completed once, whichever comes first: TurnSettled (the
// notification waits for the parent) or the task_notification event (the parent read it
// at once, in the turn running).
func TestAgentTurnSettlesInEitherOrder(t *testing.T) {
	for _, eventFirst := range []bool{true, false} {
		c := newTestClient()
		u := newUpdates(liveClient{c}, "s", "/", nil)
		e := &streamjson.TaskNotification{TaskID: "a1", Turn: 2, Status: streamjson.StatusCompleted, Summary: "NONCE-1"}
		info := agents.TurnInfo{TaskID: "a1", Turn: 2}
		if eventFirst {
			u.Event(e)
			u.TurnSettled(info, agents.Row{})
		} else {
			u.TurnSettled(info, agents.Row{})
			u.Event(e)
		}
		var done []string
		for _, up := range c.updates["s"] {
			if x := up.ToolCallUpdate; x != nil && x.ToolCallId == "a1-turn-2" && x.Status != nil && *x.Status == sdk.ToolCallStatusCompleted {
				done = append(done, x.Content[0].Content.Content.Text.Text)
			}
		}
		if len(done) != 1 || done[0] != "NONCE-1" {
			t.Errorf("event first %v: completions %q, want one saying NONCE-1", eventFirst, done)
		}
	}
}

// liveClient is a testClient that never goes.
type liveClient struct{ *testClient }

func (liveClient) Done() <-chan struct{} { return nil }
