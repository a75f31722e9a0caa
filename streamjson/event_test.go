package streamjson

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/stoke-cli/stoke/agents/llm"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// encodeLine encodes ev alone and returns the parsed line.
func encodeLine(t *testing.T, ev Event) gjson.Result {
	t.Helper()
	var buf bytes.Buffer
	if err := NewEncoder(&buf, "s1", counter()).Encode(ev); err != nil {
		t.Fatalf("Encode: %v", err)
	}
	if !gjson.Valid(buf.String()) {
		t.Fatalf("not JSON: %s", buf.String())
	}
	return gjson.Parse(buf.String())
}

func ptr[T any](v T) *T { return &v }

func TestEventJSONShapes(t *testing.T) {
	t.Parallel()
	const absent = "<absent>"
	sub := NewAssistant("m2", "model-b", []llm.Block{llm.TextBlock("done")}, llm.StopEndTurn, llm.Usage{})
	sub.ParentToolUseID = ptr("call_A")
	sub.AgentKeys = AgentKeys{TaskID: "t1", AgentID: "t1", SubagentType: "general-purpose", TaskDescription: "d"}
	notifUser := NewUser([]llm.Block{llm.TextBlock("<task-notification/>")})
	notifUser.Origin = &Origin{Kind: "task-notification"}
	failed := NewResult(ResultErrorDuringExecution)
	failed.Errors = []string{"model backend unreachable"}
	notif := NewTaskNotification()
	notif.Status = StatusStopped

	tests := []struct {
		name string
		ev   Event
		want map[string]string // gjson path -> raw JSON, or absent
	}{
		{
			name: "assistant of the parent",
			ev: NewAssistant("m1", "model-a", []llm.Block{llm.TextBlock("hi"), {Type: llm.BlockToolUse, ID: "c1", Name: "task"}},
				llm.StopToolUse, llm.Usage{InputTokens: 3, OutputTokens: 4}),
			want: map[string]string{
				"type":                  `"assistant"`,
				"subtype":               absent,
				"message.id":            `"m1"`,
				"message.type":          `"message"`,
				"message.role":          `"assistant"`,
				"message.model":         `"model-a"`,
				"message.content":       `[{"type":"text","text":"hi","citations":null},{"type":"tool_use","id":"c1","name":"task","input":{}}]`,
				"message.stop_reason":   `"tool_use"`,
				"message.stop_sequence": `null`,
				"message.stop_details":  `null`,
				"message.container":     `null`,
				"message.usage":         `{"input_tokens":3,"output_tokens":4,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_1h_input_tokens":0,"ephemeral_5m_input_tokens":0},"server_tool_use":{"web_fetch_requests":0,"web_search_requests":0},"service_tier":"standard","output_tokens_details":{"thinking_tokens":0},"iterations":[],"inference_geo":"","speed":"standard","fallback_credit":null}`,
				"parent_tool_use_id":    `null`,
				"task_id":               absent,
				"agent_id":              absent,
				"uuid":                  `"id-1"`,
				"session_id":            `"s1"`,
			},
		},
		{
			name: "assistant of a subagent",
			ev:   sub,
			want: map[string]string{
				"parent_tool_use_id": `"call_A"`,
				"task_id":            `"t1"`,
				"agent_id":           `"t1"`,
				"subagent_type":      `"general-purpose"`,
				"task_description":   `"d"`,
				"message.content":    `[{"type":"text","text":"done","citations":null}]`,
			},
		},
		{
			name: "assistant with empty content keeps a list",
			ev:   NewAssistant("m", "model", nil, llm.StopEndTurn, llm.Usage{}),
			want: map[string]string{"message.content": `[]`},
		},
		{
			name: "tool_use with broken input is kept as a string",
			ev:   NewAssistant("m", "model", []llm.Block{{Type: llm.BlockToolUse, ID: "c", Name: "shell", Input: []byte(`{"command":`)}}, llm.StopToolUse, llm.Usage{}),
			want: map[string]string{"message.content.0.input": `"{\"command\":"`},
		},
		{
			name: "user tool result",
			ev:   NewUser([]llm.Block{{Type: llm.BlockToolResult, ToolUseID: "c1", Content: "ok"}}),
			want: map[string]string{
				"type":               `"user"`,
				"message":            `{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"ok","is_error":false}]}`,
				"parent_tool_use_id": `null`,
				"origin":             absent,
			},
		},
		{
			name: "user notification turn",
			ev:   notifUser,
			want: map[string]string{"origin": `{"kind":"task-notification"}`, "message.content": `[{"type":"text","text":"<task-notification/>","citations":null}]`},
		},
		{
			name: "init",
			ev:   NewInit(),
			want: map[string]string{
				"type": `"system"`, "subtype": `"init"`, "permissionMode": `""`, "permission_mode": absent,
				"tools": `[]`, "agents": `[]`, "mcp_servers": `[]`, "apiKeySource": `"none"`,
				"slash_commands": `[]`, "output_style": `"default"`, "skills": `[]`, "plugins": `[]`,
				"cwd": `""`, "model": `""`, "stoke_version": `""`,
			},
		},
		{
			name: "init built by hand has lists, not null",
			ev:   &Init{Envelope: Envelope{Type: "system", Subtype: "init"}, PermissionMode: "plan"},
			want: map[string]string{
				"permissionMode": `"plan"`, "tools": `[]`, "agents": `[]`, "mcp_servers": `[]`,
				"slash_commands": `[]`, "skills": `[]`, "plugins": `[]`,
			},
		},
		{
			name: "result success",
			ev:   NewResult(ResultSuccess),
			want: map[string]string{
				"type": `"result"`, "subtype": `"success"`, "is_error": `false`, "duration_ms": `0`,
				"duration_api_ms": `0`, "num_turns": `0`, "result": `""`, "stop_reason": `null`,
				"total_cost_usd": `0`, "modelUsage": `{}`, "permission_denials": `[]`, "errors": absent,
				"usage": `{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_1h_input_tokens":0,"ephemeral_5m_input_tokens":0},"server_tool_use":{"web_fetch_requests":0,"web_search_requests":0},"service_tier":"standard","output_tokens_details":{"thinking_tokens":0},"iterations":[],"inference_geo":"","speed":"standard","fallback_credit":null}`,
			},
		},
		{
			name: "result error without errors still has the key",
			ev:   NewResult(ResultErrorMaxTurns),
			want: map[string]string{"subtype": `"error_max_turns"`, "is_error": `true`, "errors": `[]`},
		},
		{
			name: "result error with errors",
			ev:   failed,
			want: map[string]string{"is_error": `true`, "errors": `["model backend unreachable"]`},
		},
		{
			name: "result built by hand",
			ev:   &Result{Envelope: Envelope{Type: "result", Subtype: ResultSuccess}},
			want: map[string]string{"modelUsage": `{}`, "permission_denials": `[]`, "errors": absent},
		},
		{
			name: "task_started",
			ev:   NewTaskStarted(),
			want: map[string]string{
				"subtype": `"task_started"`, "task_id": `""`, "run_id": `""`, "tool_use_id": `""`, "description": `""`,
				"task_type": `"local_agent"`, "is_backgrounded": `false`, "spawn_depth": `1`, "turn": `0`,
				"continuation": `""`, "prompt": `""`, "subagent_type": `""`,
			},
		},
		{
			name: "task_progress",
			ev:   NewTaskProgress(),
			want: map[string]string{
				"subtype": `"task_progress"`, "task_id": `""`, "description": `""`, "last_tool_name": `""`,
				"usage": `{"total_tokens":0,"tool_uses":0,"duration_ms":0}`,
			},
		},
		{
			name: "task_notification",
			ev:   notif,
			want: map[string]string{
				"subtype": `"task_notification"`, "status": `"stopped"`, "output_file": `""`, "summary": `""`,
				"reason": absent, "interrupted": `false`, "usage": `{"total_tokens":0,"tool_uses":0,"duration_ms":0}`,
			},
		},
		{
			name: "control success",
			ev:   NewControlSuccess("r1", nil),
			want: map[string]string{"type": `"control_response"`, "response": `{"subtype":"success","request_id":"r1","response":{}}`},
		},
		{
			name: "control error",
			ev:   NewControlError("r1", "Unsupported control request subtype: x", ErrorCodeUnsupported),
			want: map[string]string{
				"response": `{"subtype":"error","request_id":"r1","error":"Unsupported control request subtype: x","error_code":"unsupported_request"}`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			line := encodeLine(t, tt.ev)
			for path, want := range tt.want {
				got := line.Get(path)
				switch {
				case want == absent && got.Exists():
					t.Errorf("%s = %s, want the key absent", path, got.Raw)
				case want != absent && got.Raw != want:
					t.Errorf("%s = %s, want %s", path, orAbsent(got), want)
				}
			}
		})
	}
}

func orAbsent(r gjson.Result) string {
	if !r.Exists() {
		return "<absent>"
	}
	return r.Raw
}

// constructedStream writes, with the package's constructors, the run of
// streamjsontest/testdata/valid_text.jsonl: a background agent launched, then continued
// once. streamjsontest checks the golden file against the output contract.
func constructedStream(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := NewEncoder(&buf, "s1", counter())
	emit := func(ev Event) {
		t.Helper()
		if err := enc.Encode(ev); err != nil {
			t.Fatal(err)
		}
	}
	subagent := func(ev *Assistant) *Assistant {
		ev.ParentToolUseID = ptr("call_A")
		ev.AgentKeys = AgentKeys{TaskID: "t1", AgentID: "t1", SubagentType: "general-purpose", TaskDescription: "Keep a nonce"}
		return ev
	}
	started := func(turn int, call string, cont Continuation, prompt string) *TaskStarted {
		ev := NewTaskStarted()
		ev.TaskID, ev.ToolUseID, ev.Description, ev.SubagentType = "t1", call, "Keep a nonce", "general-purpose"
		ev.Prompt, ev.IsBackgrounded, ev.Turn, ev.Continuation = prompt, true, turn, cont
		return ev
	}
	notified := func(turn int, call, summary string) *TaskNotification {
		ev := NewTaskNotification()
		ev.TaskID, ev.ToolUseID, ev.Status, ev.Turn, ev.Summary = "t1", call, StatusCompleted, turn, summary
		ev.OutputFile = "/home/ci/.stoke/projects/k/s1/agents/t1.jsonl"
		return ev
	}
	toolUse := func(id, name, input string) llm.Block {
		return llm.Block{Type: llm.BlockToolUse, ID: id, Name: name, Input: []byte(input)}
	}
	toolResult := func(id, content string) []llm.Block {
		return []llm.Block{{Type: llm.BlockToolResult, ToolUseID: id, Content: content}}
	}
	u := llm.Usage{InputTokens: 10, OutputTokens: 2}

	ini := NewInit()
	ini.CWD, ini.Model, ini.PermissionMode = "/ci/repo", "scripted-1", "default"
	ini.Tools, ini.Agents = []string{"task", "send_message", "task_stop", "list_agents", "read_file"}, []string{"general-purpose"}
	emit(ini)
	emit(NewAssistant("m1", "scripted-1", []llm.Block{toolUse("call_A", "task", `{"description":"Keep a nonce","run_in_background":true}`)}, llm.StopToolUse, u))
	emit(started(1, "call_A", ContinuationFresh, "Remember NONCE-7F3A9"))
	emit(NewUser(toolResult("call_A", "task_id: t1")))
	emit(subagent(NewAssistant("m2", "scripted-1", []llm.Block{toolUse("call_S", "read_file", `{"file_path":"go.mod"}`)}, llm.StopToolUse, u)))
	res := NewUser(toolResult("call_S", "module example.com/x"))
	res.ParentToolUseID, res.AgentKeys = ptr("call_A"), AgentKeys{TaskID: "t1", AgentID: "t1"}
	emit(res)
	progress := NewTaskProgress()
	progress.TaskID, progress.ToolUseID, progress.Description, progress.Turn, progress.LastToolName = "t1", "call_A", "Keep a nonce", 1, "read_file"
	progress.Usage = TaskUsage{TotalTokens: 12, ToolUses: 1, DurationMS: 3}
	emit(progress)
	emit(subagent(NewAssistant("m3", "scripted-1", []llm.Block{llm.TextBlock("stored")}, llm.StopEndTurn, u)))
	emit(notified(1, "call_A", "stored"))
	inject := NewUser([]llm.Block{llm.TextBlock("<task-notification><task-id>t1</task-id></task-notification>")})
	inject.Origin = &Origin{Kind: "task-notification"}
	emit(inject)
	emit(NewAssistant("m4", "scripted-1", []llm.Block{toolUse("call_B", "send_message", `{"task_id":"t1","message":"What was the nonce?"}`)}, llm.StopToolUse, u))
	emit(started(2, "call_B", ContinuationResident, "What was the nonce?"))
	emit(NewUser(toolResult("call_B", "task_id: t1\ncontinued")))
	emit(subagent(NewAssistant("m5", "scripted-1", []llm.Block{llm.TextBlock("NONCE-7F3A9")}, llm.StopEndTurn, u)))
	emit(notified(2, "call_B", "NONCE-7F3A9"))
	emit(NewAssistant("m6", "scripted-1", []llm.Block{llm.TextBlock("The subagent answered NONCE-7F3A9")}, llm.StopEndTurn, u))
	result := NewResult(ResultSuccess)
	result.NumTurns, result.Result, result.DurationMS = 3, "The subagent answered NONCE-7F3A9", 1480
	emit(result)
	return buf.Bytes()
}

func TestConstructedStreamIsValidAndStable(t *testing.T) {
	t.Parallel()
	got := constructedStream(t)
	golden := filepath.Join("testdata", "encoded.golden.jsonl")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("encoded stream differs from %s (-want +got; go test -update rewrites it):\n%s", golden, diff)
	}
}
