package e2e

import (
	"bytes"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stoke-cli/stoke/agents/trace/otlptest"
)

// TestOTLPPrivateCollector runs stoke against an OTLP/HTTP collector behind a private CA
// that wants a client certificate (mutual TLS), with gzip compression, configured by the
// standard variables only: every request arrives gzip-compressed over the verified
// connection and decodes with the official types, and the one variable stoke does not
// act on (OTEL_EXPORTER_OTLP_INSECURE) is named in one warning line.
func TestOTLPPrivateCollector(t *testing.T) {
	t.Parallel()
	ca := otlptest.NewCA(t)
	certFile, keyFile := ca.ClientFiles(t)
	var (
		mu       sync.Mutex
		paths    []string
		spans    int
		problems []string
	)
	col := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		paths = append(paths, r.URL.Path)
		if r.Header.Get("Content-Encoding") != "gzip" || r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
			problems = append(problems, r.URL.Path+": not gzip over mutual TLS")
			return
		}
		body = otlptest.Gunzip(t, body)
		switch r.URL.Path {
		case "/v1/traces":
			spans += len(otlptest.Spans(otlptest.DecodeTraces(t, body, r.Header.Get("Content-Type"))))
		case "/v1/metrics":
			if len(otlptest.DecodeMetrics(t, body, r.Header.Get("Content-Type")).ResourceMetrics) == 0 {
				problems = append(problems, "no metrics")
			}
		}
	}))
	col.TLS = ca.ServerTLS(t, true)
	col.Config.ErrorLog = log.New(io.Discard, "", 0)
	col.StartTLS()
	defer col.Close()

	dir := t.TempDir()
	cmd := exec.Command(filepath.Join(h.binDir, "stoke"+exeSuffix()),
		"-p", "Keep NONCE-7F3A9 safe with a background agent, then ask it for the nonce.",
		"--scenario", filepath.Join(h.scenarios, "nonce-memory.yaml"), "--output-format", "json")
	cmd.Dir = dir
	cmd.Env = append(hostEnvWithout("OTEL_", "STOKE_", "OPENAI_", "ANTHROPIC_"),
		"GOCOVERDIR="+h.coverDir, "HOME="+filepath.Join(dir, "home"), "STOKE_HOME="+filepath.Join(t.TempDir(), "stoke-home"),
		"OTEL_EXPORTER_OTLP_ENDPOINT="+col.URL,
		"OTEL_EXPORTER_OTLP_CERTIFICATE="+ca.CertFile(t),
		"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE="+certFile,
		"OTEL_EXPORTER_OTLP_CLIENT_KEY="+keyFile,
		"OTEL_EXPORTER_OTLP_COMPRESSION=gzip",
		"OTEL_EXPORTER_OTLP_INSECURE=true")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || !strings.Contains(stdout.String(), "NONCE-7F3A9") {
		t.Fatalf("stoke: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	warnings := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if len(warnings) != 1 || !strings.Contains(warnings[0], "level=WARN") || !strings.Contains(warnings[0], "var=OTEL_EXPORTER_OTLP_INSECURE") {
		t.Errorf("stderr %q, want one warning naming OTEL_EXPORTER_OTLP_INSECURE", stderr.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(problems) > 0 {
		t.Errorf("collector: %v", problems)
	}
	if spans == 0 || !strings.Contains(strings.Join(paths, " "), "/v1/metrics") {
		t.Errorf("the collector got %d spans, requests %v: want the run's spans and metrics", spans, paths)
	}
}

// hostEnvWithout is this process's environment without the variables whose names start
// with one of prefixes.
func hostEnvWithout(prefixes ...string) []string {
	var env []string
next:
	for _, kv := range os.Environ() {
		for _, p := range prefixes {
			if strings.HasPrefix(kv, p) {
				continue next
			}
		}
		env = append(env, kv)
	}
	return env
}
