// query() with a string prompt and with a streaming prompt, the initialize reply, and
// control requests stoke does not implement.
import { test } from "node:test";
import assert from "node:assert/strict";
import { query, setup, run, collect, collectAll, results, ofType, userMessage } from "../harness.mjs";

test("a string prompt: init, the assistant's reply, one success result, a clean exit", async (t) => {
  const { opts, stderr } = setup(t, "sdk-chat.yaml");
  const { messages } = await run("hi there", opts);

  const init = ofType(messages, "system", "init");
  assert.ok(init.length >= 1, "a system/init message");
  assert.equal(init[0].model, "scripted-sdk");
  assert.ok(init[0].tools.includes("Task"), `tools ${init[0].tools}`);
  assert.equal(init[0].claude_code_version, init[0].stoke_version, "claude_code_version is stoke's version");

  const assistant = ofType(messages, "assistant");
  assert.equal(assistant.length, 1);
  assert.deepEqual(assistant[0].message.content, [{ type: "text", text: "Hello from stoke! You said: hi there", citations: null }]);

  const rs = results(messages);
  assert.equal(rs.length, 1, `results: ${JSON.stringify(rs)}\nstderr: ${stderr.join("")}`);
  assert.equal(rs[0].subtype, "success");
  assert.equal(rs[0].is_error, false);
  assert.equal(rs[0].result, "Hello from stoke! You said: hi there");
  assert.equal(rs[0].num_turns, 1);
  assert.ok(rs[0].session_id, "result has a session_id");
  assert.equal(messages.at(-1).type, "result", "the result is the last message the app sees");
});

test("a streaming prompt of two user messages: two results on one chat", async (t) => {
  const { opts } = setup(t, "sdk-chat.yaml");
  async function* prompt() {
    yield userMessage("remember apple");
    yield userMessage("now banana");
  }
  const messages = await collect(query({ prompt: prompt(), options: opts }));
  const rs = results(messages);
  assert.deepEqual(rs.map((r) => r.subtype), ["success", "success"]);
  assert.deepEqual(rs.map((r) => r.result), ["First: apple", "Second: banana, after apple"]);
  assert.equal(new Set(messages.map((m) => m.session_id)).size, 1, "one session throughout");
});

test("the initialize reply: agents, models, account, stoke's version", async (t) => {
  const { opts } = setup(t, "sdk-chat.yaml", {
    agents: { reviewer: { description: "Reviews changes", prompt: "You review." } },
  });
  const q = query({ prompt: "hi", options: opts });
  const init = await q.initializationResult();
  const agents = await q.supportedAgents();
  const models = await q.supportedModels();
  await collect(q);

  assert.deepEqual(agents.map((a) => a.name), ["general-purpose", "reviewer"]);
  assert.equal(agents[1].description, "Reviews changes");
  assert.deepEqual(models.map((m) => m.value), ["scripted-sdk"]);
  assert.deepEqual(init.commands, []);
  assert.equal(init.output_style, "default");
  assert.deepEqual(init.available_output_styles, ["default"]);
  assert.deepEqual(init.account, {});
  assert.ok(init.stoke_version, "stoke_version in the initialize reply");
});

test("control requests mid-session: refused or answered, and the session goes on", async (t) => {
  const { opts } = setup(t, "sdk-chat.yaml");
  let release;
  const released = new Promise((r) => (release = r));
  async function* prompt() {
    yield userMessage("remember apple");
    await released;
  }
  const q = query({ prompt: prompt(), options: opts });
  try {
    await assert.rejects(q.rewindFiles("u1"), /Unsupported control request subtype: rewind_files/);
    assert.deepEqual(await q.mcpServerStatus(), []);
    await q.setModel("scripted-other");
    const mode = await q.setPermissionMode("acceptEdits");
    assert.equal(mode?.mode, "acceptEdits");
  } finally {
    release();
  }
  const messages = await collect(q);
  const rs = results(messages);
  assert.deepEqual(rs.map((r) => r.subtype), ["success"]);
  // setModel: a system message names the new model.
  const inits = ofType(messages, "system", "init");
  assert.deepEqual(inits.map((m) => m.model), ["scripted-sdk", "scripted-other"]);
});

test("Claude Code's options become flags stoke accepts: none makes it fail", async (t) => {
  const { opts, stderr } = setup(t, "sdk-chat.yaml", {
    model: "scripted-sdk",
    fallbackModel: "scripted-fallback",
    maxTurns: 5,
    maxThinkingTokens: 1024,
    effort: "low",
    permissionMode: "acceptEdits",
    allowedTools: ["Read", "Bash(ls:*)"],
    disallowedTools: ["WebFetch"],
    settingSources: ["user", "project"],
    additionalDirectories: ["extra"],
    includePartialMessages: true,
    betas: ["context-1m-2025-08-07"],
    persistSession: false,
    extraArgs: { "some-future-flag": null, "other-future-flag": "v" },
  });
  const { messages } = await run("hi", opts);
  const rs = results(messages);
  assert.equal(rs.length, 1, `stderr: ${stderr.join("")}`);
  assert.equal(rs[0].subtype, "success");
  assert.equal(ofType(messages, "system", "init")[0].permissionMode, "acceptEdits");

  const events = ofType(messages, "stream_event").map((m) => m.event.type);
  assert.deepEqual(events, ["message_start", "content_block_start", "content_block_delta",
    "content_block_stop", "message_delta", "message_stop"]);
  const text = ofType(messages, "stream_event").filter((m) => m.event.type === "content_block_delta")
    .map((m) => m.event.delta.text).join("");
  assert.equal(text, "Hello from stoke! You said: hi");

  const warnings = stderr.join("");
  for (const flag of ["--fallback-model", "--effort", "--setting-sources", "--add-dir", "--betas", "--some-future-flag", "--other-future-flag"]) {
    assert.match(warnings, new RegExp(`flag=${flag}\\b`), `a warning names ${flag}`);
  }
});

test("maxTurns ends a model that never stops: an error_max_turns result the app can switch on", { timeout: 30_000 }, async (t) => {
  const { opts, stderr } = setup(t, "sdk-loop.yaml", { maxTurns: 3 });
  const { messages, err } = await collectAll(query({ prompt: "Look around.", options: opts }));
  assert.equal(ofType(messages, "assistant").length, 3, `three model calls, then the cap\nstderr: ${stderr.join("")}`);
  const rs = results(messages);
  assert.equal(rs.length, 1);
  assert.equal(rs[0].subtype, "error_max_turns");
  assert.equal(rs[0].is_error, true);
  assert.equal(rs[0].num_turns, 3);
  assert.match(String(err), /returned an error result: Reached maximum number of turns \(3\)/, "the SDK ends the query with the result's error");
});

// maxBudgetUsd through the Claude Agent SDK, on stoke's OpenAI provider (the mock endpoint
// sdk_test.go serves): a priced model's run that goes over the budget ends with an
// error_max_budget_usd result; a model with no price is refused before any call, since
// its calls would cost 0 and the budget could never fire.
for (const [model, want] of [["gpt-4o", "over"], ["acme-unpriced", "refused"]]) {
  test(`maxBudgetUsd with ${model}: ${want}`, { timeout: 30_000 }, async (t) => {
    assert.ok(process.env.STOKE_MOCK_OPENAI_URL, "sdk_test.go serves the mock endpoints");
    const env = { STOKE_PROVIDER: "openai", STOKE_BASE_URL: process.env.STOKE_MOCK_OPENAI_URL, OPENAI_API_KEY: "sk-test", STOKE_MODEL: model };
    const { opts, stderr } = setup(t, "sdk-media.yaml", { env, maxBudgetUsd: 0.000001 });
    const { messages, err } = await collectAll(query({ prompt: "hi", options: opts }));
    const rs = results(messages);
    if (want === "over") {
      assert.equal(rs.length, 1, `results ${JSON.stringify(rs)}\nstderr: ${stderr.join("")}`);
      assert.equal(rs[0].subtype, "error_max_budget_usd");
      assert.ok(rs[0].total_cost_usd > 0.000001, `total_cost_usd ${rs[0].total_cost_usd}`);
      assert.ok(rs[0].modelUsage[model]?.costUSD > 0, JSON.stringify(rs[0].modelUsage));
      return;
    }
    assert.equal(rs.length, 0, "no run");
    assert.match(String(err), /exited with code 2/);
    assert.match(stderr.join(""), /--max-budget-usd needs a price for model "acme-unpriced".*prices:/);
  });
}
