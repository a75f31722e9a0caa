package streamjson

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/stoke-cli/stoke/agents/llm"
)

// decoded is what a test compares of one Next call.
type decoded struct {
	Kind      InputKind
	Line      int
	Type      string
	Message   llm.Message
	RequestID string
	Subtype   string
	Err       string // DecodeError text, "" for none
}

// decodeAll calls Next until io.EOF; every error must be a *DecodeError.
func decodeAll(t *testing.T, input string) []decoded {
	t.Helper()
	d := NewDecoder(strings.NewReader(input))
	var out []decoded
	for range 1000 {
		in, err := d.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) || !errors.Is(err, ErrMalformed) {
				t.Fatalf("Next error %v (%T) is not a *DecodeError wrapping ErrMalformed", err, err)
			}
			out = append(out, decoded{Line: de.Line, Err: err.Error()})
			continue
		}
		if !bytes.Equal(in.Raw, bytes.TrimSpace(in.Raw)) || !gjson.ValidBytes(in.Raw) {
			t.Fatalf("line %d: Raw %q is not the trimmed JSON line", in.Line, in.Raw)
		}
		out = append(out, decoded{Kind: in.Kind, Line: in.Line, Type: in.Type, Message: in.Message, RequestID: in.RequestID, Subtype: in.Subtype})
	}
	t.Fatal("Next never returned io.EOF")
	return nil
}

func userMsg(blocks ...llm.Block) llm.Message {
	return llm.Message{Role: llm.RoleUser, Content: blocks}
}

func TestDecoder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		input string
		want  []decoded
	}{
		{
			name:  "string content",
			input: `{"type":"user","message":{"role":"user","content":"Run the tests"},"parent_tool_use_id":null,"session_id":""}` + "\n",
			want:  []decoded{{Kind: InputUser, Line: 1, Type: "user", Message: llm.UserText("Run the tests")}},
		},
		{
			name:  "block content, role omitted, extra keys, no final newline",
			input: `{"type":"user","uuid":"x","priority":"now","message":{"content":[{"type":"text","text":"a <b> & c"},{"type":"text","text":"d"}]}}`,
			want:  []decoded{{Kind: InputUser, Line: 1, Type: "user", Message: userMsg(llm.TextBlock("a <b> & c"), llm.TextBlock("d"))}},
		},
		{
			name: "tool_result with string, array and absent content",
			input: `{"type":"user","message":{"role":"user","content":[` +
				`{"type":"tool_result","tool_use_id":"c1","content":"plain","is_error":true},` +
				`{"type":"tool_result","tool_use_id":"c2","content":[{"type":"text","text":"one"},{"type":"text","text":"two"}]},` +
				`{"type":"tool_result","tool_use_id":"c3"}]}}` + "\n",
			want: []decoded{{Kind: InputUser, Line: 1, Type: "user", Message: userMsg(
				llm.Block{Type: llm.BlockToolResult, ToolUseID: "c1", Content: "plain", IsError: true},
				llm.Block{Type: llm.BlockToolResult, ToolUseID: "c2", Content: "one\ntwo"},
				llm.Block{Type: llm.BlockToolResult, ToolUseID: "c3"},
			)}},
		},
		{
			name:  "escaped text is unescaped",
			input: `{"type":"user","message":{"content":"tab\there \u00e9 \"q\" \\"}}` + "\n",
			want:  []decoded{{Kind: InputUser, Line: 1, Type: "user", Message: llm.UserText("tab\there é \"q\" \\")}},
		},
		{
			name:  "blank lines are skipped but counted, CRLF accepted",
			input: "\n  \r\n" + `{"type":"user","message":{"content":"a"}}` + "\r\n\n" + `{"type":"user","message":{"content":"b"}}` + "\n\n",
			want: []decoded{
				{Kind: InputUser, Line: 3, Type: "user", Message: llm.UserText("a")},
				{Kind: InputUser, Line: 5, Type: "user", Message: llm.UserText("b")},
			},
		},
		{
			name: "control lines",
			input: `{"request_id":"k3x9q2","type":"control_request","request":{"subtype":"initialize","systemPrompt":[""]}}` + "\n" +
				`{"type":"control_response","response":{"subtype":"success","request_id":"p1","response":{"behavior":"allow"}}}` + "\n" +
				`{"type":"control_cancel_request","request_id":"p2"}` + "\n",
			want: []decoded{
				{Kind: InputControlRequest, Line: 1, Type: "control_request", RequestID: "k3x9q2", Subtype: "initialize"},
				{Kind: InputControlResponse, Line: 2, Type: "control_response", RequestID: "p1", Subtype: "success"},
				{Kind: InputControlCancel, Line: 3, Type: "control_cancel_request", RequestID: "p2"},
			},
		},
		{
			name:  "unknown types come back as other",
			input: `{"type":"keep_alive"}` + "\n" + `{"type":"assistant","message":{}}` + "\n",
			want: []decoded{
				{Kind: InputOther, Line: 1, Type: "keep_alive"},
				{Kind: InputOther, Line: 2, Type: "assistant"},
			},
		},
		{
			name: "images, documents and unknown blocks are kept for the turn to decide",
			input: `{"type":"user","message":{"content":[{"type":"text","text":"what is this?"},` +
				`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw=="}},` +
				`{"type":"image","source":{"type":"url","url":"https://example.com/a.png"}},` +
				`{"type":"document","title":"notes","source":{"type":"text","media_type":"text/plain","data":"hello"}},` +
				`{"type":"document","source":"bad"},` +
				`{"type":"search_result","source":"x"}]}}`,
			want: []decoded{{Kind: InputUser, Line: 1, Type: "user", Message: llm.Message{Role: llm.RoleUser, Content: []llm.Block{
				llm.TextBlock("what is this?"),
				{Type: llm.BlockImage, Source: &llm.Source{Type: llm.SourceBase64, MediaType: "image/png", Data: "iVBORw=="}},
				{Type: llm.BlockImage, Source: &llm.Source{Type: llm.SourceURL, URL: "https://example.com/a.png"}},
				{Type: llm.BlockDocument, Title: "notes", Source: &llm.Source{Type: llm.SourceText, MediaType: "text/plain", Data: "hello"}},
				{Type: llm.BlockDocument},
				{Type: "search_result"},
			}}}},
		},
		{
			name: "malformed lines name their line and decoding goes on",
			input: `{"type":"user","message":{"content":"ok"}}` + "\n" +
				"not json\n" +
				"[1,2]\n" +
				`{"message":{"content":"x"}}` + "\n" +
				`{"type":7}` + "\n" +
				`{"type":"user"}` + "\n" +
				`{"type":"user","message":{"role":"user"}}` + "\n" +
				`{"type":"user","message":{"role":"assistant","content":"x"}}` + "\n" +
				`{"type":"user","message":{"content":42}}` + "\n" +
				`{"type":"user","message":{"content":[]}}` + "\n" +
				`{"type":"user","message":{"content":[{"type":"image","source":{}}]}}` + "\n" +
				`{"type":"user","message":{"content":[{"type":"text"}]}}` + "\n" +
				`{"type":"user","message":{"content":[{"type":"tool_result","content":"x"}]}}` + "\n" +
				`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"c","content":[{"type":"image"}]}]}}` + "\n" +
				`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"c","is_error":"yes"}]}}` + "\n" +
				`{"type":"control_request","request":{"subtype":"interrupt"}}` + "\n" +
				`{"type":"control_response","request_id":"top","response":{"subtype":"success"}}` + "\n" +
				`{"type":"user","message":{"content":"last"}}`,
			want: []decoded{
				{Kind: InputUser, Line: 1, Type: "user", Message: llm.UserText("ok")},
				{Line: 2, Err: "stdin line 2: not valid JSON"},
				{Line: 3, Err: "stdin line 3: not a JSON object"},
				{Line: 4, Err: `stdin line 4: no "type" string`},
				{Line: 5, Err: `stdin line 5: no "type" string`},
				{Line: 6, Err: `stdin line 6: user line without a "message" object`},
				{Line: 7, Err: "stdin line 7: user line without message.content"},
				{Line: 8, Err: `stdin line 8: user line with message.role "assistant", want "user"`},
				{Line: 9, Err: "stdin line 9: user line: message.content is neither a string nor an array"},
				{Line: 10, Err: "stdin line 10: user line: message.content is an empty array"},
				{Kind: InputUser, Line: 11, Type: "user", Message: llm.Message{Role: llm.RoleUser, Content: []llm.Block{{Type: llm.BlockImage, Source: &llm.Source{}}}}},
				{Line: 12, Err: `stdin line 12: user line: message.content[0]: text block without a "text" string`},
				{Line: 13, Err: `stdin line 13: user line: message.content[0]: tool_result block without a "tool_use_id" string`},
				{Line: 14, Err: "stdin line 14: user line: message.content[0]: tool_result content[0] is not a text block"},
				{Line: 15, Err: "stdin line 15: user line: message.content[0]: tool_result is_error is not a boolean"},
				{Line: 16, Err: `stdin line 16: control_request line without a "request_id" string`},
				{Line: 17, Err: `stdin line 17: control_response line without a "response.request_id" string`},
				{Kind: InputUser, Line: 18, Type: "user", Message: llm.UserText("last")},
			},
		},
		{
			name:  "deeply nested line",
			input: strings.Repeat("[", 20<<20) + "\n" + `{"type":"keep_alive"}`,
			want: []decoded{
				{Line: 1, Err: "stdin line 1: not valid JSON"},
				{Kind: InputOther, Line: 2, Type: "keep_alive"},
			},
		},
		{
			name:  "empty input",
			input: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, decodeAll(t, tt.input)); diff != "" {
				t.Errorf("decoded (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecoderLongLines(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("é", 1<<20) // 2 MiB of text
	line := `{"type":"user","message":{"content":"` + big + `"}}`
	t.Run("a 2 MiB line", func(t *testing.T) {
		t.Parallel()
		got := decodeAll(t, line+"\n"+`{"type":"user","message":{"content":"next"}}`+"\n")
		want := []decoded{
			{Kind: InputUser, Line: 1, Type: "user", Message: llm.UserText(big)},
			{Kind: InputUser, Line: 2, Type: "user", Message: llm.UserText("next")},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("decoded (-want +got):\n%s", diff)
		}
	})
	t.Run("a line over the limit is refused and skipped", func(t *testing.T) {
		t.Parallel()
		d := NewDecoder(iotest.OneByteReader(strings.NewReader(line + "\n" + `{"type":"keep_alive"}` + "\n")))
		d.maxLine = 1 << 20
		_, err := d.Next()
		var de *DecodeError
		if !errors.As(err, &de) || de.Line != 1 || !strings.Contains(de.Reason, "longer than") {
			t.Fatalf("Next = %v, want a DecodeError for line 1 being too long", err)
		}
		in, err := d.Next()
		if err != nil || in.Line != 2 || in.Kind != InputOther {
			t.Fatalf("Next after the long line = (%+v, %v), want line 2 keep_alive", in, err)
		}
		if _, err := d.Next(); !errors.Is(err, io.EOF) {
			t.Fatalf("Next at the end = %v, want io.EOF", err)
		}
	})
}

func TestDecoderReadError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	d := NewDecoder(io.MultiReader(strings.NewReader(`{"type":"keep_alive"}`+"\n"), iotest.ErrReader(boom)))
	if in, err := d.Next(); err != nil || in.Line != 1 {
		t.Fatalf("first Next = (%+v, %v)", in, err)
	}
	_, err := d.Next()
	var de *DecodeError
	if !errors.Is(err, boom) || errors.As(err, &de) {
		t.Fatalf("Next = %v, want the read error wrapped (not a DecodeError)", err)
	}
}

func TestInputKindString(t *testing.T) {
	t.Parallel()
	got := []string{InputUser.String(), InputControlRequest.String(), InputControlResponse.String(),
		InputControlCancel.String(), InputOther.String(), InputKind(0).String()}
	want := []string{"user", "control_request", "control_response", "control_cancel_request", "other", "InputKind(0)"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func FuzzDecoder(f *testing.F) {
	for _, seed := range []string{
		`{"type":"user","message":{"role":"user","content":"hi"}}`,
		`{"type":"user","message":{"content":[{"type":"text","text":"a"},{"type":"tool_result","tool_use_id":"c","content":[{"type":"text","text":"x"}],"is_error":false}]}}`,
		`{"type":"control_request","request_id":"r","request":{"subtype":"interrupt"}}`,
		`{"type":"control_response","response":{"subtype":"error","request_id":"r","error":"e"}}`,
		`{"type":"control_cancel_request","request_id":"r"}`,
		"\n\n{\"type\":\"keep_alive\"}\r\n[1]\nnot json\n{\"type\":\"user\"}",
		`{"type":"user","message":{"content":"\ud800"}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d := NewDecoder(bytes.NewReader(data))
		last := 0
		for {
			in, err := d.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			line := in.Line
			if err != nil {
				var de *DecodeError
				if !errors.As(err, &de) || !errors.Is(err, ErrMalformed) {
					t.Fatalf("error %v (%T) is not a *DecodeError", err, err)
				}
				line = de.Line
			} else {
				if !gjson.ValidBytes(in.Raw) {
					t.Fatalf("Raw %q is not JSON", in.Raw)
				}
				if in.Kind == InputUser && (in.Message.Role != llm.RoleUser || len(in.Message.Content) == 0) {
					t.Fatalf("user input with message %+v", in.Message)
				}
			}
			if line <= last || line > bytes.Count(data, []byte{'\n'})+1 {
				t.Fatalf("line %d after line %d in %d bytes", line, last, len(data))
			}
			last = line
		}
	})
}
