// The product's proof through the SDK: a background agent keeps a nonce, notifies, is
// continued with send_message on the same task id, and answers from the history it kept.
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { setup, run, results, ofType } from "../harness.mjs";

test("the nonce scenario: background launch, notification, send_message, nonce recalled", { timeout: 30_000 }, async (t) => {
  const { opts, stderr } = setup(t, "nonce-memory.yaml");
  const nonce = "NONCE-" + randomBytes(3).toString("hex").toUpperCase();
  const { messages } = await run(`Keep ${nonce} safe with a background agent, then ask it for the nonce.`, opts);

  const started = ofType(messages, "system", "task_started");
  assert.deepEqual(started.map((m) => [m.turn, m.continuation]), [[1, "fresh"], [2, "resident"]]);
  assert.equal(started[0].task_id, started[1].task_id, "one task id across both turns");
  assert.equal(started[0].is_backgrounded, true);

  const notes = ofType(messages, "system", "task_notification");
  assert.deepEqual(notes.map((m) => [m.task_id, m.status, m.turn]),
    [[started[0].task_id, "completed", 1], [started[0].task_id, "completed", 2]]);
  assert.equal(notes[1].summary, nonce);

  const rs = results(messages);
  assert.ok(rs.every((r) => r.subtype === "success"), `results ${JSON.stringify(rs)}\nstderr: ${stderr.join("")}`);
  assert.equal(rs.at(-1).result, `The agent remembered the nonce: ${nonce}`);
  assert.equal(messages.at(-1).type, "result");
});
