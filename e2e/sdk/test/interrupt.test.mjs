// interrupt(): the running turn ends with an interrupted error result, the next turn runs.
import { test } from "node:test";
import assert from "node:assert/strict";
import { query, setup, results, userMessage, gate } from "../harness.mjs";

test("interrupt() during a slow turn: an interrupted result, then the next turn runs", { timeout: 30_000 }, async (t) => {
  const { opts, stderr } = setup(t, "sdk-interrupt.yaml");
  const next = gate();
  async function* prompt() {
    yield userMessage("take your time with this one");
    await next.wait();
    yield userMessage("next question");
  }
  const q = query({ prompt: prompt(), options: opts });
  const messages = [];
  let interrupted = false;
  for await (const m of q) {
    messages.push(m);
    // The parent called list_agents and is now waiting a minute for its model.
    if (!interrupted && m.type === "user" && m.message.content.some((b) => b.type === "tool_result")) {
      interrupted = true;
      await q.interrupt();
    }
    if (m.type === "result" && m.is_error) next.open();
  }
  const rs = results(messages);
  assert.equal(rs.length, 2, `results ${JSON.stringify(rs)}\nstderr: ${stderr.join("")}`);
  assert.equal(rs[0].subtype, "error_during_execution");
  assert.equal(rs[0].is_error, true);
  assert.match(rs[0].errors.join(" "), /interrupted/);
  assert.equal(rs[1].subtype, "success");
  assert.equal(rs[1].result, "Answered the next question.");
  assert.ok(!messages.some((m) => m.type === "assistant" && JSON.stringify(m.message.content).includes("too late")),
    "the slow reply never arrived");
});
