// canUseTool: a write the permission mode does not allow by itself is put to the app.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { query, setup, run, results, ofType, userMessage } from "../harness.mjs";

test("canUseTool denies a write: the tool is refused and the file is unchanged", async (t) => {
  const asked = [];
  const { dir, opts, stderr } = setup(t, "sdk-permissions.yaml", {
    canUseTool: async (toolName, input, { toolUseID }) => {
      asked.push({ toolName, input, toolUseID });
      return { behavior: "deny", message: "no writes in this test" };
    },
  });
  const { messages } = await run("Write some notes.", opts);

  assert.equal(asked.length, 1, `canUseTool calls: ${JSON.stringify(asked)}\nstderr: ${stderr.join("")}`);
  assert.equal(asked[0].toolName, "Write");
  assert.equal(asked[0].input.file_path, "notes.txt");
  assert.ok(asked[0].toolUseID, "the tool_use id is passed");
  assert.equal(existsSync(join(dir, "notes.txt")), false, "the file was not written");

  const toolResults = ofType(messages, "user").flatMap((m) => m.message.content).filter((b) => b.type === "tool_result");
  assert.equal(toolResults.length, 1);
  assert.equal(toolResults[0].is_error, true);
  assert.match(toolResults[0].content, /no writes in this test/);

  const rs = results(messages);
  assert.equal(rs.length, 1);
  assert.match(rs[0].result, /no writes in this test/);
});

test("canUseTool allows a write with updated input: the tool runs on the app's input", async (t) => {
  const { dir, opts } = setup(t, "sdk-permissions.yaml", {
    canUseTool: async (toolName, input) => ({
      behavior: "allow",
      updatedInput: { ...input, content: "rewritten by the app\n" },
    }),
  });
  const { messages } = await run("Write some notes.", opts);
  assert.equal(readFileSync(join(dir, "notes.txt"), "utf8"), "rewritten by the app\n");
  assert.equal(results(messages)[0].subtype, "success");
});

test("a PreToolUse hook denies a write that the permission mode allows", async (t) => {
  const inputs = [];
  const { dir, opts, stderr } = setup(t, "sdk-permissions.yaml", {
    permissionMode: "acceptEdits",
    hooks: {
      PreToolUse: [{
        matcher: "Write|Edit",
        hooks: [async (input) => {
          inputs.push(input);
          return { hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "deny", permissionDecisionReason: "the hook says no" } };
        }],
      }],
    },
  });
  const { messages } = await run("Write some notes.", opts);
  assert.equal(inputs.length, 1, `hook inputs ${JSON.stringify(inputs)}\nstderr: ${stderr.join("")}`);
  assert.equal(inputs[0].hook_event_name, "PreToolUse");
  assert.equal(inputs[0].tool_name, "Write");
  assert.equal(inputs[0].tool_input.file_path, "notes.txt");
  assert.equal(existsSync(join(dir, "notes.txt")), false, "the file was not written");
  assert.match(results(messages)[0].result, /the hook says no/);
});

test("setPermissionMode mid-session: a write refused in default mode runs after acceptEdits", async (t) => {
  const { dir, opts } = setup(t, "sdk-permissions.yaml");
  let q;
  let release;
  const released = new Promise((r) => (release = r));
  async function* prompt() {
    yield userMessage("Write some notes.");
    await released;
    yield userMessage("Write some notes again.");
  }
  q = query({ prompt: prompt(), options: opts });
  const rs = [];
  for await (const m of q) {
    if (m.type !== "result") continue;
    rs.push(m);
    if (rs.length === 1) {
      assert.equal(existsSync(join(dir, "notes.txt")), false, "default mode refuses the write");
      await q.setPermissionMode("acceptEdits");
      release();
    }
  }
  assert.equal(rs.length, 2);
  assert.match(rs[0].result, /acceptEdits|not allow|approve/);
  assert.equal(readFileSync(join(dir, "notes.txt"), "utf8"), "written by the model\n");
});
