package e2e

// Real MCP servers for the mcp_*.txtar scripts: @modelcontextprotocol/server-everything
// and @modelcontextprotocol/server-filesystem, installed from the npm registry into
// e2e/mcp/node_modules at the versions e2e/mcp/package-lock.json pins (`make mcp-deps`,
// which `make test` and `make e2e` run first).
//
// [mcp] is true when they are installed; a script that needs them starts with
//
//	[!mcp] skip 'the MCP servers are not installed: make mcp-deps'
//
// $MCP_BIN is the directory holding their executables (mcp-server-everything,
// mcp-server-filesystem).
//
// mcpserve streamableHttp|sse
//
//	Starts mcp-server-everything with that transport on a free loopback port, waits until
//	it listens, and sets $MCP_URL to its endpoint (http://127.0.0.1:PORT/mcp or /sse). It
//	is stopped at the end of the script.

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/stoke-cli/stoke/agents/sandbox"
)

// mcpBin returns the directory of the installed MCP servers' executables, or "".
func mcpBin() string {
	dir, err := filepath.Abs(filepath.Join("mcp", "node_modules", ".bin"))
	if err != nil {
		return ""
	}
	for _, exe := range []string{"mcp-server-everything", "mcp-server-filesystem"} {
		if _, err := os.Stat(filepath.Join(dir, exe)); err != nil {
			return ""
		}
	}
	if _, err := exec.LookPath("node"); err != nil {
		return ""
	}
	return dir
}

// setupMCP sets $MCP_BIN for a script when the servers are installed.
func setupMCP(env *testscript.Env) {
	if dir := mcpBin(); dir != "" {
		env.Setenv("MCP_BIN", dir)
	}
}

// condition answers the scripts' custom conditions: [mcp].
func condition(cond string) (bool, error) {
	switch cond {
	case "mcp":
		return mcpBin() != "", nil
	case "ptrace":
		return canPtrace(), nil
	case "root":
		return os.Geteuid() == 0, nil
	case "sandbox":
		return sandbox.Probe().Enforced, nil // the kernel enforces stoke's sandbox here
	}
	return false, fmt.Errorf("unknown condition %q", cond)
}

func cmdMCPServe(ts *testscript.TestScript, neg bool, args []string) {
	const usage = "mcpserve streamableHttp|sse"
	if neg || len(args) != 1 || (args[0] != "streamableHttp" && args[0] != "sse") {
		ts.Fatalf("usage: %s", usage)
	}
	bin := ts.Getenv("MCP_BIN")
	if bin == "" {
		ts.Fatalf("mcpserve: the MCP servers are not installed (make mcp-deps)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	ts.Check(l.Close())

	cmd := exec.Command(filepath.Join(bin, "mcp-server-everything"), args[0])
	cmd.Env = []string{"PATH=" + ts.Getenv("PATH"), "HOME=" + ts.Getenv("HOME"), "PORT=" + port}
	cmd.Stdout = io.Discard
	stderr, err := cmd.StderrPipe()
	ts.Check(err)
	ts.Check(cmd.Start())
	ts.Defer(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	// It says "listening on port N" (streamableHttp) or "running on port N" (sse) on
	// stderr once it accepts connections.
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		found := false
		for sc.Scan() {
			if !found && strings.Contains(sc.Text(), "port "+port) {
				found = true
				ready <- true
			}
		}
		if !found {
			ready <- false
		}
	}()
	select {
	case ok := <-ready:
		if !ok {
			ts.Fatalf("mcpserve: mcp-server-everything %s exited before listening", args[0])
		}
	case <-time.After(time.Minute):
		ts.Fatalf("mcpserve: mcp-server-everything %s did not listen on port %s within a minute", args[0], port)
	}
	path := "/mcp"
	if args[0] == "sse" {
		path = "/sse"
	}
	ts.Setenv("MCP_URL", "http://127.0.0.1:"+port+path)
}
