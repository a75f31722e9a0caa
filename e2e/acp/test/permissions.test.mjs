// session/request_permission for the calls the session's mode does not allow, and the
// file tools writing through the client when it offers fs/write_text_file.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { workspace, start, since } from "../harness.mjs";

const notes = (dir) => join(dir, "notes.txt");
const write = (s, id) => s.agent.request("session/prompt", { sessionId: id, prompt: [{ type: "text", text: "Write some notes" }] });
const failed = (us) => us.filter((u) => u.sessionUpdate === "tool_call_update" && u.status === "failed");

test("request_permission: reject leaves the file unwritten, allow writes it, allow always is remembered", { timeout: 30_000 }, async (t) => {
  const w = workspace(t);
  const answers = ["reject_once", "allow_once", "allow_always"];
  const asked = [];
  const s = start(t, w, "sdk-permissions.yaml", {
    handlers: {
      permission: (p) => {
        asked.push(p);
        return { outcome: { outcome: "selected", optionId: answers.shift() } };
      },
    },
  });
  await s.initialize();
  const { sessionId: id, modes } = await s.agent.request("session/new", { cwd: w.project, mcpServers: [] });
  assert.equal(modes.currentModeId, "default");
  assert.deepEqual(modes.availableModes.map((m) => m.id), ["plan", "default", "auto-edit", "yolo"]);

  assert.equal((await write(s, id)).stopReason, "end_turn");
  assert.equal(asked.length, 1);
  const req = asked[0];
  assert.equal(req.sessionId, id);
  assert.equal(req.toolCall.kind, "edit");
  assert.deepEqual(req.toolCall.locations, [{ path: notes(w.project) }]);
  assert.deepEqual(req.options.map((o) => o.kind), ["allow_once", "allow_always", "reject_once"]);
  assert.ok(!existsSync(notes(w.project)), "rejected: not written");
  assert.equal(failed(s.updates(id)).length, 1, "the refused call failed");

  let n = s.updates(id).length;
  await write(s, id);
  assert.equal(readFileSync(notes(w.project), "utf8"), "written by the model\n", "allowed once: written");
  assert.equal(failed(since(s.updates(id), n)).length, 0);

  await write(s, id); // allow always
  await write(s, id); // remembered: not asked
  assert.equal(asked.length, 3, "allow always is remembered for the session");

  // plan mode refuses without asking.
  await s.agent.request("session/set_mode", { sessionId: id, modeId: "plan" });
  assert.ok(s.updates(id).some((u) => u.sessionUpdate === "current_mode_update" && u.currentModeId === "plan"));
  n = s.updates(id).length;
  await write(s, id);
  assert.equal(asked.length, 3);
  assert.equal(failed(since(s.updates(id), n)).length, 1, "plan mode refused the write");
  await assert.rejects(s.agent.request("session/set_mode", { sessionId: id, modeId: "reckless" }), (err) => err.code === -32602);
  await s.stop();
  assert.equal((await s.exited).code, 0, s.stderr.join(""));
});

test("fs/write_text_file: with the capability, the file tools write through the client", { timeout: 30_000 }, async (t) => {
  const w = workspace(t);
  const writes = [];
  const s = start(t, w, "sdk-permissions.yaml", {
    capabilities: { fs: { readTextFile: false, writeTextFile: true }, terminal: false },
    handlers: { writeTextFile: (p) => (writes.push(p), {}) },
  });
  await s.initialize();
  const { sessionId: id } = await s.agent.request("session/new", { cwd: w.project, mcpServers: [] });
  await s.agent.request("session/set_mode", { sessionId: id, modeId: "auto-edit" });
  assert.equal((await write(s, id)).stopReason, "end_turn");
  assert.deepEqual(writes, [{ sessionId: id, path: notes(w.project), content: "written by the model\n" }]);
  assert.ok(!existsSync(notes(w.project)), "the client wrote it (this one keeps it in its buffer), not stoke");
  const edit = s.updates(id).find((u) => u.sessionUpdate === "tool_call" && u.kind === "edit");
  assert.deepEqual(edit.content, [{ type: "diff", path: notes(w.project), newText: "written by the model\n" }], "the edit shows its diff");
  await s.stop();
  assert.equal((await s.exited).code, 0, s.stderr.join(""));
});
