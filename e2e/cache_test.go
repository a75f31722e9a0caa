package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/stoke-cli/stoke/agents/llm/openai/openaitest"
	"github.com/stoke-cli/stoke/agents/llm/scripted"
)

// TestRevivedRequestKeepsCachePrefix: after a restart, the revived chat sends the provider
// the same request prefix the resident chat would have sent — the previous request's
// system prompt, tool declarations and messages, byte for byte, then the assistant reply
// and the new turn — so provider prompt caches keep hitting across the restart. The same
// holds for the parent's resumed conversation.
func TestRevivedRequestKeepsCachePrefix(t *testing.T) {
	t.Parallel()
	m, err := scripted.Open(filepath.Join(h.scenarios, "resume-memory.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	srv := openaitest.New(m, openaitest.WithAPIKey("sk-cache"))
	defer srv.Close()
	dir := t.TempDir()
	home := t.TempDir() // outside the working directory, as stoke requires
	env := slices.Clip(append(os.Environ(), "GOCOVERDIR="+h.coverDir, "OPENAI_API_KEY=sk-cache"))
	bin := filepath.Join(h.binDir, "stoke"+exeSuffix())
	const sid = "c0ffee00-0000-4000-8000-000000000001"
	common := []string{"--provider", "openai", "--base-url", srv.URL(), "--model", "mock-1", "--output-format", "stream-json"}

	if out, err := runStoke(bin, env, dir, home, append([]string{"-p", "Keep NONCE-CACHE1 safe", "--session-id", sid}, common...)...); err != nil {
		t.Fatalf("run 1: %v\n%s", err, out)
	}
	run1 := srv.Requests()
	if out, err := runStoke(bin, env, dir, home, append([]string{"-p", "Ask the agent for the nonce", "--resume", sid}, common...)...); err != nil {
		t.Fatalf("run 2: %v\n%s", err, out)
	}
	run2 := srv.Requests()[len(run1):]
	if !strings.Contains(string(run2[len(run2)-1]), "NONCE-CACHE1") {
		t.Fatalf("run 2 never saw the nonce come back")
	}

	isSub := func(b []byte) bool {
		return strings.Contains(gjson.GetBytes(b, "messages.0.content").String(), "Agent type: general-purpose")
	}
	isParent := func(b []byte) bool { return !isSub(b) }
	for _, who := range []struct {
		name string
		is   func([]byte) bool
	}{{"subagent", isSub}, {"parent", isParent}} {
		t.Run(who.name, func(t *testing.T) {
			last := lastMatching(run1, who.is)
			first := firstMatching(run2, who.is)
			if last == nil || first == nil {
				t.Fatalf("no %s request in one of the runs", who.name)
			}
			if a, b := gjson.GetBytes(last, "tools").Raw, gjson.GetBytes(first, "tools").Raw; a != b {
				t.Errorf("tool declarations differ after the restart:\n%s\n%s", a, b)
			}
			prev, next := gjson.GetBytes(last, "messages").Array(), gjson.GetBytes(first, "messages").Array()
			if len(next) <= len(prev) {
				t.Fatalf("revived request has %d messages, the last one before the restart %d", len(next), len(prev))
			}
			for i := range prev {
				if prev[i].Raw != next[i].Raw {
					t.Fatalf("message %d differs after the restart:\nbefore: %s\nafter:  %s", i, prev[i].Raw, next[i].Raw)
				}
			}
			if role := next[len(prev)].Get("role").String(); role != "assistant" {
				t.Errorf("after the shared prefix comes %s, want the assistant's reply", role)
			}
		})
	}
}

func lastMatching(reqs [][]byte, ok func([]byte) bool) []byte {
	for i := len(reqs) - 1; i >= 0; i-- {
		if ok(reqs[i]) {
			return reqs[i]
		}
	}
	return nil
}

func firstMatching(reqs [][]byte, ok func([]byte) bool) []byte {
	for _, r := range reqs {
		if ok(r) {
			return r
		}
	}
	return nil
}
