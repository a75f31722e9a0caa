//go:build unix

package mcp

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testServer is the test binary run as a stdio MCP server (main_test.go) in mode.
func testServer(mode string, env map[string]string) ServerConfig {
	// GORACE: a -race binary otherwise sleeps a second at exit.
	e := map[string]string{serverModeEnv: mode, "GORACE": "atexit_sleep_ms=0"}
	for k, v := range env {
		e[k] = v
	}
	return ServerConfig{Command: os.Args[0], Env: e, Source: "test"}
}

func TestStdioServerEnvironment(t *testing.T) {
	m := NewManager(Options{
		Servers: map[string]ServerConfig{"proc": testServer("serve", map[string]string{"EXPLICIT": "from-config", "SHADOWED": "config"})},
		Env:     []string{"PATH=" + os.Getenv("PATH"), "INHERITED=base", "SHADOWED=base"},
		Dir:     t.TempDir(),
	})
	defer m.Close()
	ts := m.Tools(t.Context(), "proc")
	res := run(t, t.Context(), ts, "mcp__proc__env", `{}`)
	if res.IsError {
		t.Fatalf("env: %+v (status %+v)", res, m.Statuses())
	}
	lines := strings.Split(res.Content, "\n")
	has := func(kv string) bool {
		for _, l := range lines {
			if l == kv {
				return true
			}
		}
		return false
	}
	for _, kv := range []string{"INHERITED=base", "EXPLICIT=from-config", "SHADOWED=config"} {
		if !has(kv) {
			t.Errorf("the server's environment lacks %s:\n%s", kv, res.Content)
		}
	}
	if has("SHADOWED=base") {
		t.Errorf("the configured env did not replace the inherited value")
	}
}

func TestStdioShutdownEndsTheProcessGroup(t *testing.T) {
	// The server starts a grandchild (`sleep 300`) whose stdout is a FIFO we read: EOF
	// comes only when every writer is gone, that is when the grandchild is dead. The
	// server exits by itself when its stdin closes; the grandchild dies only if Close
	// ends the whole process group.
	fifo := filepath.Join(t.TempDir(), "grandchild")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	m := NewManager(Options{Servers: map[string]ServerConfig{"proc": testServer("serve", nil)}, Env: os.Environ()})
	ts := m.Tools(t.Context(), "proc")
	res := run(t, t.Context(), ts, "mcp__proc__spawn", `{"fifo":"`+fifo+`"}`)
	if res.IsError {
		m.Close()
		t.Fatalf("spawn: %+v", res)
	}
	if err := r.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	m.Close()
	if _, err := io.ReadAll(r); err != nil {
		t.Fatalf("the grandchild (pid %s) outlived Close: %v", res.Content, err)
	}
}

func TestStdioFailedStartReportsStderrWithoutSecrets(t *testing.T) {
	const secret = "s3cr3t-token-value"
	m := NewManager(Options{
		Servers: map[string]ServerConfig{"broken": testServer("fail", map[string]string{"SECRET_TOKEN": secret}), "missing": {Command: filepath.Join(t.TempDir(), "no-such-server")}},
		Env:     os.Environ(),
	})
	defer m.Close()
	if ts := m.Tools(t.Context(), "broken", "missing"); len(ts) != 0 {
		t.Errorf("tools of failed servers: %v", toolNames(ts))
	}
	broken, missing := statusOf(m, "broken"), statusOf(m, "missing")
	if broken.Status != StatusFailed || !strings.Contains(broken.Error, "boom: bad configuration") {
		t.Errorf("broken = %+v, want failed with its stderr", broken)
	}
	if strings.Contains(broken.Error, secret) || !strings.Contains(broken.Error, "<redacted>") {
		t.Errorf("the configured secret is not cut out of the message: %q", broken.Error)
	}
	if missing.Status != StatusFailed || !strings.Contains(missing.Error, "no-such-server") {
		t.Errorf("missing = %+v, want failed naming the command", missing)
	}
}

func TestStdioServerEnvStaysOutOfResults(t *testing.T) {
	const secret = "s3cr3t-token-value"
	m := NewManager(Options{
		Servers: map[string]ServerConfig{"proc": testServer("serve", map[string]string{"SECRET_TOKEN": secret})},
		Env:     []string{"PATH=" + os.Getenv("PATH"), "INHERITED=base-value"},
		Dir:     t.TempDir(),
	})
	defer m.Close()
	res := run(t, t.Context(), m.Tools(t.Context(), "proc"), "mcp__proc__env", `{}`)
	if res.IsError {
		t.Fatalf("env: %+v (status %+v)", res, m.Statuses())
	}
	if strings.Contains(res.Content, secret) {
		t.Errorf("the server's configured secret is in its tool result:\n%s", res.Content)
	}
	for _, kv := range []string{"SECRET_TOKEN=[REDACTED]", "INHERITED=base-value"} {
		if !strings.Contains(res.Content, kv) {
			t.Errorf("the result lacks %s:\n%s", kv, res.Content)
		}
	}
}
