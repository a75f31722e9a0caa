// MCP servers an app gives the Claude Agent SDK (the mcpServers option): an in-process
// server (createSdkMcpServer, type "sdk") whose calls go through the control protocol
// (mcp_message round trips), mcpServerStatus() (mcp_status), and servers delivered in the
// initialize request (mcpServersDelivery: 'initialize', which needs mcp_servers_applied).
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { createSdkMcpServer, tool } from "@anthropic-ai/claude-agent-sdk";
import { z } from "zod";
import { query, setup, collect, results, ofType, testdata } from "../harness.mjs";

test("an in-process SDK MCP server answers the model's call through the control protocol", { timeout: 30_000 }, async (t) => {
  const calls = [];
  const calc = createSdkMcpServer({
    name: "calc", version: "1.0.0",
    tools: [tool("add", "Add two numbers", { a: z.number(), b: z.number() }, async ({ a, b }) => {
      calls.push([a, b]);
      return { content: [{ type: "text", text: String(a + b) }] };
    })],
  });
  const { opts, stderr } = setup(t, "sdk-mcp.yaml", { mcpServers: { calc }, allowedTools: ["mcp__calc__add"] });
  const q = query({ prompt: "Add 2 and 3", options: opts });
  const messages = [];
  let status;
  for await (const m of q) {
    messages.push(m);
    // The servers have started by the time system/init is written.
    if (m.type === "system" && m.subtype === "init") status = await q.mcpServerStatus();
  }

  assert.deepEqual(calls, [[2, 3]], `the app's tool ran once\nstderr: ${stderr.join("")}`);
  const rs = results(messages);
  assert.equal(rs.length, 1);
  assert.equal(rs[0].result, "The tool said: 5");
  const init = ofType(messages, "system", "init")[0];
  assert.deepEqual(init.mcp_servers, [{ name: "calc", status: "connected" }]);
  assert.ok(init.tools.includes("mcp__calc__add"), `tools ${init.tools}`);
  assert.deepEqual(status, [{ name: "calc", status: "connected", tools: [{ name: "add" }] }]);
});

test("mcpServersDelivery 'initialize': the servers are applied (mcp_servers_applied) and answer", { timeout: 30_000 }, async (t) => {
  const { opts, stderr } = setup(t, "sdk-mcp.yaml", {
    mcpServers: { echo: { command: process.execPath, args: [join(testdata, "echo-server.mjs")] } },
    mcpServersDelivery: "initialize",
    allowedTools: ["mcp__echo__echo"],
  });
  const q = query({ prompt: "Echo banana", options: opts });
  const init = await q.initializationResult();
  const messages = await collect(q);
  assert.equal(init.mcp_servers_applied, true);
  const rs = results(messages);
  assert.equal(rs.length, 1, `stderr: ${stderr.join("")}`);
  assert.equal(rs[0].result, "The tool said: echo: banana");
  assert.deepEqual(ofType(messages, "system", "init")[0].mcp_servers, [{ name: "echo", status: "connected" }]);
});
