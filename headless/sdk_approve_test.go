package headless

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/stoke-cli/stoke/agents/tools"
	"github.com/stoke-cli/stoke/headless/sdkhost"
)

// approverSession is a session with its control plane attached and no run loop: the test
// calls its approver directly and plays the host on the pipes.
type approverSession struct {
	s     *Parts
	host  *fakeHost
	stdin *io.PipeWriter
}

// newApproverSession builds a session on o (stream-json both ways) whose first stdin line is
// initialize, as the SDK sends it.
func newApproverSession(t *testing.T, o Options) *approverSession {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	o.Stdin, o.Stdout = inR, outW
	o.InputFormat, o.OutputFormat = InputStreamJSON, OutputStreamJSON
	o = withDefaults(o)
	h := &fakeHost{t: t, stdin: inW, lines: make(chan gjson.Result, 1024), done: make(chan error, 1)}
	go h.readLines(outR)
	go func() {
		_, _ = io.WriteString(inW, `{"type":"control_request","request_id":"i","request":{"subtype":"initialize"}}`+"\n")
	}()
	cp, err := sdkhost.Start(t.Context(), o.Stdin, o.sdkMode(), o.SDK.Dialect, o.Logger)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Assemble(t.Context(), o, cp)
	if err != nil {
		t.Fatal(err)
	}
	h.next("the initialize reply", isReply("i"))
	t.Cleanup(func() {
		inW.Close()
		s.Close()
		s.host.Close()
		cp.Close()
		outW.Close()
		for range h.lines {
		}
	})
	return &approverSession{s: s, host: h, stdin: inW}
}

// verdict is what Approve returned.
type verdict struct {
	allow   bool
	updated string
	reason  string
}

// approve runs Approve in the background; the verdict arrives on the channel.
func (a *approverSession) approve(ctx context.Context, call tools.Call, kind tools.Kind) <-chan verdict {
	approver := a.s.host.Approver(a.s.ws.rules, "")
	ch := make(chan verdict, 1)
	go func() {
		ok, upd, why := approver.Approve(ctx, call, kind)
		ch <- verdict{ok, string(upd), why}
	}()
	return ch
}

func writeCall(path string) tools.Call {
	in, _ := json.Marshal(map[string]string{"file_path": path, "content": "x"})
	return tools.Call{ID: "call_1", Name: tools.NameWriteFile, Input: in}
}

func shellCall(cmd string) tools.Call {
	in, _ := json.Marshal(map[string]string{"command": cmd})
	return tools.Call{ID: "call_2", Name: tools.NameShell, Input: in}
}

func TestSDKApproverWithoutAsking(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		mode      tools.Mode
		sdk       sdkhost.Options
		call      tools.Call
		kind      tools.Kind
		allow     bool
		reasonHas string
	}{
		{name: "default refuses an edit, nobody to ask", mode: "default", call: writeCall("a.txt"), kind: tools.KindEdit, reasonHas: "nobody can approve"},
		{name: "auto-edit allows an edit", mode: "auto-edit", call: writeCall("a.txt"), kind: tools.KindEdit, allow: true},
		{name: "auto-edit refuses a command", mode: "auto-edit", call: shellCall("ls"), kind: tools.KindExec, reasonHas: "acceptEdits"},
		{name: "yolo allows a command", mode: "yolo", call: shellCall("ls"), kind: tools.KindExec, allow: true},
		{name: "plan refuses an edit even with a rule", mode: "plan", sdk: sdkhost.Options{AllowedTools: []string{"Write"}}, call: writeCall("a.txt"), kind: tools.KindEdit, reasonHas: "plan"},
		{name: "an allow rule for the tool", mode: "default", sdk: sdkhost.Options{AllowedTools: []string{"Write"}}, call: writeCall("a.txt"), kind: tools.KindEdit, allow: true},
		{name: "an allow rule for a command prefix", mode: "default", sdk: sdkhost.Options{AllowedTools: []string{"Bash(git status:*)"}}, call: shellCall("git status -s"), kind: tools.KindExec, allow: true},
		{name: "a prefix rule does not cover another command", mode: "default", sdk: sdkhost.Options{AllowedTools: []string{"Bash(git status:*)"}}, call: shellCall("git push"), kind: tools.KindExec, reasonHas: "nobody"},
		{name: "an exact command rule", mode: "default", sdk: sdkhost.Options{AllowedTools: []string{"Bash(make test)"}}, call: shellCall("make test"), kind: tools.KindExec, allow: true},
		{name: "a path rule", mode: "default", sdk: sdkhost.Options{AllowedTools: []string{"Edit(docs/**)"}}, call: tools.Call{Name: tools.NameEdit, Input: json.RawMessage(`{"file_path":"docs/a.md"}`)}, kind: tools.KindEdit, allow: true},
		{name: "a disallow rule wins over yolo", mode: "yolo", sdk: sdkhost.Options{DisallowedTools: []string{"Bash(rm:*)"}}, call: shellCall("rm -rf x"), kind: tools.KindExec, reasonHas: "disallowedTools"},
		{name: "dontAsk does not ask the host", mode: "default", sdk: sdkhost.Options{PermissionPromptStdio: true, NoPrompt: true}, call: writeCall("a.txt"), kind: tools.KindEdit, reasonHas: "nobody"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := sdkOpts(t, model(t, sdkEcho))
			o.ApprovalMode, o.SDK = tt.mode, tt.sdk
			a := newApproverSession(t, o)
			if mode, _ := a.s.ws.approvalMode(); mode != tools.ModeDefault {
				t.Errorf("an SDK session builds its tools in mode %s, want default (the approver applies the live mode)", mode)
			}
			v := <-a.approve(t.Context(), tt.call, tt.kind)
			if v.allow != tt.allow || !strings.Contains(v.reason, tt.reasonHas) {
				t.Errorf("Approve = %+v, want allow %v and a reason with %q", v, tt.allow, tt.reasonHas)
			}
		})
	}
}

func TestSDKApproverAsksTheHost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		answer func(id string) string // the host's stdin line, given the request id
		want   verdict
	}{
		{"deny with a message", func(id string) string {
			return `{"type":"control_response","response":{"subtype":"success","request_id":"` + id + `","response":{"behavior":"deny","message":"not today","toolUseID":"call_1"}}}`
		}, verdict{reason: "not today"}},
		{"allow with updated input", func(id string) string {
			return `{"type":"control_response","response":{"subtype":"success","request_id":"` + id + `","response":{"behavior":"allow","updatedInput":{"file_path":"b.txt","content":"y"}}}}`
		}, verdict{allow: true, updated: `{"file_path":"b.txt","content":"y"}`}},
		{"allow as is", func(id string) string {
			return `{"type":"control_response","response":{"subtype":"success","request_id":"` + id + `","response":{"behavior":"allow"}}}`
		}, verdict{allow: true}},
		{"an error reply denies", func(id string) string {
			return `{"type":"control_response","response":{"subtype":"error","request_id":"` + id + `","error":"canUseTool callback is not provided."}}`
		}, verdict{reason: "canUseTool callback is not provided."}},
		{"the host cancels the request", func(id string) string {
			return `{"type":"control_cancel_request","request_id":"` + id + `"}`
		}, verdict{reason: "the host cancelled the request"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := sdkOpts(t, model(t, sdkEcho))
			o.SDK.PermissionPromptStdio = true
			a := newApproverSession(t, o)
			got := a.approve(t.Context(), writeCall("notes/a.txt"), tools.KindEdit)
			req := a.host.next("can_use_tool", isRequest("can_use_tool"))
			for path, want := range map[string]string{
				"request.tool_name": "Write", "request.tool_use_id": "call_1", "request.input.file_path": "notes/a.txt",
				"request.blocked_path": "notes/a.txt", "request.stoke_tool_name": "write_file",
			} {
				if v := req.Get(path).Str; v != want {
					t.Errorf("%s = %q, want %q (%s)", path, v, want, req.Raw)
				}
			}
			a.host.send(tt.answer(req.Get("request_id").Str))
			v := <-got
			if v.allow != tt.want.allow || v.updated != tt.want.updated || !strings.Contains(v.reason, tt.want.reason) {
				t.Errorf("Approve = %+v, want %+v", v, tt.want)
			}
		})
	}
}

func TestSDKApproverCancelAndEOF(t *testing.T) {
	t.Parallel()
	t.Run("the call's context ends: stoke withdraws its request", func(t *testing.T) {
		t.Parallel()
		o := sdkOpts(t, model(t, sdkEcho))
		o.SDK.PermissionPromptStdio = true
		a := newApproverSession(t, o)
		ctx, cancel := context.WithCancel(t.Context())
		got := a.approve(ctx, writeCall("a.txt"), tools.KindEdit)
		req := a.host.next("can_use_tool", isRequest("can_use_tool"))
		cancel()
		c := a.host.next("the cancel", isType("control_cancel_request"))
		if c.Get("request_id").Str != req.Get("request_id").Str {
			t.Errorf("cancel %s for request %s", c.Raw, req.Raw)
		}
		if v := <-got; v.allow {
			t.Errorf("a withdrawn request allowed the call")
		}
	})
	t.Run("stdin closed: nobody can answer, the call is refused at once", func(t *testing.T) {
		t.Parallel()
		o := sdkOpts(t, model(t, sdkEcho))
		o.SDK.PermissionPromptStdio = true
		a := newApproverSession(t, o)
		a.stdin.Close()
		<-a.s.cp.Done() // the reader has seen EOF
		v := <-a.approve(t.Context(), writeCall("a.txt"), tools.KindEdit)
		if v.allow || !strings.Contains(v.reason, "closed stdin") {
			t.Errorf("Approve after EOF = %+v", v)
		}
	})
	t.Run("set_permission_mode changes what needs asking", func(t *testing.T) {
		t.Parallel()
		o := sdkOpts(t, model(t, sdkEcho))
		a := newApproverSession(t, o)
		a.host.request("m", `{"subtype":"set_permission_mode","mode":"bypassPermissions"}`)
		a.host.next("the reply", isReply("m"))
		if v := <-a.approve(t.Context(), shellCall("ls"), tools.KindExec); !v.allow {
			t.Errorf("after bypassPermissions: %+v", v)
		}
		a.host.request("p", `{"subtype":"set_permission_mode","mode":"plan"}`)
		a.host.next("the reply", isReply("p"))
		if v := <-a.approve(t.Context(), writeCall("a.txt"), tools.KindEdit); v.allow || !strings.Contains(v.reason, "plan") {
			t.Errorf("after plan: %+v", v)
		}
	})
}
