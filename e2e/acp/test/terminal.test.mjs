// terminal/*: with the client's terminals, the shell tool runs its commands there, as
// stoke would run them (its environment, secrets kept out), shown in the tool call.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { workspace, start, text } from "../harness.mjs";

// terminals is a client's side of terminal/*: each command run as a child process.
function terminals() {
  const all = new Map();
  let n = 0;
  return {
    created: [],
    handlers: {
      create: (p) => {
        const id = `term-${++n}`;
        const child = spawn(p.command, p.args ?? [], { cwd: p.cwd ?? undefined, env: { PATH: process.env.PATH, OPENAI_API_KEY: "sk-in-the-editor" } });
        const t = { output: "", exit: null };
        t.exited = new Promise((res) => child.on("exit", (code, signal) => res((t.exit = { exitCode: code, signal }))));
        child.stdout.on("data", (d) => (t.output += d));
        child.stderr.on("data", (d) => (t.output += d));
        t.child = child;
        all.set(id, t);
        return { terminalId: id };
      },
      wait: async (p) => all.get(p.terminalId).exited,
      output: (p) => {
        const t = all.get(p.terminalId);
        return { output: t.output, truncated: false, exitStatus: t.exit };
      },
      kill: (p) => (all.get(p.terminalId).child.kill("SIGKILL"), {}),
      release: (p) => (all.delete(p.terminalId), {}),
    },
  };
}

test("the shell tool runs in the client's terminal when it offers terminals", { timeout: 30_000 }, async (t) => {
  const w = workspace(t);
  const term = terminals();
  const created = [];
  const s = start(t, w, "acp-shell.yaml", {
    env: { OPENAI_API_KEY: "sk-stoke-must-not-pass-this-on" },
    capabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: true },
    handlers: { terminal: { ...term.handlers, create: (p) => (created.push(p), term.handlers.create(p)) } },
  });
  await s.initialize();
  const { sessionId: id } = await s.agent.request("session/new", { cwd: w.project, mcpServers: [] });
  await s.agent.request("session/set_mode", { sessionId: id, modeId: "yolo" });
  assert.equal((await s.agent.request("session/prompt", { sessionId: id, prompt: [{ type: "text", text: "Run the check" }] })).stopReason, "end_turn");
  assert.equal(created.length, 1, "one terminal");
  const c = created[0];
  assert.equal(c.sessionId, id);
  assert.equal(c.cwd, w.project);
  assert.deepEqual([c.command, c.args[0]], ["env", "-i"], "the environment is stoke's, not the terminal's");
  assert.deepEqual(c.args.slice(-3), ["bash", "-c", "echo checked-$((40+2)); echo secret=${OPENAI_API_KEY:-unset}"]);
  assert.ok(!c.args.some((a) => a.startsWith("OPENAI_API_KEY=")), "the provider key is kept out");
  assert.match(text(s.updates(id)), /The shell said: checked-42\nsecret=unset\n\[exit code 0\]/);
  const shown = s.updates(id).find((u) => u.sessionUpdate === "tool_call_update" && u.content?.[0]?.type === "terminal");
  assert.equal(shown?.content[0].terminalId, "term-1", "the tool call shows the terminal");
  await s.stop();
  assert.equal((await s.exited).code, 0, s.stderr.join(""));
});
