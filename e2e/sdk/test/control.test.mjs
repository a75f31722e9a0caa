// The control protocol through the Claude Agent SDK: stopTask() on a background agent
// (partial findings kept), and every request subtype the pinned SDK can send answered or
// refused with a typed error (errorCode), never left hanging.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { query, setup, results, ofType, userMessage, held, collect } from "../harness.mjs";

// settle resolves to {ok, value} or {ok:false, error} within ms, or rejects: a request that
// is neither answered nor refused hangs, and that is the failure this suite looks for.
function settle(p, what, ms = 10_000) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([
    p.then((value) => ({ ok: true, value }), (error) => ({ ok: false, error })),
    timeout,
  ]).finally(() => clearTimeout(timer));
}

test("stopTask() stops a background agent: a stopped notification with its partial findings", { timeout: 30_000 }, async (t) => {
  const { opts, stderr } = setup(t, "sdk-stop.yaml");
  const { prompt, release } = held([userMessage("Start the slow search in the background.")]);
  const q = query({ prompt, options: opts });
  const messages = [];
  let stopped, again;
  for await (const m of q) {
    messages.push(m);
    // The searcher has found something and is now waiting a minute for its model.
    if (m.type === "system" && m.subtype === "task_progress" && !stopped) {
      stopped = await settle(q.stopTask(m.task_id), "stopTask");
    }
    if (m.type === "system" && m.subtype === "task_notification") {
      again = await settle(q.stopTask(m.task_id), "stopTask again");
    }
    // The parent reads the notification in a turn of its own, or mid-turn when it comes
    // while the first turn still runs: either way a result then says what was found.
    if (m.type === "result" && String(m.result).startsWith("Stopped;")) release();
  }
  assert.equal(stopped?.ok, true, `stopTask: ${stopped?.error}\nstderr: ${stderr.join("")}`);
  assert.equal(again.ok, false, "a task that no longer runs cannot be stopped");
  assert.equal(again.error.errorCode, "task_not_running");

  const [started] = ofType(messages, "system", "task_started");
  const notes = ofType(messages, "system", "task_notification");
  assert.equal(notes.length, 1);
  assert.equal(notes[0].task_id, started.task_id);
  assert.equal(notes[0].status, "stopped");
  assert.equal(notes[0].summary, "Found clue-1 so far.", "the partial findings are kept");
  const rs = results(messages);
  assert.ok(rs.every((r) => r.subtype === "success"), JSON.stringify(rs.map((r) => r.subtype)));
  assert.equal(rs.at(-1).result, "Stopped; it had found: Found clue-1 so far.");
  assert.ok(!JSON.stringify(messages).includes("too late"), "the slow reply never arrived");
});

test("stopTask() of a task that does not exist is refused with task_not_found", async (t) => {
  const { opts } = setup(t, "sdk-chat.yaml");
  const { prompt, release } = held([userMessage("hi")]);
  const q = query({ prompt, options: opts });
  const r = await settle(q.stopTask("a0123456789abcdef"), "stopTask");
  release();
  await collect(q);
  assert.equal(r.ok, false);
  assert.equal(r.error.errorCode, "task_not_found");
  assert.match(r.error.message, /a0123456789abcdef/);
});

// The subtypes the pinned SDK's Query sends: every this.request({subtype: "..."}) in its
// bundle. Read from the installed SDK, so that a new SDK version's requests are covered.
function sdkSubtypes() {
  const src = readFileSync(fileURLToPath(import.meta.resolve("@anthropic-ai/claude-agent-sdk")), "utf8");
  const out = new Set();
  for (const m of src.matchAll(/request\(\{subtype:"([a-z_]+)"/g)) out.add(m[1]);
  return [...out].sort();
}

test("every control request the SDK can send is answered or refused with an errorCode", { timeout: 60_000 }, async (t) => {
  const subtypes = sdkSubtypes();
  assert.ok(subtypes.length >= 50, `found only ${subtypes.length} request subtypes in the SDK: ${subtypes}`);
  for (const must of ["stop_task", "mcp_status", "set_permission_mode", "get_task_output", "rewind_files", "background_tasks"]) {
    assert.ok(subtypes.includes(must), `${must} among the SDK's requests`);
  }
  const { opts, stderr } = setup(t, "sdk-chat.yaml");
  const { prompt, release } = held([userMessage("remember apple")], [userMessage("now banana")]);
  const q = query({ prompt, options: opts });
  const answers = {};
  const messages = [];
  for await (const m of q) {
    messages.push(m);
    if (m.type !== "result" || results(messages).length !== 1) continue;
    // Between the two turns: nothing runs, so the interrupt interrupts nothing.
    for (const subtype of subtypes) {
      // Query.request is how each of the SDK's methods sends its request.
      const r = await settle(q.request({ subtype }), subtype);
      answers[subtype] = r.ok ? "answered" : r.error.errorCode;
      if (!r.ok) {
        assert.match(r.error.errorCode ?? "", /^[a-z][a-z0-9_]*$/, `${subtype} refused without an errorCode: ${r.error.message}`);
      }
    }
    release();
  }
  const rs = results(messages);
  assert.deepEqual(rs.map((r) => r.result), ["First: apple", "Second: banana, after apple"],
    `the session goes on after every request\nstderr: ${stderr.join("")}`);
  for (const s of ["interrupt", "mcp_status", "seed_read_state", "set_model", "set_permission_mode"]) {
    assert.equal(answers[s], "answered", `${s}: ${answers[s]}`);
  }
  for (const s of ["rewind_files", "background_tasks", "set_max_thinking_tokens", "side_question"]) {
    assert.equal(answers[s], "unsupported_request", `${s}: ${answers[s]}`);
  }
  assert.equal(answers.stop_task, "task_not_found", "stop_task without a task id");
});

test("the SDK's public methods: answered, or rejected with a typed error the app can switch on", async (t) => {
  const { opts } = setup(t, "sdk-chat.yaml");
  const { prompt, release } = held([userMessage("hi")]);
  const q = query({ prompt, options: opts });
  const status = await settle(q.mcpServerStatus(), "mcpServerStatus");
  assert.deepEqual(status, { ok: true, value: [] });
  const mode = await settle(q.setPermissionMode("dontAsk"), "setPermissionMode");
  assert.equal(mode.ok, true);
  assert.equal(mode.value?.mode, "default", "dontAsk is the default mode that never asks");
  for (const [name, call] of [
    ["setMaxThinkingTokens", () => q.setMaxThinkingTokens(1024)],
    ["rewindFiles", () => q.rewindFiles("u1")],
    ["backgroundTasks", () => q.backgroundTasks()],
    ["getContextUsage", () => q.getContextUsage()],
    ["reloadPlugins", () => q.reloadPlugins()],
    ["setMcpServers", () => q.setMcpServers({})],
  ]) {
    const r = await settle(call(), name);
    assert.equal(r.ok, false, `${name} is not supported`);
    assert.equal(r.error.errorCode, "unsupported_request", `${name}: ${r.error.message}`);
  }
  const again = await settle(q.reinitialize(), "reinitialize");
  assert.equal(again.ok, false, "initialize is accepted once");
  assert.equal(again.error.errorCode, "initialize_failed");
  release();
  await collect(q);
});
