// An agent the app defines (options.agents, sent in initialize) is a subagent type for task.
import { test } from "node:test";
import assert from "node:assert/strict";
import { setup, run, results, ofType } from "../harness.mjs";

test("an SDK-defined agent runs as a task subagent with its own prompt", async (t) => {
  const { opts, stderr } = setup(t, "sdk-agents.yaml", {
    agents: {
      reviewer: { description: "Reviews a change", prompt: "You are the reviewer. Codeword: PELICAN." },
    },
  });
  const { messages } = await run("Ask the reviewer to look at the change.", opts);
  const init = ofType(messages, "system", "init")[0];
  assert.ok(init.agents.includes("reviewer"), `init agents ${init.agents}`);

  const started = ofType(messages, "system", "task_started");
  assert.equal(started.length, 1);
  assert.equal(started[0].subagent_type, "reviewer");

  const sub = messages.filter((m) => m.type === "assistant" && m.parent_tool_use_id);
  assert.equal(sub.length, 1, "the reviewer's own reply is streamed");
  assert.equal(sub[0].parent_tool_use_id, started[0].tool_use_id);

  const rs = results(messages);
  assert.equal(rs.length, 1, `stderr: ${stderr.join("")}`);
  assert.equal(rs[0].result, "The reviewer said: PELICAN");
});
