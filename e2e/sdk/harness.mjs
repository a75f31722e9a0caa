// Shared set-up of the Claude Agent SDK suite: every test drives the stoke binary named by
// $STOKE_BIN (built by `make sdk-test`, or by sdk_test.go) through the official SDK's
// query(), with pathToClaudeCodeExecutable, on the scripted model. The scenario reaches
// stoke through the environment (STOKE_SCENARIO), as an app would pass a provider's
// settings; options.env replaces the host environment, so everything stoke needs is in it.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { query } from "@anthropic-ai/claude-agent-sdk";

export const stokeBin = process.env.STOKE_BIN;
if (!stokeBin) {
  throw new Error("STOKE_BIN is not set: run the suite with `make sdk-test`");
}
export const scenarios = resolve(process.env.STOKE_SCENARIOS ?? join(import.meta.dirname, "..", "..", "scenarios"));

// workspace makes an empty working directory and $STOKE_HOME, removed after the test.
export function workspace(t) {
  const dir = mkdtempSync(join(tmpdir(), "stoke-sdk-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

// setup makes a workspace and returns query() options that run stoke in it on a scenario
// of scenarios/, and the stderr lines stoke wrote (for messages on failure).
export function setup(t, scenario, extra = {}) {
  const dir = workspace(t);
  const stderr = [];
  const env = {
    PATH: process.env.PATH,
    HOME: dir,
    STOKE_HOME: join(dir, ".stoke"),
    STOKE_PROVIDER: "scripted",
    STOKE_SCENARIO: join(scenarios, scenario),
    ...(process.env.GOCOVERDIR ? { GOCOVERDIR: process.env.GOCOVERDIR } : {}),
    ...(extra.env ?? {}),
  };
  const opts = {
    pathToClaudeCodeExecutable: stokeBin,
    cwd: dir,
    stderr: (s) => stderr.push(s),
    ...extra,
    env,
  };
  return { dir, opts, stderr };
}

// collect runs a query to its end and returns every message it yielded.
export async function collect(q) {
  const out = [];
  for await (const m of q) out.push(m);
  return out;
}

// run is query() + collect() with a string prompt.
export async function run(prompt, opts) {
  const q = query({ prompt, options: opts });
  return { q, messages: await collect(q) };
}

export const results = (ms) => ms.filter((m) => m.type === "result");
export const ofType = (ms, type, subtype) => ms.filter((m) => m.type === type && (subtype === undefined || m.subtype === subtype));

// userMessage is one message of a streaming prompt, as apps write them.
export function userMessage(text) {
  return { type: "user", message: { role: "user", content: text }, parent_tool_use_id: null, session_id: "" };
}

// gate is a promise the test resolves later, to pace a streaming prompt.
export function gate() {
  let open;
  const p = new Promise((r) => (open = r));
  return { wait: () => p, open };
}

export { query };
