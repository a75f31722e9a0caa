package mcp

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// stopGrace is how long a stdio server has to exit after its stdin is closed, and then
// after SIGTERM, before its process group is killed.
const stopGrace = 2 * time.Second

// stderrTail is how much of a stdio server's stderr is kept for the message of a failed
// start.
const stderrTail = 2048

// conn is an opened transport and what to do to end it.
type conn struct {
	t      sdk.Transport
	stop   func()
	stderr func() string // a stdio server's last stderr output; nil for HTTP
}

// transport opens the transport of server name, configured as c: a child process for
// stdio, an HTTP client for http and sse, the SDK host's for sdk.
func (m *Manager) transport(name string, c ServerConfig) (conn, error) {
	switch c.Transport() {
	case TransportSDK:
		if m.opts.SDK == nil {
			return conn{}, errors.New("an sdk server needs an SDK host (stream-json input and output)")
		}
		t, err := m.opts.SDK(name)
		if err != nil {
			return conn{}, err
		}
		return conn{t: t}, nil
	case TransportStdio:
		p, err := startProcess(c, m.opts.Env, m.opts.Dir)
		if err != nil {
			return conn{}, err
		}
		return conn{t: &sdk.IOTransport{Reader: p.stdout, Writer: p.stdin}, stop: p.stop, stderr: p.tail.String}, nil
	case TransportHTTP, TransportSSE:
		base := http.DefaultTransport.(*http.Transport).Clone()
		hc := &http.Client{Transport: headerTransport{base: base, headers: c.Headers}}
		var t sdk.Transport = &sdk.SSEClientTransport{Endpoint: c.URL, HTTPClient: hc}
		if c.Transport() == TransportHTTP {
			// stoke sends requests and reads their answers; it takes no server-initiated
			// messages, so it opens no standalone stream.
			t = &sdk.StreamableClientTransport{Endpoint: c.URL, HTTPClient: hc, DisableStandaloneSSE: true}
		}
		return conn{t: t, stop: base.CloseIdleConnections}, nil
	}
	return conn{}, fmt.Errorf("type %q is not supported", c.Type)
}

// headerTransport adds the configured headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range t.headers {
			r.Header.Set(k, v)
		}
	}
	return t.base.RoundTrip(r)
}

// process is a stdio server: a child process in a process group of its own, talking
// JSON-RPC on its stdin and stdout.
type process struct {
	cmd        *exec.Cmd
	stdin      *os.File // our ends of the pipes
	stdout     *os.File
	stderrR    *os.File
	tail       *tailBuffer
	stderrDone chan struct{} // closed when stderr is drained
	exited     chan struct{} // closed when the process has exited (and been reaped)
	stopOnce   sync.Once
}

// startProcess starts the command of c in dir with env and then c.Env.
func startProcess(c ServerConfig, env []string, dir string) (*process, error) {
	cmd := exec.Command(c.Command, c.Args...)
	cmd.Dir = dir
	cmd.Env = mergeEnv(env, c.Env)
	ownProcessGroup(cmd)
	// Pipes of our own, so that neither Wait nor the exec package's copying goroutines
	// own our ends: the SDK reads stdout until we close it.
	var files []*os.File
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		files = append(files, r, w)
		return
	}
	closeAll := func() {
		for _, f := range files {
			_ = f.Close()
		}
	}
	inR, inW, err1 := pipe()
	outR, outW, err2 := pipe()
	errR, errW, err3 := pipe()
	if err := errors.Join(err1, err2, err3); err != nil {
		closeAll()
		return nil, fmt.Errorf("start %s: %w", c.Command, err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, fmt.Errorf("start %s: %w", c.Command, err)
	}
	_ = inR.Close()
	_ = outW.Close()
	_ = errW.Close()
	p := &process{cmd: cmd, stdin: inW, stdout: outR, stderrR: errR, tail: &tailBuffer{max: stderrTail},
		stderrDone: make(chan struct{}), exited: make(chan struct{})}
	go func() {
		defer close(p.stderrDone)
		_, _ = io.Copy(p.tail, errR)
	}()
	go func() {
		defer close(p.exited)
		_ = cmd.Wait()
	}()
	return p, nil
}

// stop ends the server as the MCP specification asks: its stdin is closed; if it has
// not exited after stopGrace it gets SIGTERM, and after another stopGrace SIGKILL. Then
// whatever is left of its process group (a wrapper's children: npx, uvx, sh -c) is
// killed. It returns when the process is gone and its stderr drained. Idempotent.
func (p *process) stop() {
	p.stopOnce.Do(func() {
		_ = p.stdin.Close()
		if !p.waitExit(stopGrace) {
			_ = signalGroup(p.cmd, syscall.SIGTERM)
			if !p.waitExit(stopGrace) {
				_ = signalGroup(p.cmd, syscall.SIGKILL)
				<-p.exited
			}
		}
		_ = signalGroup(p.cmd, syscall.SIGKILL)
		_ = p.stdout.Close()
		select {
		case <-p.stderrDone:
		case <-time.After(stopGrace):
			// A process that left the group still holds stderr: stop reading it.
			_ = p.stderrR.Close()
			<-p.stderrDone
		}
	})
}

func (p *process) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// mergeEnv returns base with the entries of extra added, replacing same-named ones.
func mergeEnv(base []string, extra map[string]string) []string {
	out := make([]string, 0, len(base)+len(extra))
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if _, ok := extra[name]; !ok {
			out = append(out, kv)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		out = append(out, k+"="+extra[k])
	}
	return out
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
