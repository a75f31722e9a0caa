// The SDK's forkSession: resume: ID with forkSession: true continues a copy of the session
// under a new id (stoke's --fork-session); the agent is revived from the copied transcript
// and answers from its history, and the original session's files stay as they were.
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { setup, run, results, ofType, stokeHome } from "../harness.mjs";

// snapshot maps every file under dir (relative path) to its content.
function snapshot(dir, base = dir, out = {}) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) snapshot(p, base, out);
    else out[p.slice(base.length)] = readFileSync(p, "utf8");
  }
  return out;
}

test("forkSession continues a copy; the original stays as it was", { timeout: 30_000 }, async (t) => {
  const { dir, opts, stderr } = setup(t, "resume-memory.yaml");
  const nonce = "NONCE-" + randomBytes(3).toString("hex").toUpperCase();
  const first = await run(`Keep ${nonce} safe`, opts);
  const sid = first.messages[0].session_id;
  assert.equal(results(first.messages).at(-1).subtype, "success", stderr.join(""));
  const before = snapshot(stokeHome(dir));

  const fork = await run("Ask the agent you launched before the restart for the nonce", { ...opts, resume: sid, forkSession: true });
  const ids = new Set(fork.messages.map((m) => m.session_id));
  assert.equal(ids.size, 1, "one session id in the fork's stream");
  assert.notEqual([...ids][0], sid, "the fork has a new session id");
  const started = ofType(fork.messages, "system", "task_started");
  assert.deepEqual(started.map((m) => [m.turn, m.continuation]), [[2, "revived"]]);
  const rs = results(fork.messages);
  assert.equal(rs.at(-1).result, `The revived agent remembered the nonce: ${nonce}`, stderr.join(""));

  // Every file of the original session is as it was (the fork added its own directory).
  const after = snapshot(stokeHome(dir));
  for (const [path, content] of Object.entries(before)) {
    assert.equal(after[path], content, `${path} changed`);
  }
  assert.ok(Object.keys(after).some((p) => p.includes([...ids][0])), "the fork's files are stored");
});
