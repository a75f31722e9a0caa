package headless

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stoke-cli/stoke/agents/mcp"
)

// MCPOptions.CallTimeout (MCP_TOOL_TIMEOUT) bounds a tool call: a tool that does not
// answer within it gives the model an error result saying so, and the run goes on.
func TestRunMCPCallTimeout(t *testing.T) {
	t.Parallel()
	s := sdk.NewServer(&sdk.Implementation{Name: "headless-timeout"}, nil)
	type echoIn struct {
		Message string `json:"message"`
	}
	release := make(chan struct{})
	defer close(release)
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Never answers in time."},
		func(ctx context.Context, _ *sdk.CallToolRequest, _ echoIn) (*sdk.CallToolResult, any, error) {
			select {
			case <-ctx.Done():
			case <-release:
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "too late"}}}, nil, nil
		})
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	defer srv.Close()

	var out bytes.Buffer
	o := opts(t, model(t, mcpCallScenario), &out)
	o.Prompt, o.ApprovalMode = "go", "yolo"
	o.MCP = MCPOptions{Servers: map[string]mcp.ServerConfig{"t": {Type: mcp.TransportHTTP, URL: srv.URL}}, CallTimeout: 200 * time.Millisecond}
	if err := Run(t.Context(), o); err != nil {
		t.Fatalf("Run: %v", err)
	}
	ls := lines(t, out.String())
	want := `model saw: MCP server "t": echo did not answer within 200ms; the call was cancelled`
	if got := ls[len(ls)-1].Get("result").String(); got != want {
		t.Errorf("result = %q, want %q", got, want)
	}
}
