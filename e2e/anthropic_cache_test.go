package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/stoke-cli/stoke/agents/llm/anthropic/anthropictest"
	"github.com/stoke-cli/stoke/agents/llm/scripted"
)

// TestAnthropicCacheHotAndRevived runs the nonce scenarios against an Anthropic-compatible
// server that simulates the prompt cache. The continued agent's phase-2 request carries
// phase 1's request as its prefix (same bytes once cache markers are set aside) with cache
// markers, and the stream reports the cache read the server answered with — hot in one
// process, and for an agent revived after --resume.
func TestAnthropicCacheHotAndRevived(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(h.binDir, "stoke"+exeSuffix())
	env := slices.Clip(append(os.Environ(), "GOCOVERDIR="+h.coverDir, "ANTHROPIC_API_KEY=sk-ant-e2e"))
	common := func(url string) []string {
		return []string{"--provider", "anthropic", "--base-url", url, "--model", "claude-test", "--output-format", "stream-json"}
	}

	t.Run("hot", func(t *testing.T) {
		t.Parallel()
		m, err := scripted.Open(filepath.Join(h.scenarios, "nonce-memory.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		srv := anthropictest.New(m, anthropictest.WithAPIKey("sk-ant-e2e"))
		defer srv.Close()
		dir := t.TempDir()
		out, err := runStoke(bin, env, dir, t.TempDir(), append([]string{"-p", "Keep NONCE-CAFE1 safe"}, common(srv.URL())...)...)
		if err != nil {
			t.Fatalf("run: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), "The agent remembered the nonce: NONCE-CAFE1") {
			t.Fatalf("nonce not recalled:\n%s", out)
		}
		subs := subagentRequests(srv.Requests())
		if len(subs) != 2 {
			t.Fatalf("subagent requests = %d, want 2", len(subs))
		}
		checkCachedPrefix(t, subs[0], subs[1])
		checkCacheRead(t, out, 2)
	})

	t.Run("revived", func(t *testing.T) {
		t.Parallel()
		m, err := scripted.Open(filepath.Join(h.scenarios, "resume-memory.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		srv := anthropictest.New(m, anthropictest.WithAPIKey("sk-ant-e2e"))
		defer srv.Close()
		dir := t.TempDir()
		home := t.TempDir() // outside the working directory, as stoke requires
		const sid = "a17c0000-0000-4000-8000-000000000001"
		if out, err := runStoke(bin, env, dir, home, append([]string{"-p", "Keep NONCE-CAFE2 safe", "--session-id", sid}, common(srv.URL())...)...); err != nil {
			t.Fatalf("run 1: %v\n%s", err, out)
		}
		out, err := runStoke(bin, env, dir, home, append([]string{"-p", "Ask the agent for the nonce", "--resume", sid}, common(srv.URL())...)...)
		if err != nil {
			t.Fatalf("run 2: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), `"continuation":"revived"`) || !strings.Contains(string(out), "NONCE-CAFE2") {
			t.Fatalf("no revival with the nonce:\n%s", out)
		}
		subs := subagentRequests(srv.Requests())
		if len(subs) != 2 {
			t.Fatalf("subagent requests = %d, want 2", len(subs))
		}
		checkCachedPrefix(t, subs[0], subs[1])
		checkCacheRead(t, out, 1) // run 2's only subagent line: the revived turn
	})
}

func subagentRequests(reqs [][]byte) [][]byte {
	var out [][]byte
	for _, r := range reqs {
		if strings.Contains(gjson.GetBytes(r, "system").Raw, "Agent type: general-purpose") {
			out = append(out, r)
		}
	}
	return out
}

// checkCachedPrefix: next starts with prev's tools, system and messages (cache markers set
// aside), and both carry cache markers.
func checkCachedPrefix(t *testing.T, prev, next []byte) {
	t.Helper()
	for _, r := range [][]byte{prev, next} {
		if !strings.Contains(string(r), `"cache_control":{"type":"ephemeral"}`) {
			t.Errorf("request without cache markers: %s", r)
		}
	}
	strip := func(raw string) string {
		if raw == "" {
			return ""
		}
		var v any
		if err := json.Unmarshal([]byte(raw), &v); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(dropKey(v, "cache_control"))
		return string(b)
	}
	for _, key := range []string{"tools", "system"} {
		if a, b := strip(gjson.GetBytes(prev, key).Raw), strip(gjson.GetBytes(next, key).Raw); a != b {
			t.Errorf("%s differ between the turns:\n%s\n%s", key, a, b)
		}
	}
	pm, nm := gjson.GetBytes(prev, "messages").Array(), gjson.GetBytes(next, "messages").Array()
	if len(nm) <= len(pm) {
		t.Fatalf("phase 2 has %d messages, phase 1 %d", len(nm), len(pm))
	}
	for i := range pm {
		if a, b := strip(pm[i].Raw), strip(nm[i].Raw); a != b {
			t.Errorf("message %d differs between the turns:\n%s\n%s", i, a, b)
		}
	}
}

// checkCacheRead: the nth subagent assistant line of the stream reports a cache read.
func checkCacheRead(t *testing.T, stream []byte, nth int) {
	t.Helper()
	var subLines []gjson.Result
	for _, l := range strings.Split(strings.TrimSpace(string(stream)), "\n") {
		r := gjson.Parse(l)
		if r.Get("type").String() == "assistant" && r.Get("task_id").String() != "" {
			subLines = append(subLines, r)
		}
	}
	if len(subLines) < nth {
		t.Fatalf("subagent assistant lines = %d", len(subLines))
	}
	u := subLines[nth-1].Get("message.usage")
	if u.Get("cache_read_input_tokens").Int() <= 0 {
		t.Errorf("subagent line %d reports no cache read: %s", nth, u.Raw)
	}
	if !strings.Contains(string(stream), `"cache_read_input_tokens"`) {
		t.Errorf("no cache fields in the stream")
	}
}

func dropKey(v any, key string) any {
	switch v := v.(type) {
	case map[string]any:
		delete(v, key)
		for k, x := range v {
			v[k] = dropKey(x, key)
		}
	case []any:
		for i, x := range v {
			v[i] = dropKey(x, key)
		}
	}
	return v
}
