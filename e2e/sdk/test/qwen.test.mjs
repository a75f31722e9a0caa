// Qwen Code's SDK (@qwen-code/sdk) as a second host: its query() drives stoke through
// pathToQwenExecutable (`--input-format stream-json --output-format stream-json
// --channel=SDK` and its own flags, initialize with agents as a list, can_use_tool always
// answered). Every test goes through the SDK's public API.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, readlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { createSdkMcpServer, tool as qwenTool } from "@qwen-code/sdk";
import { z as z3 } from "zod/v3";
import { qwenQuery, qwenSetup, collect, collectAll, results, ofType, held, userMessage } from "../harness.mjs";

test("a plain query: init in Qwen Code's keys, the reply, one success result", async (t) => {
  const { opts, stderr } = qwenSetup(t, "sdk-chat.yaml");
  const messages = await collect(qwenQuery({ prompt: "hi there", options: opts }));
  const init = ofType(messages, "system", "init")[0];
  assert.equal(init.permission_mode, "default");
  assert.ok(init.qwen_code_version, "qwen_code_version in system/init");
  assert.ok(init.tools.includes("run_shell_command") && init.tools.includes("grep_search"), `Qwen Code's tool names: ${init.tools}`);
  const rs = results(messages);
  assert.equal(rs.length, 1, `stderr: ${stderr.join("")}`);
  assert.equal(rs[0].subtype, "success");
  assert.equal(rs[0].result, "Hello from stoke! You said: hi there");
});

test("agents in the SDK's list form are subagent types", async (t) => {
  const { opts, stderr } = qwenSetup(t, "sdk-agents.yaml", {
    agents: [{ name: "reviewer", description: "Reviews a change", systemPrompt: "You are the reviewer. Codeword: PELICAN.", level: "session", tools: ["read_file", "grep_search"] }],
  });
  const messages = await collect(qwenQuery({ prompt: "Ask the reviewer to look at the change.", options: opts }));
  const started = ofType(messages, "system", "task_started");
  assert.equal(started.length, 1, `stderr: ${stderr.join("")}`);
  assert.equal(started[0].subagent_type, "reviewer");
  assert.equal(results(messages).at(-1).result, "The reviewer said: PELICAN");
});

// The permission modes Qwen Code's SDK can send, with a canUseTool that records and allows.
for (const [mode, asked, wrote, removed] of [
  ["default", ["write_file", "run_shell_command"], true, true],
  ["auto", ["write_file", "run_shell_command"], true, true], // stoke has no classifier: the default mode
  ["auto-edit", ["run_shell_command"], true, true],
  ["plan", [], false, false],
  ["yolo", [], true, true],
]) {
  test(`permissionMode ${mode}: canUseTool asked for ${asked.join(", ") || "nothing"}`, async (t) => {
    const calls = [];
    const { dir, opts, stderr } = qwenSetup(t, "sdk-tools.yaml", {
      permissionMode: mode,
      canUseTool: async (toolName, input) => {
        calls.push(toolName);
        return { behavior: "allow", updatedInput: input };
      },
    });
    writeFileSync(join(dir, "keep.txt"), "keep\n");
    const messages = await collect(qwenQuery({ prompt: "Write notes, then tidy up.", options: opts }));
    assert.deepEqual(calls, asked, `stderr: ${stderr.join("")}`);
    assert.equal(existsSync(join(dir, "notes.txt")), wrote, "notes.txt written");
    assert.equal(existsSync(join(dir, "keep.txt")), !removed, "keep.txt removed");
    assert.equal(results(messages).at(-1).subtype, "success");
    if (mode === "auto") assert.match(stderr.join(""), /approval mode auto is the default mode/);
  });
}

test("canUseTool gets suggestions: allow once or deny", async (t) => {
  const seen = [];
  const { dir, opts, stderr } = qwenSetup(t, "sdk-permissions.yaml", {
    canUseTool: async (toolName, input, options) => {
      seen.push({ toolName, suggestions: options.suggestions });
      return { behavior: "allow", updatedInput: input };
    },
  });
  const messages = await collect(qwenQuery({ prompt: "Write some notes.", options: opts }));
  assert.equal(seen.length, 1, `stderr: ${stderr.join("")}`);
  assert.equal(seen[0].toolName, "write_file");
  assert.deepEqual(seen[0].suggestions.map((s) => s.type), ["allow", "deny"]);
  assert.ok(seen[0].suggestions.every((s) => typeof s.label === "string" && s.label !== ""));
  assert.equal(existsSync(join(dir, "notes.txt")), true);
  assert.equal(results(messages).at(-1).subtype, "success");
});

test("canUseTool denies: the tool is refused with the app's message", async (t) => {
  const { dir, opts } = qwenSetup(t, "sdk-permissions.yaml", {
    canUseTool: async () => ({ behavior: "deny", message: "no writes in this test" }),
  });
  const messages = await collect(qwenQuery({ prompt: "Write some notes.", options: opts }));
  assert.equal(existsSync(join(dir, "notes.txt")), false);
  assert.match(results(messages).at(-1).result, /no writes in this test/);
  assert.deepEqual(results(messages).at(-1).permission_denials.map((d) => d.tool_name), ["write_file"]);
});

test("excludeTools takes tools away and refuses matching calls, even in yolo mode", async (t) => {
  const { dir, opts, stderr } = qwenSetup(t, "sdk-tools.yaml", {
    permissionMode: "yolo",
    excludeTools: ["write_file", "run_shell_command(rm *)"],
  });
  writeFileSync(join(dir, "keep.txt"), "keep\n");
  const messages = await collect(qwenQuery({ prompt: "Write notes, then tidy up.", options: opts }));
  const tools = ofType(messages, "system", "init")[0].tools;
  assert.ok(!tools.includes("write_file") && tools.includes("run_shell_command"), `tools ${tools}\nstderr: ${stderr.join("")}`);
  assert.equal(existsSync(join(dir, "notes.txt")), false);
  assert.equal(existsSync(join(dir, "keep.txt")), true, "the excluded shell command did not run");
  assert.match(results(messages).at(-1).result, /The shell said: .*"rm keep.txt" matches the deny rule/);
});

test("coreTools: only those tools are offered; allowedTools approves without asking", async (t) => {
  const calls = [];
  const { dir, opts } = qwenSetup(t, "sdk-tools.yaml", {
    coreTools: ["read_file", "write_file", "run_shell_command"],
    allowedTools: ["write_file"],
    canUseTool: async (toolName) => {
      calls.push(toolName);
      return { behavior: "deny", message: "not the shell" };
    },
  });
  writeFileSync(join(dir, "keep.txt"), "keep\n");
  const messages = await collect(qwenQuery({ prompt: "Write notes, then tidy up.", options: opts }));
  const tools = ofType(messages, "system", "init")[0].tools.filter((n) => !["task", "send_message", "task_stop", "list_agents"].includes(n));
  assert.deepEqual(tools.sort(), ["read_file", "run_shell_command", "write_file"]);
  assert.deepEqual(calls, ["run_shell_command"], "write_file is allowed by allowedTools");
  assert.equal(existsSync(join(dir, "notes.txt")), true);
  assert.equal(existsSync(join(dir, "keep.txt")), true);
});

test("maxSessionTurns ends a model that never stops", { timeout: 30_000 }, async (t) => {
  const { opts } = qwenSetup(t, "sdk-loop.yaml", { maxSessionTurns: 3 });
  const { messages, err } = await collectAll(qwenQuery({ prompt: "Look around.", options: opts }));
  assert.equal(ofType(messages, "assistant").length, 3, "three model calls, then the cap");
  const rs = results(messages);
  assert.equal(rs.length, 1);
  assert.equal(rs[0].subtype, "error_max_turns");
  assert.match(rs[0].errors.join(" "), /max session turns \(3\)/);
  assert.match(String(err), /exited with code 1/, "the session ended");
});

// stokeRunningIn reports whether a process runs with dir as its working directory (Linux).
function stokeRunningIn(dir) {
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      if (readlinkSync(`/proc/${pid}/cwd`) === dir) return true;
    } catch {
      // gone, or not ours
    }
  }
  return false;
}

test("an initialize request stoke cannot apply: the SDK reports why, and stoke exits", { timeout: 30_000 }, async (t) => {
  const { dir, opts, stderr } = qwenSetup(t, "sdk-chat.yaml", {
    agents: [
      { name: "reviewer", description: "Reviews", systemPrompt: "You review.", level: "session" },
      { name: "reviewer", description: "Reviews again", systemPrompt: "You review again.", level: "session" },
    ],
  });
  await assert.rejects(collect(qwenQuery({ prompt: "hi", options: opts })), /initialize: agents\[1\]: a second agent named "reviewer"/);
  for (let i = 0; i < 100 && stokeRunningIn(dir); i++) await sleep(50);
  assert.equal(stokeRunningIn(dir), false, `stoke still runs\nstderr: ${stderr.join("")}`);
});

test("the nonce scenario through Qwen Code's SDK: one task id, two completed phases", { timeout: 30_000 }, async (t) => {
  const { opts, stderr } = qwenSetup(t, "nonce-memory.yaml");
  const nonce = "NONCE-" + randomBytes(3).toString("hex").toUpperCase();
  const messages = await collect(qwenQuery({ prompt: `Keep ${nonce} safe with a background agent, then ask it for the nonce.`, options: opts }));

  const started = ofType(messages, "system", "task_started");
  assert.deepEqual(started.map((m) => [m.turn, m.continuation]), [[1, "fresh"], [2, "resident"]], `stderr: ${stderr.join("")}`);
  assert.equal(started[0].task_id, started[1].task_id, "one task id across both turns");
  const notes = ofType(messages, "system", "task_notification");
  assert.deepEqual(notes.map((m) => [m.task_id, m.status, m.turn]),
    [[started[0].task_id, "completed", 1], [started[0].task_id, "completed", 2]]);
  assert.equal(notes[1].summary, nonce);
  const rs = results(messages);
  assert.ok(rs.every((r) => r.subtype === "success"), JSON.stringify(rs));
  assert.equal(rs.at(-1).result, `The agent remembered the nonce: ${nonce}`);
});

test("an in-process MCP server of Qwen Code's SDK answers through the control protocol", { timeout: 30_000 }, async (t) => {
  const calls = [];
  const calc = createSdkMcpServer({
    name: "calc", version: "1.0.0",
    tools: [qwenTool("add", "Add two numbers", { a: z3.number(), b: z3.number() }, async ({ a, b }) => {
      calls.push([a, b]);
      return { content: [{ type: "text", text: String(a + b) }] };
    })],
  });
  const { opts, stderr } = qwenSetup(t, "sdk-mcp.yaml", { mcpServers: { calc }, allowedTools: ["mcp__calc__add"] });
  const messages = await collect(qwenQuery({ prompt: "Add 2 and 3", options: opts }));
  assert.deepEqual(calls, [[2, 3]], `stderr: ${stderr.filter((l) => !l.includes("[DEBUG]")).join("")}`);
  assert.equal(results(messages).at(-1).result, "The tool said: 5");
  assert.deepEqual(ofType(messages, "system", "init")[0].mcp_servers, [{ name: "calc", status: "connected" }]);
});

test("every control request of Qwen Code's SDK is answered or refused, and the session goes on", { timeout: 60_000 }, async (t) => {
  const { opts } = qwenSetup(t, "sdk-chat.yaml");
  const { prompt, release } = held([userMessage("remember apple")], [userMessage("now banana")]);
  const q = qwenQuery({ prompt, options: opts });
  const answers = {};
  const calls = [
    ["interrupt", () => q.interrupt()],
    ["setPermissionMode", () => q.setPermissionMode("auto-edit")],
    ["setModel", () => q.setModel("scripted-sdk")],
    ["mcpServerStatus", () => q.mcpServerStatus()],
    ["continueLastTurn", () => q.continueLastTurn()],
    ["getContextUsage", () => q.getContextUsage()],
    ["setEffort", () => q.setEffort("low")],
    ["getAvailableModels", () => q.getAvailableModels()],
    ["getUsageInfo", () => q.getUsageInfo()],
    ["supportedCommands", () => q.supportedCommands()],
  ];
  const messages = [];
  for await (const m of q) {
    messages.push(m);
    if (m.type !== "result" || results(messages).length !== 1) continue;
    // Between the two turns: nothing runs, so the interrupt interrupts nothing.
    for (const [name, call] of calls) {
      answers[name] = await Promise.race([
        call().then(() => "answered", (e) => `refused: ${e.message}`),
        sleep(10_000).then(() => "no answer"),
      ]);
    }
    release();
  }
  const rs = results(messages);
  for (const name of ["interrupt", "setPermissionMode", "setModel", "mcpServerStatus"]) {
    assert.equal(answers[name], "answered", `${name}: ${answers[name]}`);
  }
  for (const name of ["continueLastTurn", "getContextUsage", "setEffort", "getAvailableModels", "getUsageInfo", "supportedCommands"]) {
    assert.match(answers[name], /^refused: Unsupported control request subtype: \w+/, name);
  }
  assert.deepEqual(rs.map((r) => r.result), ["First: apple", "Second: banana, after apple"]);
});
