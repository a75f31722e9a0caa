package streamjsontest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/sjson"
)

// edit changes the lines of a stream; line numbers are 1-based.
type edit func(t *testing.T, lines []string) []string

func set(line int, path string, value any) edit {
	return func(t *testing.T, lines []string) []string {
		out, err := sjson.Set(lines[line-1], path, value)
		if err != nil {
			t.Fatalf("set line %d %s: %v", line, path, err)
		}
		lines[line-1] = out
		return lines
	}
}

func setRaw(line int, path, raw string) edit {
	return func(t *testing.T, lines []string) []string {
		out, err := sjson.SetRaw(lines[line-1], path, raw)
		if err != nil {
			t.Fatalf("set line %d %s: %v", line, path, err)
		}
		lines[line-1] = out
		return lines
	}
}

func del(line int, path string) edit {
	return func(t *testing.T, lines []string) []string {
		out, err := sjson.Delete(lines[line-1], path)
		if err != nil {
			t.Fatalf("delete line %d %s: %v", line, path, err)
		}
		lines[line-1] = out
		return lines
	}
}

// insert puts text before line at (len+1 appends).
func insert(at int, text string) edit {
	return func(_ *testing.T, lines []string) []string { return slices.Insert(lines, at-1, text) }
}

// copyLine inserts a copy of line from before line at, with a fresh uuid.
func copyLine(from, at int) edit {
	return func(t *testing.T, lines []string) []string {
		dup, err := sjson.Set(lines[from-1], "uuid", fmt.Sprintf("copy-%d-%d", from, at))
		if err != nil {
			t.Fatal(err)
		}
		return slices.Insert(lines, at-1, dup)
	}
}

func drop(line int) edit {
	return func(_ *testing.T, lines []string) []string { return slices.Delete(lines, line-1, line) }
}

func replace(line int, text string) edit {
	return func(_ *testing.T, lines []string) []string {
		lines[line-1] = text
		return lines
	}
}

func swap(a, b int) edit {
	return func(_ *testing.T, lines []string) []string {
		lines[a-1], lines[b-1] = lines[b-1], lines[a-1]
		return lines
	}
}

func readLines(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// at is a violation as the tests compare it.
type at struct {
	Line int
	Rule string
}

func violationsOf(t *testing.T, err error) []at {
	t.Helper()
	if err == nil {
		return nil
	}
	var ve *ValidationError
	if !errors.As(err, &ve) || !errors.Is(err, ErrInvalidStream) {
		t.Fatalf("error %v (%T) is not a *ValidationError wrapping ErrInvalidStream", err, err)
	}
	var out []at
	for _, v := range ve.Violations {
		out = append(out, at{v.Line, v.Rule})
	}
	return out
}

const (
	textStream  = "valid_text.jsonl"
	multiStream = "valid_multi.jsonl"
	// extraLine is a well-formed parent assistant line of session s1.
	extraLine   = `{"type":"assistant","message":{"id":"mx","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}},"parent_tool_use_id":null,"uuid":"ux","session_id":"s1"}`
	controlLine = `{"type":"control_response","response":{"subtype":"success","request_id":"r1","response":{}},"uuid":"uc","session_id":"s1"}`
)

func TestValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		stream    string // testdata file
		multi     bool
		edits     []edit
		noNewline bool
		want      []at
	}{
		// Good streams.
		{name: "text run with a background agent continued once", stream: textStream},
		{name: "multi-turn run", stream: multiStream, multi: true},
		{name: "a text run is a valid multi-turn run", stream: textStream, multi: true},
		{name: "user content may be a string", stream: textStream, edits: []edit{set(10, "message.content", "plain")}},
		{name: "stopped task", stream: textStream, edits: []edit{set(15, "status", "stopped"), set(15, "reason", "cancelled"), set(15, "interrupted", true)}},
		{name: "error result", stream: textStream, edits: []edit{
			set(17, "subtype", "error_during_execution"), set(17, "is_error", true), set(17, "result", ""),
			setRaw(17, "errors", `["model backend unreachable"]`),
		}},
		{name: "is_error with success", stream: textStream, edits: []edit{set(17, "is_error", true)}},
		{name: "task revived from an earlier process", stream: textStream, edits: []edit{
			set(12, "task_id", "t2"), set(12, "continuation", "revived"), set(14, "task_id", "t2"), set(15, "task_id", "t2"),
		}},
		{name: "init re-emitted", stream: textStream, edits: []edit{copyLine(1, 10)}},
		{name: "other system subtypes pass", stream: textStream, edits: []edit{
			insert(3, `{"type":"system","subtype":"background_tasks_changed","tasks":[],"uuid":"ub","session_id":"s1"}`),
		}},

		// Every line.
		{name: "not JSON", stream: textStream, edits: []edit{replace(4, `{"type":"user",`)}, want: []at{{4, "json"}}},
		{name: "not an object", stream: textStream, edits: []edit{replace(4, `["user"]`)}, want: []at{{4, "json"}}},
		{name: "deeply nested line", stream: textStream, edits: []edit{replace(4, strings.Repeat("[", 20<<20))}, want: []at{{4, "json"}}},
		{name: "empty line", stream: textStream, edits: []edit{insert(5, "")}, want: []at{{5, "json"}}},
		{name: "no type", stream: textStream, edits: []edit{del(4, "type")}, want: []at{{4, "envelope.type"}}},
		{name: "unknown type", stream: textStream, edits: []edit{set(10, "type", "note")}, want: []at{{10, "envelope.type"}}},
		{name: "control_response in a text run", stream: textStream, edits: []edit{insert(2, controlLine)}, want: []at{{2, "envelope.type"}}},
		{name: "system without subtype", stream: textStream, edits: []edit{del(7, "subtype")}, want: []at{{7, "envelope.subtype"}}},
		{name: "no uuid", stream: textStream, edits: []edit{del(4, "uuid")}, want: []at{{4, "envelope.uuid"}}},
		{name: "empty uuid", stream: textStream, edits: []edit{set(4, "uuid", "")}, want: []at{{4, "envelope.uuid"}}},
		{name: "uuid used twice", stream: textStream, edits: []edit{set(5, "uuid", "u04")}, want: []at{{5, "envelope.uuid_unique"}}},
		{name: "no session_id", stream: textStream, edits: []edit{del(6, "session_id")}, want: []at{{6, "envelope.session_id"}}},
		{name: "another session_id", stream: textStream, edits: []edit{set(6, "session_id", "s2")}, want: []at{{6, "envelope.session_id_equal"}}},

		// Stream order.
		{name: "empty stream", stream: textStream, edits: []edit{func(*testing.T, []string) []string { return nil }}, noNewline: true, want: []at{{0, "stream.empty"}}},
		{name: "no final newline", stream: textStream, noNewline: true, want: []at{{17, "stream.newline"}}},
		{name: "init not first", stream: textStream, edits: []edit{drop(1)}, want: []at{{1, "init.first"}}},
		{name: "no result", stream: textStream, edits: []edit{drop(17)}, want: []at{{0, "result.missing"}}},
		{name: "result not last", stream: textStream, edits: []edit{insert(18, extraLine)}, want: []at{{18, "result.last"}}},
		{name: "two results", stream: textStream, edits: []edit{copyLine(17, 18)}, want: []at{{18, "result.single"}}},
		{name: "two results mid-stream", stream: textStream, edits: []edit{copyLine(17, 11)}, want: []at{{18, "result.single"}}},

		// system/init.
		{name: "init without cwd", stream: textStream, edits: []edit{del(1, "cwd")}, want: []at{{1, "init.cwd"}}},
		{name: "init with empty model", stream: textStream, edits: []edit{set(1, "model", "")}, want: []at{{1, "init.model"}}},
		{name: "init tools not a list", stream: textStream, edits: []edit{set(1, "tools", "task")}, want: []at{{1, "init.tools"}}},
		{name: "init tools not strings", stream: textStream, edits: []edit{setRaw(1, "tools", `["task",1]`)}, want: []at{{1, "init.tools.#"}}},
		{name: "init without mcp_servers", stream: textStream, edits: []edit{del(1, "mcp_servers")}, want: []at{{1, "init.mcp_servers"}}},
		{name: "init mcp_servers of names", stream: textStream, edits: []edit{setRaw(1, "mcp_servers", `["fs"]`)}, want: []at{{1, "init.mcp_servers.#"}}},
		{name: "init mcp server without a name", stream: textStream, edits: []edit{setRaw(1, "mcp_servers", `[{"status":"connected"}]`)}, want: []at{{1, "init.mcp_servers.#.name"}}},
		{name: "init mcp server status unknown", stream: textStream, edits: []edit{setRaw(1, "mcp_servers", `[{"name":"fs","status":"up"}]`)}, want: []at{{1, "init.mcp_servers.#.status"}}},
		{name: "init mcp servers valid", stream: textStream, edits: []edit{setRaw(1, "mcp_servers", `[{"name":"fs","status":"connected"},{"name":"gh","status":"failed"},{"name":"x","status":"pending"}]`)}},
		{name: "init permission_mode in snake_case", stream: textStream, edits: []edit{del(1, "permissionMode"), set(1, "permission_mode", "default")}, want: []at{{1, "init.permissionMode"}}},
		{name: "init agents null", stream: textStream, edits: []edit{setRaw(1, "agents", "null")}, want: []at{{1, "init.agents"}}},

		// assistant.
		{name: "assistant content a string", stream: textStream, edits: []edit{set(2, "message.content", "hi")}, want: []at{{2, "assistant.message.content"}}},
		{name: "assistant without model", stream: textStream, edits: []edit{del(2, "message.model")}, want: []at{{2, "assistant.message.model"}}},
		{name: "assistant without id", stream: textStream, edits: []edit{del(2, "message.id")}, want: []at{{2, "assistant.message.id"}}},
		{name: "assistant message type", stream: textStream, edits: []edit{set(2, "message.type", "msg")}, want: []at{{2, "assistant.message.type"}}},
		{name: "assistant role", stream: textStream, edits: []edit{set(2, "message.role", "user")}, want: []at{{2, "assistant.message.role"}}},
		{name: "assistant without stop_reason", stream: textStream, edits: []edit{del(2, "message.stop_reason")}, want: []at{{2, "assistant.message.stop_reason"}}},
		{name: "assistant without usage", stream: textStream, edits: []edit{del(2, "message.usage")}, want: []at{{2, "assistant.message.usage"}}},
		{name: "assistant usage without output_tokens", stream: textStream, edits: []edit{del(2, "message.usage.output_tokens")}, want: []at{{2, "assistant.message.usage.output_tokens"}}},
		{name: "assistant not an object message", stream: textStream, edits: []edit{set(16, "message", "hi")}, want: []at{{16, "assistant.message"}}},
		{name: "assistant without parent_tool_use_id", stream: textStream, edits: []edit{del(2, "parent_tool_use_id")}, want: []at{{2, "assistant.parent_tool_use_id"}}},
		{name: "tool_use without id", stream: textStream, edits: []edit{del(2, "message.content.0.id")}, want: []at{{2, "assistant.message.content.#.id"}}},
		{name: "tool_use input not an object", stream: textStream, edits: []edit{set(2, "message.content.0.input", "x")}, want: []at{{2, "assistant.message.content.#.input"}}},
		{name: "text block without text", stream: textStream, edits: []edit{del(11, "message.content.0.text")}, want: []at{{11, "assistant.message.content.#.text"}}},
		{name: "unknown assistant block", stream: textStream, edits: []edit{set(16, "message.content.0.type", "image")}, want: []at{{16, "assistant.message.content.#.type"}}},
		{name: "thinking without signature", stream: textStream, edits: []edit{setRaw(16, "message.content.0", `{"type":"thinking","thinking":"hm"}`)}, want: []at{{16, "assistant.message.content.#.signature"}}},

		// user.
		{name: "user content an object", stream: textStream, edits: []edit{setRaw(4, "message.content", `{}`)}, want: []at{{4, "user.message.content"}}},
		{name: "user without message", stream: textStream, edits: []edit{del(4, "message")}, want: []at{{4, "user.message"}}},
		{name: "user role", stream: textStream, edits: []edit{set(4, "message.role", "assistant")}, want: []at{{4, "user.message.role"}}},
		{name: "tool_result without tool_use_id", stream: textStream, edits: []edit{del(4, "message.content.0.tool_use_id")}, want: []at{{4, "user.message.content.#.tool_use_id"}}},
		{name: "tool_result is_error a string", stream: textStream, edits: []edit{set(4, "message.content.0.is_error", "no")}, want: []at{{4, "user.message.content.#.is_error"}}},
		{name: "tool_result content a number", stream: textStream, edits: []edit{set(4, "message.content.0.content", 3)}, want: []at{{4, "user.message.content.#.content"}}},
		{name: "unknown user block", stream: textStream, edits: []edit{set(10, "message.content.0.type", "image")}, want: []at{{10, "user.message.content.#.type"}}},
		{name: "user without parent_tool_use_id", stream: textStream, edits: []edit{del(4, "parent_tool_use_id")}, want: []at{{4, "user.parent_tool_use_id"}}},

		// Subagent lines.
		{name: "subagent line without task_id", stream: textStream, edits: []edit{del(5, "task_id")}, want: []at{{5, "assistant.task_id"}}},
		{name: "subagent line with null parent", stream: textStream, edits: []edit{setRaw(6, "parent_tool_use_id", "null")}, want: []at{{6, "user.parent_tool_use_id"}}},
		{name: "continued subagent names the continuing call", stream: textStream, edits: []edit{set(14, "parent_tool_use_id", "call_B")}, want: []at{{14, "assistant.parent_tool_use_id"}}},
		{name: "subagent line of an unknown task", stream: textStream, edits: []edit{set(5, "task_id", "t9")}, want: []at{{5, "task.unknown"}}},
		{name: "subagent line after its notification", stream: textStream, edits: []edit{swap(8, 9)}, want: []at{{9, "task.order"}}},

		// task_started.
		{name: "task_started without description", stream: textStream, edits: []edit{del(3, "description")}, want: []at{{3, "task_started.description"}}},
		{name: "task_started is_backgrounded a string", stream: textStream, edits: []edit{set(3, "is_backgrounded", "yes")}, want: []at{{3, "task_started.is_backgrounded"}}},
		{name: "task_started unknown continuation", stream: textStream, edits: []edit{set(3, "continuation", "cold")}, want: []at{{3, "task_started.continuation"}}},
		{name: "task_started turn 0", stream: textStream, edits: []edit{set(3, "turn", 0)}, want: []at{{3, "task_started.turn"}}},
		{name: "fresh launch with turn 2", stream: textStream, edits: []edit{set(3, "turn", 2), set(7, "turn", 2), set(9, "turn", 2), set(12, "turn", 3), set(15, "turn", 3)}, want: []at{{3, "task_started.turn"}}},
		{name: "continuation skips a turn", stream: textStream, edits: []edit{set(12, "turn", 3)}, want: []at{{12, "task_started.turn"}, {15, "task_notification.turn"}}},
		{name: "fresh launch of a known task", stream: textStream, edits: []edit{set(12, "continuation", "fresh")}, want: []at{{12, "task_started.continuation"}}},
		{name: "resident continuation of an unknown task", stream: textStream, edits: []edit{
			set(12, "task_id", "t2"), set(14, "task_id", "t2"), set(15, "task_id", "t2"),
		}, want: []at{{12, "task_started.continuation"}}},
		{name: "new turn before the notification", stream: textStream, edits: []edit{drop(9)}, want: []at{{11, "task.overlap"}}},
		{name: "background turn never settles", stream: textStream, edits: []edit{drop(15)}, want: []at{{12, "task.unsettled"}}},
		{name: "foreground turn needs no notification", stream: textStream, edits: []edit{set(12, "is_backgrounded", false), drop(15)}},

		// task_progress.
		{name: "task_progress without usage", stream: textStream, edits: []edit{del(7, "usage")}, want: []at{{7, "task_progress.usage"}}},
		{name: "task_progress usage without tool_uses", stream: textStream, edits: []edit{del(7, "usage.tool_uses")}, want: []at{{7, "task_progress.usage.tool_uses"}}},
		{name: "task_progress without description", stream: textStream, edits: []edit{del(7, "description")}, want: []at{{7, "task_progress.description"}}},
		{name: "task_progress without task_id", stream: textStream, edits: []edit{del(7, "task_id")}, want: []at{{7, "task_progress.task_id"}}},
		{name: "task_progress of another turn", stream: textStream, edits: []edit{set(7, "turn", 2)}, want: []at{{7, "task_progress.turn"}}},
		{name: "task_progress after the notification", stream: textStream, edits: []edit{swap(7, 8), swap(8, 9)}, want: []at{{9, "task.order"}}},

		// task_notification.
		{name: "notification status cancelled", stream: textStream, edits: []edit{set(9, "status", "cancelled")}, want: []at{{9, "task_notification.status"}}},
		{name: "notification without output_file", stream: textStream, edits: []edit{del(9, "output_file")}, want: []at{{9, "task_notification.output_file"}}},
		{name: "notification output_file null", stream: textStream, edits: []edit{setRaw(9, "output_file", "null")}, want: []at{{9, "task_notification.output_file"}}},
		{name: "notification without summary", stream: textStream, edits: []edit{del(9, "summary")}, want: []at{{9, "task_notification.summary"}}},
		{name: "notification usage incomplete", stream: textStream, edits: []edit{del(9, "usage.duration_ms")}, want: []at{{9, "task_notification.usage.duration_ms"}}},
		{name: "notification twice", stream: textStream, edits: []edit{copyLine(9, 10)}, want: []at{{10, "task.duplicate"}}},
		{name: "notification of an unknown task", stream: textStream, edits: []edit{set(9, "task_id", "t9")}, want: []at{{9, "task.unknown"}, {12, "task.overlap"}}},

		// result.
		{name: "result without subtype", stream: textStream, edits: []edit{del(17, "subtype")}, want: []at{{17, "envelope.subtype"}}},
		{name: "result unknown subtype", stream: textStream, edits: []edit{set(17, "subtype", "done")}, want: []at{{17, "result.subtype"}}},
		{name: "result without is_error", stream: textStream, edits: []edit{del(17, "is_error")}, want: []at{{17, "result.is_error"}}},
		{name: "error result without errors, is_error false", stream: textStream, edits: []edit{set(17, "subtype", "error_max_turns")}, want: []at{{17, "result.is_error"}, {17, "result.errors"}}},
		{name: "error result errors not strings", stream: textStream, edits: []edit{set(17, "subtype", "error_max_turns"), set(17, "is_error", true), setRaw(17, "errors", `["x",3]`)}, want: []at{{17, "result.errors.#"}}},
		{name: "result without duration_ms", stream: textStream, edits: []edit{del(17, "duration_ms")}, want: []at{{17, "result.duration_ms"}}},
		{name: "result without duration_api_ms", stream: textStream, edits: []edit{del(17, "duration_api_ms")}, want: []at{{17, "result.duration_api_ms"}}},
		{name: "result num_turns negative", stream: textStream, edits: []edit{set(17, "num_turns", -1)}, want: []at{{17, "result.num_turns"}}},
		{name: "result num_turns fractional", stream: textStream, edits: []edit{set(17, "num_turns", 1.5)}, want: []at{{17, "result.num_turns"}}},
		{name: "result without session_id", stream: textStream, edits: []edit{del(17, "session_id")}, want: []at{{17, "envelope.session_id"}}},
		{name: "result without usage", stream: textStream, edits: []edit{del(17, "usage")}, want: []at{{17, "result.usage"}}},
		{name: "result without total_cost_usd", stream: textStream, edits: []edit{del(17, "total_cost_usd")}, want: []at{{17, "result.total_cost_usd"}}},
		{name: "result permission_denials null", stream: textStream, edits: []edit{setRaw(17, "permission_denials", "null")}, want: []at{{17, "result.permission_denials"}}},
		{name: "result modelUsage a list", stream: textStream, edits: []edit{setRaw(17, "modelUsage", "[]")}, want: []at{{17, "result.modelUsage"}}},
		{name: "success without result text", stream: textStream, edits: []edit{del(17, "result")}, want: []at{{17, "result.result"}}},

		// Multi-turn runs.
		{name: "multi: last line not a result", stream: multiStream, multi: true, edits: []edit{drop(8)}, want: []at{{7, "result.last"}}},
		{name: "multi: no init after the control response", stream: multiStream, multi: true, edits: []edit{drop(2)}, want: []at{{2, "init.first"}}},
		{name: "multi: control_response without request_id", stream: multiStream, multi: true, edits: []edit{del(1, "response.request_id")}, want: []at{{1, "control_response.response.request_id"}}},
		{name: "multi: control error without error", stream: multiStream, multi: true, edits: []edit{del(5, "response.error")}, want: []at{{5, "control_response.response.error"}}},
		{name: "multi: control subtype", stream: multiStream, multi: true, edits: []edit{set(5, "response.subtype", "ok")}, want: []at{{5, "control_response.response.subtype"}}},
		{name: "multi: control_response without uuid", stream: multiStream, multi: true, edits: []edit{del(1, "uuid")}, want: []at{{1, "envelope.uuid"}}},
		{name: "multi: error result without errors", stream: multiStream, multi: true, edits: []edit{del(8, "errors")}, want: []at{{8, "result.errors"}}},
		{name: "multi stream as a text run", stream: multiStream, want: []at{{1, "init.first"}, {1, "envelope.type"}, {5, "envelope.type"}, {8, "result.single"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			lines := readLines(t, tt.stream)
			for _, e := range tt.edits {
				lines = e(t, lines)
			}
			stream := strings.Join(lines, "\n")
			if !tt.noNewline {
				stream += "\n"
			}
			got := violationsOf(t, ValidateLines(strings.NewReader(stream), tt.multi))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("violations (-want +got):\n%s\nstream:\n%s", diff, stream)
			}
			if !tt.multi {
				if diff := cmp.Diff(got, violationsOf(t, Validate(strings.NewReader(stream)))); diff != "" {
					t.Errorf("Validate differs from ValidateLines(false):\n%s", diff)
				}
			}
		})
	}
}

// The stream streamjson's constructors write (its golden file) keeps the contract.
func TestConstructedStreamIsValid(t *testing.T) {
	t.Parallel()
	f, err := os.Open(filepath.Join("..", "testdata", "encoded.golden.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := Validate(f); err != nil {
		t.Fatalf("Validate: %v", err)
	}
}

func TestValidationErrorMessage(t *testing.T) {
	t.Parallel()
	lines := readLines(t, textStream)
	lines[3] = strings.Replace(lines[3], `"content":[`, `"content":{"x":[`, 1)
	lines[3] = strings.Replace(lines[3], `}]},"parent`, `}]}},"parent`, 1)
	err := Validate(strings.NewReader(strings.Join(lines, "\n") + "\n"))
	if !errors.Is(err, ErrInvalidStream) {
		t.Fatalf("Validate = %v, want ErrInvalidStream", err)
	}
	const want = `line 4: user.message.content: message.content: want a string or a list, got {"x":[`
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not contain %q", err, want)
	}

	many := strings.Repeat("{}\n", 12)
	msg := Validate(strings.NewReader(many)).Error()
	if !strings.Contains(msg, "… and ") || strings.Count(msg, "\n  line ") != maxShownViolations {
		t.Errorf("error for a long list should show %d violations then a count:\n%s", maxShownViolations, msg)
	}
}

func TestValidateReadError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	err := Validate(iotest.ErrReader(boom))
	var ve *ValidationError
	if !errors.Is(err, boom) || errors.As(err, &ve) {
		t.Fatalf("Validate = %v, want the read error wrapped", err)
	}
}
