// terminal/*: with the client's terminals, the shell tool runs its commands there, as
// stoke would run them (its environment, secrets kept out), shown in the tool call.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { workspace, start, text, stokeBin } from "../harness.mjs";

// enforced reports whether this machine's kernel lets stoke's sandbox confine commands
// (stoke version --json), and why not.
const support = JSON.parse(execFileSync(stokeBin, ["version", "--json"], { encoding: "utf8" })).sandbox ?? {};

// The wrapper's hidden argument (agents/sandbox.WrapArg): the line a terminal runs under
// stoke's sandbox is stoke's binary, this, the policy, then the command.
const wrapArg = "__stoke-sandbox-wrap-v1";

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
  // The sandbox (workspace-write, the default) wraps the line: stoke's binary confines
  // the command in the client's terminal as it would as stoke's own child.
  assert.equal(c.args[0], wrapArg, `the line runs under stoke's sandbox: ${c.command} ${c.args.join(" ")}`);
  const env = c.args.findIndex((a) => a === "env" || a.endsWith("/env"));
  assert.ok(env > 1 && c.args[env + 1] === "-i", "the environment is stoke's, not the terminal's");
  assert.deepEqual(c.args.slice(-3), ["bash", "-c", "echo checked-$((40+2)); echo secret=${OPENAI_API_KEY:-unset}"]);
  assert.ok(!c.args.some((a) => a.startsWith("OPENAI_API_KEY=")), "the provider key is kept out");
  assert.match(text(s.updates(id)), /The shell said: checked-42\nsecret=unset\n\[exit code 0\]/);
  const shown = s.updates(id).find((u) => u.sessionUpdate === "tool_call_update" && u.content?.[0]?.type === "terminal");
  assert.equal(shown?.content[0].terminalId, "term-1", "the tool call shows the terminal");
  await s.stop();
  assert.equal((await s.exited).code, 0, s.stderr.join(""));
});

// outside runs acp-shell-outside.yaml (the command writes ../outside.txt, outside the
// workspace) with stoke's args, the client offering terminals or not, in a session in
// the launch directory or in another project (elsewhere: ../outside.txt is then in the
// launch directory); it returns the terminals created, the parent's text and whether
// the write happened.
async function outside(t, { args = [], terminal, elsewhere = false }) {
  const w = workspace(t);
  const cwd = elsewhere ? w.dir("project/other") : w.project;
  const target = join(cwd, "..", "outside.txt");
  const term = terminals();
  const created = [];
  const s = start(t, w, "acp-shell-outside.yaml", {
    args,
    capabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal },
    handlers: terminal ? { terminal: { ...term.handlers, create: (p) => (created.push(p), term.handlers.create(p)) } } : {},
  });
  await s.initialize();
  const { sessionId: id } = await s.agent.request("session/new", { cwd, mcpServers: [] });
  await s.agent.request("session/set_mode", { sessionId: id, modeId: "yolo" });
  assert.equal((await s.agent.request("session/prompt", { sessionId: id, prompt: [{ type: "text", text: "Write outside" }] })).stopReason, "end_turn");
  const said = text(s.updates(id));
  await s.stop();
  assert.equal((await s.exited).code, 0, s.stderr.join(""));
  return { created, said, planted: existsSync(target) };
}

for (const terminal of [true, false]) {
  const where = terminal ? "in the client's terminal" : "in stoke's own process (no client terminals)";
  test(`the sandbox confines the shell tool's command ${where}; --sandbox off does not`, { timeout: 60_000 }, async (t) => {
    if (!support.enforced) {
      t.skip(`the sandbox cannot be enforced on this kernel: ${support.reason}`);
      return;
    }
    const off = await outside(t, { args: ["--sandbox", "off"], terminal });
    assert.ok(off.planted, `control: with --sandbox off the write happens: ${off.said}`);
    assert.match(off.said, /wrote-outside\n\[exit code 0\]/);
    if (terminal) assert.deepEqual([off.created[0]?.command, off.created[0]?.args[0]], ["env", "-i"], "unwrapped with --sandbox off");

    const on = await outside(t, { terminal });
    assert.ok(!on.planted, `sandboxed, the write outside the workspace happened: ${on.said}`);
    assert.doesNotMatch(on.said, /wrote-outside/);
    assert.match(on.said, /\[sandbox workspace-write: commands write only in the workspace and \$TMPDIR/, "the result says the sandbox refused");
    if (terminal) assert.equal(on.created.length, 1, "the command ran in the client's terminal");
  });
}

// A session in another directory has its own workspace: its commands may not write the
// directory stoke was launched in.
test("a session in another directory cannot write the launch directory; --sandbox off can", { timeout: 60_000 }, async (t) => {
  if (!support.enforced) {
    t.skip(`the sandbox cannot be enforced on this kernel: ${support.reason}`);
    return;
  }
  const off = await outside(t, { args: ["--sandbox", "off"], terminal: false, elsewhere: true });
  assert.ok(off.planted, `control: with --sandbox off the write happens: ${off.said}`);
  const on = await outside(t, { terminal: false, elsewhere: true });
  assert.ok(!on.planted, `sandboxed, a session in another directory wrote the launch directory: ${on.said}`);
  assert.match(on.said, /\[sandbox workspace-write: commands write only in the workspace and \$TMPDIR/);
});
