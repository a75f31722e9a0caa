package acp

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/google/uuid"
	"go.uber.org/goleak"

	"github.com/stoke-cli/stoke/agents"
	"github.com/stoke-cli/stoke/agents/llm/scripted"
	"github.com/stoke-cli/stoke/headless"
	"github.com/stoke-cli/stoke/streamjson"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testClient is the client side of a test: it records every session/update by session
// and lets a test wait until the updates of a session satisfy a predicate.
type testClient struct {
	mu      sync.Mutex
	changed chan struct{} // closed and replaced at every update
	updates map[sdk.SessionId][]sdk.SessionUpdate
}

func newTestClient() *testClient {
	return &testClient{changed: make(chan struct{}), updates: map[sdk.SessionId][]sdk.SessionUpdate{}}
}

func (c *testClient) SessionUpdate(_ context.Context, n sdk.SessionNotification) error {
	c.mu.Lock()
	c.updates[n.SessionId] = append(c.updates[n.SessionId], n.Update)
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
	return nil
}

// until waits until pred holds for the updates of id, or t's context ends.
func (c *testClient) until(t *testing.T, id sdk.SessionId, pred func([]sdk.SessionUpdate) bool) {
	t.Helper()
	for {
		c.mu.Lock()
		ok, ch := pred(c.updates[id]), c.changed
		c.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-t.Context().Done():
			t.Fatal("the updates never came")
		}
	}
}

func (c *testClient) of(id sdk.SessionId) []sdk.SessionUpdate {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]sdk.SessionUpdate(nil), c.updates[id]...)
}

func (*testClient) ReadTextFile(context.Context, sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	return sdk.ReadTextFileResponse{}, fmt.Errorf("not offered")
}
func (*testClient) WriteTextFile(context.Context, sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	return sdk.WriteTextFileResponse{}, fmt.Errorf("not offered")
}
func (*testClient) RequestPermission(context.Context, sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeCancelled()}, nil
}
func (*testClient) CreateTerminal(context.Context, sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	return sdk.CreateTerminalResponse{}, fmt.Errorf("not offered")
}
func (*testClient) KillTerminal(context.Context, sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	return sdk.KillTerminalResponse{}, fmt.Errorf("not offered")
}
func (*testClient) TerminalOutput(context.Context, sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	return sdk.TerminalOutputResponse{}, fmt.Errorf("not offered")
}
func (*testClient) ReleaseTerminal(context.Context, sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	return sdk.ReleaseTerminalResponse{}, fmt.Errorf("not offered")
}
func (*testClient) WaitForTerminalExit(context.Context, sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	return sdk.WaitForTerminalExitResponse{}, fmt.Errorf("not offered")
}

// harness is one Serve and the client connected to it.
type harness struct {
	model    *scripted.Model
	client   *testClient
	conn     *sdk.ClientSideConnection
	home     string
	disposed atomic.Int32 // OnDispose calls of every session
	hang     func()       // ends the connection (the client closes stoke's stdin)
	served   chan error   // Serve's error, once it returned
}

// serve starts Serve on the scenario acp-nonce.yaml and connects a client.
func serve(t *testing.T) *harness {
	t.Helper()
	s, err := scripted.Load(filepath.Join("..", "..", "scenarios", "acp-nonce.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	model := scripted.New(s)
	h := &harness{model: model, client: newTestClient(), home: t.TempDir(), served: make(chan error, 1)}
	inR, inW := io.Pipe()   // client → stoke
	outR, outW := io.Pipe() // stoke → client
	cfg := Config{
		In: inR, Out: outW, Version: "test", Home: h.home, Model: model, NewSessionID: uuid.NewString,
		Options: func(cwd string) (headless.Options, error) {
			return headless.Options{Model: model, Home: h.home, CWD: cwd, BackgroundAgents: true, MaxTurns: 20,
				ModelAliases: map[string]string{"fast": "scripted-fast"},
				OnDispose:    func(agents.TaskID) { h.disposed.Add(1) }}, nil
		},
	}
	go func() {
		h.served <- Serve(context.WithoutCancel(t.Context()), cfg)
		outW.Close()
	}()
	h.conn = sdk.NewClientSideConnection(h.client, inW, outR)
	h.conn.SetLogger(slog.New(slog.DiscardHandler))
	h.hang = func() { inW.Close() }
	t.Cleanup(func() {
		h.hang()
		<-h.served
	})
	if _, err := h.conn.Initialize(t.Context(), sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *harness) newSession(t *testing.T, cwd string) sdk.SessionId {
	t.Helper()
	resp, err := h.conn.NewSession(t.Context(), sdk.NewSessionRequest{Cwd: cwd, McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	return resp.SessionId
}

func (h *harness) prompt(t *testing.T, id sdk.SessionId, text string) sdk.StopReason {
	t.Helper()
	resp, err := h.conn.Prompt(t.Context(), sdk.PromptRequest{SessionId: id, Prompt: []sdk.ContentBlock{sdk.TextBlock(text)}})
	if err != nil {
		t.Fatal(err)
	}
	return resp.StopReason
}

// starts counts the parent's calls that start an agent's turn: launches and send_message.
func starts(us []sdk.SessionUpdate) int {
	n := 0
	for _, u := range us {
		if c := u.ToolCall; c != nil && (strings.HasPrefix(c.Title, "Agent: ") || strings.HasPrefix(c.Title, "Message to agent ")) {
			n++
		}
	}
	return n
}

// agentTurns returns the background turns the updates opened, and how many settled.
func agentTurns(us []sdk.SessionUpdate) (opened []string, settled int) {
	done := map[sdk.ToolCallId]bool{}
	for _, u := range us {
		if c := u.ToolCallUpdate; c != nil && c.Status != nil && (*c.Status == sdk.ToolCallStatusCompleted || *c.Status == sdk.ToolCallStatusFailed) {
			done[c.ToolCallId] = true
		}
	}
	for _, u := range us {
		if c := u.ToolCall; c != nil && strings.Contains(string(c.ToolCallId), "-turn-") {
			opened = append(opened, c.Title)
			if done[c.ToolCallId] {
				settled++
			}
		}
	}
	return opened, settled
}

func agentText(us []sdk.SessionUpdate) string {
	var b strings.Builder
	for _, u := range us {
		if c := u.AgentMessageChunk; c != nil && c.Content.Text != nil {
			b.WriteString(c.Content.Text.Text)
		}
	}
	return b.String()
}

// converse prompts first, then "Any news?" once every agent turn the parent started has
// opened and settled, until the agent's text holds want. Every prompt after the first
// must find a notification waiting (the parent takes no turn of its own between prompts).
func (h *harness) converse(t *testing.T, id sdk.SessionId, first, want string) {
	t.Helper()
	from := len(h.client.of(id))
	prompt := first
	for range 6 {
		n := len(h.client.of(id))
		if stop := h.prompt(t, id, prompt); stop != sdk.StopReasonEndTurn {
			t.Fatalf("stop reason %s", stop)
		}
		if got := agentText(h.client.of(id)[n:]); strings.Contains(got, "No news yet.") {
			t.Fatalf("the prompt %q found no notification waiting: %q", prompt, got)
		}
		if strings.Contains(agentText(h.client.of(id)[from:]), want) {
			return
		}
		h.client.until(t, id, func(us []sdk.SessionUpdate) bool {
			opened, settled := agentTurns(us[from:])
			return len(opened) == starts(us[from:]) && settled == len(opened)
		})
		prompt = "Any news?"
	}
	t.Fatalf("no answer holding %q: %q", want, agentText(h.client.of(id)[from:]))
}

const nonce = "NONCE-7F3A9"

func TestCloseDisposesResidentsOnce(t *testing.T) {
	h := serve(t)
	id := h.newSession(t, t.TempDir())
	h.converse(t, id, "Keep "+nonce+" safe with a background agent.", "The agent remembered the nonce: "+nonce)
	if opened, _ := agentTurns(h.client.of(id)); len(opened) != 2 || !strings.HasSuffix(opened[1], string(streamjson.ContinuationResident)) {
		t.Fatalf("agent turns %q, want turn 1 fresh and turn 2 resident", opened)
	}
	if n := h.disposed.Load(); n != 0 {
		t.Fatalf("%d runtimes disposed before session/close, want 0", n)
	}
	if _, err := h.conn.CloseSession(t.Context(), sdk.CloseSessionRequest{SessionId: id}); err != nil {
		t.Fatal(err)
	}
	if n := h.disposed.Load(); n != 1 {
		t.Fatalf("%d runtimes disposed by session/close, want 1", n)
	}
	if _, err := h.conn.Prompt(t.Context(), sdk.PromptRequest{SessionId: id, Prompt: []sdk.ContentBlock{sdk.TextBlock("hello?")}}); err == nil {
		t.Fatal("a closed session took a prompt")
	}
	h.hang()
	if err := <-h.served; err != nil {
		t.Fatal(err)
	}
	h.served <- nil // for the cleanup
	if n := h.disposed.Load(); n != 1 {
		t.Fatalf("%d runtimes disposed in all, want 1: disposal is once", n)
	}
}

func TestConnectionEndDisposesResidents(t *testing.T) {
	h := serve(t)
	ids := []sdk.SessionId{h.newSession(t, t.TempDir()), h.newSession(t, t.TempDir())}
	for _, id := range ids {
		h.converse(t, id, "Keep "+nonce+" safe with a background agent.", "The agent remembered the nonce: "+nonce)
	}
	if n := h.disposed.Load(); n != 0 {
		t.Fatalf("%d runtimes disposed while the connection is up, want 0", n)
	}
	h.hang()
	if err := <-h.served; err != nil {
		t.Fatal(err)
	}
	h.served <- nil
	if n := h.disposed.Load(); n != 2 {
		t.Fatalf("%d runtimes disposed at the end of the connection, want 2 (one per session)", n)
	}
}

func TestLoadElsewhereReleasesResidents(t *testing.T) {
	h := serve(t)
	cwd := t.TempDir()
	id := h.newSession(t, cwd)
	h.converse(t, id, "Keep "+nonce+" safe with a background agent.", "The agent remembered the nonce: "+nonce)
	if _, err := h.conn.LoadSession(t.Context(), sdk.LoadSessionRequest{SessionId: id, Cwd: cwd, McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	if n := h.disposed.Load(); n != 0 {
		t.Fatalf("a load in the session's own directory disposed %d runtimes, want 0", n)
	}
	if _, err := h.conn.LoadSession(t.Context(), sdk.LoadSessionRequest{SessionId: id, Cwd: t.TempDir(), McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	if n := h.disposed.Load(); n != 1 {
		t.Fatalf("a load under another directory disposed %d runtimes, want 1", n)
	}
}

// The model selector: the launch's model and the aliases' targets; a pick is what the
// next requests ask for, through the configuration option or the unstable set_model.
func TestModelSelection(t *testing.T) {
	h := serve(t)
	resp, err := h.conn.NewSession(t.Context(), sdk.NewSessionRequest{Cwd: t.TempDir(), McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	id := resp.SessionId
	if len(resp.ConfigOptions) != 1 || resp.ConfigOptions[0].Select == nil {
		t.Fatalf("config options %+v, want the model selector", resp.ConfigOptions)
	}
	sel := resp.ConfigOptions[0].Select
	if sel.Id != modelConfigID || sel.CurrentValue != "scripted-acp" || len(*sel.Options.Ungrouped) != 2 {
		t.Fatalf("selector %+v: want model, current scripted-acp, 2 options", sel)
	}
	lastModel := func() string {
		reqs := h.model.Requests()
		return reqs[len(reqs)-1].Model
	}
	h.prompt(t, id, "hello")
	if got := lastModel(); got != "scripted-acp" {
		t.Fatalf("request for %q, want the launch's model", got)
	}
	set, err := h.conn.SetSessionConfigOption(t.Context(), sdk.SetSessionConfigOptionRequest{ValueId: &sdk.SetSessionConfigOptionValueId{SessionId: id, ConfigId: modelConfigID, Value: "scripted-fast"}})
	if err != nil {
		t.Fatal(err)
	}
	if cur := set.ConfigOptions[0].Select.CurrentValue; cur != "scripted-fast" {
		t.Fatalf("current %q after the pick", cur)
	}
	h.prompt(t, id, "hello")
	if got := lastModel(); got != "scripted-fast" {
		t.Fatalf("request for %q after the pick, want scripted-fast", got)
	}
	if _, err := h.conn.UnstableSetSessionModel(t.Context(), sdk.UnstableSetSessionModelRequest{SessionId: id, ModelId: "scripted-acp"}); err != nil {
		t.Fatal(err)
	}
	h.prompt(t, id, "hello")
	if got := lastModel(); got != "scripted-acp" {
		t.Fatalf("request for %q after set_model, want scripted-acp", got)
	}
	if _, err := h.conn.SetSessionConfigOption(t.Context(), sdk.SetSessionConfigOptionRequest{ValueId: &sdk.SetSessionConfigOptionValueId{SessionId: id, ConfigId: modelConfigID, Value: "gpt-nothing"}}); err == nil {
		t.Fatal("a model the session does not offer was taken")
	}
}
