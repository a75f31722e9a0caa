package openaitest_test

// These tests drive the mock with the official openai-go client and the scripted
// provider, so the wire format is checked against the SDK stoke's openai provider wraps,
// not only against our own reading of it.

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/stoke-cli/stoke/agents/llm/openai/openaitest"
	"github.com/stoke-cli/stoke/agents/llm/scripted"
)

const roundTrip = `
name: roundtrip
rules:
  - agent: parent
    when:
      last_tool_result_contains: "no such tool"
    reply:
      text: "The tool failed: {{ lastToolResult }}"
  - agent: parent
    when:
      step: 1
    reply:
      text: "Checking {{ lastUser }}."
      tool_calls:
        - name: frobnicate
          input: {target: "{{ lastUser }}", deep: {list: [1, 2]}}
  - agent: Explore
    reply:
      text: "explorer here"
`

func scriptedModel(t *testing.T, yaml string) *scripted.Model {
	t.Helper()
	sc, err := scripted.Parse("inline.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return scripted.New(sc)
}

func client(s *openaitest.Server, retries int, opts ...option.RequestOption) openai.Client {
	return openai.NewClient(append([]option.RequestOption{
		option.WithBaseURL(s.URL()),
		option.WithAPIKey("sk-test"),
		option.WithHTTPClient(s.Client()),
		option.WithMaxRetries(retries),
	}, opts...)...)
}

var taskTool = openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
	Name:       "task",
	Parameters: openai.FunctionParameters{"type": "object"},
})

func params(msgs ...openai.ChatCompletionMessageParamUnion) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:         "gpt-test",
		Messages:      msgs,
		Tools:         []openai.ChatCompletionToolUnionParam{taskTool},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
}

// stream runs one streaming call and returns the accumulated completion.
func stream(t *testing.T, c openai.Client, p openai.ChatCompletionNewParams) (openai.ChatCompletionAccumulator, error) {
	t.Helper()
	s := c.Chat.Completions.NewStreaming(t.Context(), p)
	defer s.Close()
	var acc openai.ChatCompletionAccumulator
	for s.Next() {
		if !acc.AddChunk(s.Current()) {
			t.Fatalf("accumulator rejected chunk %s", s.Current().RawJSON())
		}
	}
	return acc, s.Err()
}

func TestSDKToolRoundTrip(t *testing.T) {
	t.Parallel()
	s := openaitest.New(scriptedModel(t, roundTrip), openaitest.WithAPIKey("sk-test"))
	defer s.Close()
	c := client(s, 0)

	first := params(openai.SystemMessage("You are stoke."), openai.UserMessage("the widget"))
	acc, err := stream(t, c, first)
	if err != nil {
		t.Fatal(err)
	}
	msg := acc.Choices[0].Message
	if msg.Content != "Checking the widget." || acc.Choices[0].FinishReason != "tool_calls" {
		t.Fatalf("first reply %q, finish %q", msg.Content, acc.Choices[0].FinishReason)
	}
	if len(msg.ToolCalls) != 1 {
		t.Fatalf("got %d tool calls, want 1", len(msg.ToolCalls))
	}
	tc := msg.ToolCalls[0]
	var args map[string]any
	if err := json.Unmarshal([]byte(tc.Function.Arguments), &args); err != nil {
		t.Fatalf("arguments %q: %v", tc.Function.Arguments, err)
	}
	if tc.ID == "" || tc.Function.Name != "frobnicate" || args["target"] != "the widget" {
		t.Errorf("tool call %+v", tc)
	}
	if acc.Usage.PromptTokens == 0 || acc.Usage.CompletionTokens == 0 ||
		acc.Usage.TotalTokens != acc.Usage.PromptTokens+acc.Usage.CompletionTokens {
		t.Errorf("usage %+v", acc.Usage)
	}

	second := first
	second.Messages = append(second.Messages, msg.ToParam(), openai.ToolMessage("error: no such tool: frobnicate", tc.ID))
	acc, err = stream(t, c, second)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := acc.Choices[0].Message.Content, "The tool failed: error: no such tool: frobnicate"; got != want {
		t.Errorf("second reply %q, want %q", got, want)
	}
	if acc.Choices[0].FinishReason != "stop" {
		t.Errorf("finish %q, want stop", acc.Choices[0].FinishReason)
	}
	if n := len(s.Requests()); n != 2 {
		t.Errorf("server saw %d requests, want 2", n)
	}
}

func TestSDKSubagentRouting(t *testing.T) {
	t.Parallel()
	s := openaitest.New(scriptedModel(t, roundTrip))
	defer s.Close()
	p := params(openai.SystemMessage("You are a subagent.\nAgent type: Explore"), openai.UserMessage("look"))
	p.Tools = nil // no task tool: not the parent
	c := client(s, 0)
	got, err := c.Chat.Completions.New(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	if got.Choices[0].Message.Content != "explorer here" {
		t.Errorf("reply %q, want the Explore rule's", got.Choices[0].Message.Content)
	}
}

func TestSDKRetriesInjectedFailure(t *testing.T) {
	t.Parallel()
	s := openaitest.New(scriptedModel(t, roundTrip), openaitest.WithFailFirst(1, http.StatusInternalServerError))
	defer s.Close()
	acc, err := stream(t, client(s, 1), params(openai.UserMessage("x")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(acc.Choices[0].Message.Content, "Checking x") {
		t.Errorf("reply %q", acc.Choices[0].Message.Content)
	}
	if n := len(s.Requests()); n != 2 {
		t.Errorf("server saw %d requests, want 2", n)
	}
}

func TestSDKErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		opts   []openaitest.Option
		status int // 0: the stream itself fails
	}{
		{"wrong key", []openaitest.Option{openaitest.WithAPIKey("sk-other")}, http.StatusUnauthorized},
		{"server error, no retries", []openaitest.Option{openaitest.WithFailFirst(1, http.StatusServiceUnavailable)}, http.StatusServiceUnavailable},
		{"cut stream", []openaitest.Option{openaitest.WithCutAfter(2)}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := openaitest.New(scriptedModel(t, roundTrip), tt.opts...)
			defer s.Close()
			_, err := stream(t, client(s, 0), params(openai.UserMessage("x")))
			if err == nil {
				t.Fatal("stream succeeded, want an error")
			}
			var apiErr *openai.Error
			switch {
			case tt.status == 0 && errors.As(err, &apiErr):
				t.Errorf("cut stream gave an API error %v, want a transport error", err)
			case tt.status != 0 && (!errors.As(err, &apiErr) || apiErr.StatusCode != tt.status):
				t.Errorf("error %v, want an API error with status %d", err, tt.status)
			}
		})
	}
}

func TestSDKScenarioWithoutMatchingRule(t *testing.T) {
	t.Parallel()
	s := openaitest.New(scriptedModel(t, "rules:\n  - agent: nobody\n    reply: {text: x}\n"))
	defer s.Close()
	_, err := stream(t, client(s, 0), params(openai.UserMessage("x")))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusInternalServerError {
		t.Fatalf("error %v, want HTTP 500", err)
	}
	if !strings.Contains(apiErr.Message, scripted.ErrNoRule.Error()) {
		t.Errorf("message %q does not say that no rule matched", apiErr.Message)
	}
}
