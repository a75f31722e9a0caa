// Images and documents in user messages, through the Claude Agent SDK: passed to models
// that take them, across stoke's OpenAI and Anthropic providers (to the mock endpoints
// sdk_test.go serves, whose model answers with what it saw); refused as one turn's error
// by a model that takes text only, and the session goes on.
import { test } from "node:test";
import assert from "node:assert/strict";
import { query, setup, collect, results, userMessage } from "../harness.mjs";

// A 1x1 PNG (69 bytes) and a tiny PDF (45 bytes).
const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";
const pdf = "JVBERi0xLjQKMSAwIG9iajw8Pj5lbmRvYmoKdHJhaWxlcjw8Pj4KJSVFT0YK";

const image = { type: "image", source: { type: "base64", media_type: "image/png", data: png } };
const document = { type: "document", source: { type: "base64", media_type: "application/pdf", data: pdf } };

async function* prompt(...messages) {
  for (const m of messages) yield m;
}

for (const [provider, env, saw] of [
  ["openai", { STOKE_PROVIDER: "openai", STOKE_BASE_URL: process.env.STOKE_MOCK_OPENAI_URL, OPENAI_API_KEY: "sk-test", STOKE_MODEL: "gpt-test" },
    'saw image (image/png, 69 bytes); document (application/pdf, 45 bytes) "document.pdf"'],
  ["anthropic", { STOKE_PROVIDER: "anthropic", STOKE_BASE_URL: process.env.STOKE_MOCK_ANTHROPIC_URL, ANTHROPIC_API_KEY: "sk-ant-test", STOKE_MODEL: "claude-test" },
    "saw image (image/png, 69 bytes); document (application/pdf, 45 bytes)"],
]) {
  test(`an image and a PDF reach the model through the ${provider} provider`, async (t) => {
    assert.ok(env.STOKE_BASE_URL, "sdk_test.go serves the mock endpoints");
    const { opts, stderr } = setup(t, "sdk-media.yaml", { env });
    const messages = await collect(query({
      prompt: prompt(userMessage([{ type: "text", text: "What are these?" }, image, document])),
      options: opts,
    }));
    const rs = results(messages);
    assert.equal(rs.length, 1, `results ${JSON.stringify(rs)}\nstderr: ${stderr.join("")}`);
    assert.equal(rs[0].subtype, "success");
    assert.equal(rs[0].result, saw);
  });
}

test("a model that takes text only refuses the image turn with an error result; the session goes on", async (t) => {
  const { opts, stderr } = setup(t, "sdk-chat.yaml");
  const messages = await collect(query({
    prompt: prompt(
      userMessage([{ type: "text", text: "remember apple" }, image]),
      userMessage([{ type: "text", text: "remember pear" }, { type: "search_result", source: "x", title: "t", content: [] }]),
      userMessage("now banana"),
    ),
    options: opts,
  }));
  const rs = results(messages);
  assert.equal(rs.length, 3, `results ${JSON.stringify(rs)}\nstderr: ${stderr.join("")}`);
  assert.equal(rs[0].subtype, "error_during_execution");
  assert.equal(rs[0].is_error, true);
  assert.equal(rs[0].terminal_reason, "image_error");
  assert.match(rs[0].errors[0], /the model scripted-sdk does not take image \(image\/png, 69 bytes\) input: the scenario takes text only/);
  assert.equal(rs[1].subtype, "error_during_execution");
  assert.match(rs[1].errors[0], /does not take search_result input/);
  assert.equal(rs[2].subtype, "success");
  assert.equal(rs[2].result, "Second: banana, after ", "the refused messages never joined the chat");
});
