package mcp

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

// serverModeEnv makes the test binary an MCP server on stdio (see serveStdio) instead of
// running the tests: the stdio tests start it as a real child process.
const serverModeEnv = "STOKE_MCP_TEST_SERVER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(serverModeEnv); mode != "" {
		os.Exit(serveStdio(mode))
	}
	goleak.VerifyTestMain(m)
}

// serveStdio is the test binary as a stdio MCP server. Mode "serve" serves the tools env
// (the process environment, one variable a line) and spawn (starts `sleep 300` writing
// to the FIFO named by its fifo argument, and returns its pid: a grandchild of stoke, in
// the server's process group). Mode "fail" writes the value of $SECRET_TOKEN and a
// message on stderr and exits 3 before any handshake.
func serveStdio(mode string) int {
	if mode == "fail" {
		fmt.Fprintf(os.Stderr, "boom: bad configuration (token %s)\n", os.Getenv("SECRET_TOKEN"))
		return 3
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "stoke-test-stdio"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "env", Description: "the environment"},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return text(strings.Join(os.Environ(), "\n")), nil, nil
		})
	type spawnIn struct {
		FIFO string `json:"fifo"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "spawn", Description: "start a grandchild"},
		func(_ context.Context, _ *sdk.CallToolRequest, in spawnIn) (*sdk.CallToolResult, any, error) {
			f, err := os.OpenFile(in.FIFO, os.O_WRONLY, 0)
			if err != nil {
				return nil, nil, err
			}
			defer f.Close()
			cmd := exec.Command("sleep", "300")
			cmd.Stdout = f
			if err := cmd.Start(); err != nil {
				return nil, nil, err
			}
			return text(fmt.Sprint(cmd.Process.Pid)), nil, nil
		})
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		return 1
	}
	return 0
}

func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}
