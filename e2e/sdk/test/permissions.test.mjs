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
  // One naming on the SDK surface: the denial, canUseTool and the tool_use block say Write.
  assert.deepEqual(rs[0].permission_denials.map((d) => [d.tool_name, d.tool_use_id, d.tool_input.file_path]),
    [["Write", asked[0].toolUseID, "notes.txt"]]);
  const uses = ofType(messages, "assistant").flatMap((m) => m.message.content).filter((b) => b.type === "tool_use");
  assert.deepEqual(uses.map((b) => [b.name, b.id]), [["Write", asked[0].toolUseID]]);
  assert.ok(ofType(messages, "system", "init")[0].tools.includes("Write"));
});

test("canUseTool from a subagent is told which agent asks (agentID)", async (t) => {
  const asked = [];
  const { dir, opts, stderr } = setup(t, "sdk-subagent-write.yaml", {
    agents: { writer: { description: "Writes notes", prompt: "You write notes.", model: "scripted-writer" } },
    canUseTool: async (toolName, input, { agentID }) => {
      asked.push({ toolName, agentID });
      return { behavior: "allow", updatedInput: input };
    },
  });
  const { messages } = await run("Have the writer write the notes.", opts);
  const [started] = ofType(messages, "system", "task_started");
  assert.ok(started, `stderr: ${stderr.join("")}`);
  assert.deepEqual(asked, [{ toolName: "Write", agentID: started.task_id }]);
  assert.equal(readFileSync(join(dir, "notes.txt"), "utf8"), "written by the writer\n");
  const rs = results(messages);
  assert.match(rs[0].result, /^The writer said: /);
  // modelUsage has one entry per model that answered: the parent's and the writer's.
  assert.deepEqual(Object.keys(rs[0].modelUsage).sort(), ["scripted-sdk", "scripted-writer"]);
  for (const [model, u] of Object.entries(rs[0].modelUsage)) {
    assert.ok(u.inputTokens > 0 && u.outputTokens > 0, `${model}: ${JSON.stringify(u)}`);
    assert.equal(typeof u.costUSD, "number");
  }
  const total = Object.values(rs[0].modelUsage).reduce((a, u) => a + u.inputTokens, 0);
  assert.equal(total, rs[0].usage.input_tokens, "modelUsage adds up to the run's usage");
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
