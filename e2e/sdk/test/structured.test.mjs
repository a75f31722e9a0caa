// outputFormat {type: "json_schema", schema}: the result carries structured_output; an
// invalid answer goes back to the model; after the allowed answers the query ends with
// error_max_structured_output_retries.
import { test } from "node:test";
import assert from "node:assert/strict";
import { query, setup, collect, collectAll, results } from "../harness.mjs";

const outputFormat = {
  type: "json_schema",
  schema: {
    type: "object",
    properties: { verdict: { enum: ["pass", "fail"] }, count: { type: "integer" } },
    required: ["verdict", "count"],
  },
};

test("outputFormat: a valid answer at once is the result's structured_output", async (t) => {
  const { opts, stderr } = setup(t, "sdk-structured.yaml", { outputFormat });
  const messages = await collect(query({ prompt: "a quick verdict", options: opts }));
  const rs = results(messages);
  assert.equal(rs.length, 1, `results ${JSON.stringify(rs)}\nstderr: ${stderr.join("")}`);
  assert.equal(rs[0].subtype, "success");
  assert.deepEqual(rs[0].structured_output, { verdict: "pass", count: 1 });
  assert.equal(messages.filter((m) => m.type === "assistant").length, 1, "the turn ends on the tool's result");
});

test("outputFormat: after one invalid answer, the valid one", async (t) => {
  const { opts } = setup(t, "sdk-structured.yaml", { outputFormat });
  const messages = await collect(query({ prompt: "a careful verdict", options: opts }));
  const refused = messages.filter((m) => m.type === "user" && m.message.content.some((b) => b.type === "tool_result" && b.is_error));
  assert.equal(refused.length, 1, "one answer refused");
  assert.match(JSON.stringify(refused[0].message.content), /verdict/);
  assert.deepEqual(results(messages).at(-1).structured_output, { verdict: "fail", count: 2 });
});

test("outputFormat: never valid: error_max_structured_output_retries", async (t) => {
  const { opts } = setup(t, "sdk-structured.yaml", { outputFormat, env: { MAX_STRUCTURED_OUTPUT_RETRIES: "3" } });
  const { messages, err } = await collectAll(query({ prompt: "a stubborn verdict", options: opts }));
  const rs = results(messages);
  assert.equal(rs.length, 1);
  assert.equal(rs[0].subtype, "error_max_structured_output_retries");
  assert.equal(rs[0].is_error, true);
  assert.deepEqual(rs[0].errors, ["Failed to provide valid structured output after 3 attempts"]);
  assert.equal(messages.filter((m) => m.type === "assistant").length, 3);
  assert.ok(err, "the SDK ends the query with an error (stoke exits 1)");
});
