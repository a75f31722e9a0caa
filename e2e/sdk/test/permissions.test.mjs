// canUseTool: a write the permission mode does not allow by itself is put to the app.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { setup, run, results, ofType } from "../harness.mjs";

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
