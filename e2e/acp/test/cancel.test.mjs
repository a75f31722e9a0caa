// session/cancel: the running turn ends with cancelled, what the parent wrote is kept, and
// the session goes on.
import { test } from "node:test";
import assert from "node:assert/strict";
import { workspace, start, text, since } from "../harness.mjs";

test("session/cancel mid-turn: cancelled, the partial text kept, the next prompt runs", { timeout: 30_000 }, async (t) => {
  const w = workspace(t);
  const s = start(t, w, "sdk-interrupt.yaml");
  await s.initialize();
  const { sessionId: id } = await s.agent.request("session/new", { cwd: w.project, mcpServers: [] });
  const prompt = s.agent.request("session/prompt", { sessionId: id, prompt: [{ type: "text", text: "take your time with this one" }] });
  // The parent wrote its text and called list_agents; now it waits a minute for its model.
  await s.until(id, (us) => us.some((u) => u.sessionUpdate === "tool_call_update" && u.status === "completed"));
  await s.agent.notify("session/cancel", { sessionId: id });
  assert.deepEqual(await prompt, { stopReason: "cancelled" });
  assert.equal(text(s.updates(id)), "Let me look at the agents first.", "the partial text was streamed and stays");
  assert.ok(!text(s.updates(id)).includes("too late"));

  const n = s.updates(id).length;
  assert.deepEqual(await s.agent.request("session/prompt", { sessionId: id, prompt: [{ type: "text", text: "next question" }] }), { stopReason: "end_turn" });
  assert.equal(text(since(s.updates(id), n)), "Answered the next question.");

  // The cut turn is in the session's history: a load replays its text.
  const m = s.updates(id).length;
  await s.agent.request("session/load", { sessionId: id, cwd: w.project, mcpServers: [] });
  assert.equal(text(since(s.updates(id), m)), "Let me look at the agents first.Answered the next question.");
  await s.stop();
  assert.equal((await s.exited).code, 0, s.stderr.join(""));
});

test("--max-turns reached: max_turn_requests, and the session goes on", { timeout: 30_000 }, async (t) => {
  const w = workspace(t);
  const s = start(t, w, "sdk-interrupt.yaml", { args: ["--max-turns", "1"] });
  await s.initialize();
  const { sessionId: id } = await s.agent.request("session/new", { cwd: w.project, mcpServers: [] });
  // The parent's first call asks for a tool; the reply after it would be its second.
  assert.deepEqual(await s.agent.request("session/prompt", { sessionId: id, prompt: [{ type: "text", text: "take your time with this one" }] }),
    { stopReason: "max_turn_requests" });
  const n = s.updates(id).length;
  assert.deepEqual(await s.agent.request("session/prompt", { sessionId: id, prompt: [{ type: "text", text: "next question" }] }), { stopReason: "end_turn" });
  assert.equal(text(since(s.updates(id), n)), "Answered the next question.");
  await s.stop();
  assert.equal((await s.exited).code, 0, s.stderr.join(""));
});
