package anthropic

import (
	"slices"
	"strings"
	"testing"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/store"
)

// TestBodyIsTheSDKEncoding grows a chat as the runtime does (a message of the same role
// as the last merges into it; an empty text message is left out) and checks that every
// request body, encoded with the chat's cache, is the SDK's encoding of the whole request
// with its cache breakpoints, byte for byte, with "stream" first; the system prompt, the tools and the model change between
// some requests.
func TestBodyIsTheSDKEncoding(t *testing.T) {
	t.Parallel()
	rich := richRequest()
	var cache llm.EncodeCache
	var chat []llm.Message
	steps := append(rich.Messages, llm.UserText("and <b>this</b> & that"),
		llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("")}},
		llm.UserText("again"),
		llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("done")}},
		llm.UserText("last"))
	for i, m := range steps {
		chat = store.AppendMessage(chat, m)
		// The envelope changes between some requests of the chat: the cache must see it.
		system, tools, model := rich.System, rich.Tools, rich.Model
		switch i % 5 { // each a change of one part from the request before
		case 1:
			tools = slices.Clone(rich.Tools) // as many tools, in another order
			slices.Reverse(tools)
		case 3:
			system = "another system prompt"
		case 4:
			model = "another-model"
		}
		req := &llm.Request{Model: model, System: system, Tools: tools, Messages: chat, Cache: &cache}
		got, env, err := body(req, "m", DefaultMaxTokens)
		if err != nil {
			t.Fatal(err)
		}
		p, err := params(req, "m", DefaultMaxTokens)
		if err != nil {
			t.Fatal(err)
		}
		want, err := p.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		want = append([]byte(streamFirst), want[1:]...)
		if string(got.Bytes()) != string(want) || env.Model != p.Model {
			t.Fatalf("step %d: body =\n%s\nwant\n%s", i, got.Bytes(), want)
		}
	}
}

// TestBodyEncodesEachMessageOnce checks that a request takes the messages it already
// encoded from the cache, and encodes a message anew once it changed.
func TestBodyEncodesEachMessageOnce(t *testing.T) {
	t.Parallel()
	var cache llm.EncodeCache
	chat := []llm.Message{llm.UserText("hi"), {Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("hello")}},
		llm.UserText("next"), {Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("fine")}}, llm.UserText("more")}
	req := &llm.Request{Messages: chat, Cache: &cache}
	if _, _, err := body(req, "m", DefaultMaxTokens); err != nil {
		t.Fatal(err)
	}
	owner := providerName + " m"
	cache.Put(owner, 0, chat[0], []byte(`{"content":[{"text":"from the cache","type":"text"}],"role":"user"}`))
	got, _, err := body(req, "m", DefaultMaxTokens)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got.Bytes()), "from the cache") {
		t.Fatalf("body = %s: the cached encoding of message 0 was not used", got.Bytes())
	}
	req.Messages = store.AppendMessage(chat[:1], llm.UserText("again")) // message 0 changed
	if got, _, err = body(req, "m", DefaultMaxTokens); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(got.Bytes()), "from the cache") || !strings.Contains(string(got.Bytes()), `"again"`) {
		t.Fatalf("body = %s: a changed message was sent from the cache", got.Bytes())
	}
}
