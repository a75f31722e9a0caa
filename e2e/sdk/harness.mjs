// Shared set-up of the SDK suite: every test drives the stoke binary named by $STOKE_BIN
// (built by sdk_test.go) through an SDK's public API on the scripted model: the official
// Claude Agent SDK's query() with pathToClaudeCodeExecutable, or Qwen Code's SDK's
// query() with pathToQwenExecutable. The scenario reaches stoke through the environment
// (STOKE_SCENARIO), as an app would pass a provider's settings; the Claude SDK's
// options.env replaces the host environment, so everything stoke needs is in it.
//
// Every message an SDK yields is appended to $STOKE_SDK_CORPUS/<sdk>-<test file>.jsonl
// when that is set; typecheck.mjs then checks the corpus against the SDK's own types.
import { appendFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { query as claudeQuery } from "@anthropic-ai/claude-agent-sdk";
import { query as qwenSDKQuery } from "@qwen-code/sdk";

export const stokeBin = process.env.STOKE_BIN;
if (!stokeBin) {
  throw new Error("STOKE_BIN is not set: run the suite with `make sdk-test`");
}
export const scenarios = resolve(process.env.STOKE_SCENARIOS ?? join(import.meta.dirname, "..", "..", "scenarios"));
export const testdata = join(import.meta.dirname, "testdata");

// workspace makes an empty working directory and, beside it, $STOKE_HOME (stokeHome):
// stoke refuses a STOKE_HOME inside its working directory. Both are removed after the test.
export function workspace(t) {
  const dir = mkdtempSync(join(tmpdir(), "stoke-sdk-"));
  t.after(() => {
    rmSync(dir, { recursive: true, force: true });
    rmSync(stokeHome(dir), { recursive: true, force: true });
  });
  return dir;
}

// stokeHome is the $STOKE_HOME of the workspace dir.
export function stokeHome(dir) {
  return dir + "-home";
}

// stokeEnv is the environment stoke runs with in a workspace, on a scenario of scenarios/
// (an absolute path is kept).
export function stokeEnv(dir, scenario, extra = {}) {
  return {
    PATH: process.env.PATH,
    HOME: dir,
    STOKE_HOME: stokeHome(dir),
    STOKE_PROVIDER: "scripted",
    STOKE_SCENARIO: resolve(scenarios, scenario),
    ...(process.env.GOCOVERDIR ? { GOCOVERDIR: process.env.GOCOVERDIR } : {}),
    ...extra,
  };
}

// setup makes a workspace and returns Claude Agent SDK query() options that run stoke in
// it on a scenario, and the stderr lines stoke wrote (for messages on failure).
export function setup(t, scenario, extra = {}) {
  const dir = workspace(t);
  const stderr = [];
  const opts = {
    pathToClaudeCodeExecutable: stokeBin,
    cwd: dir,
    stderr: (s) => stderr.push(s),
    ...extra,
    env: stokeEnv(dir, scenario, extra.env),
  };
  return { dir, opts, stderr };
}

// qwenSetup is setup for Qwen Code's SDK: pathToQwenExecutable, and the environment
// stoke needs (the Qwen SDK adds it to the host's). The SDK hands stoke's stderr to the
// stderr callback at log level debug only (with its own debug lines).
export function qwenSetup(t, scenario, extra = {}) {
  const dir = workspace(t);
  const stderr = [];
  const opts = {
    pathToQwenExecutable: stokeBin,
    cwd: dir,
    stderr: (s) => stderr.push(s),
    logLevel: "debug",
    ...extra,
    env: stokeEnv(dir, scenario, extra.env),
  };
  return { dir, opts, stderr };
}

// record appends a message an SDK yielded to the corpus.
function record(sdk, m) {
  const dir = process.env.STOKE_SDK_CORPUS;
  if (!dir) return;
  const file = join(dir, `${sdk}-${basename(process.argv[1] ?? "unknown", ".test.mjs")}.jsonl`);
  appendFileSync(file, JSON.stringify(m) + "\n");
}

// recorded returns q with every message its iterator yields recorded.
function recorded(q, sdk) {
  async function* iterate(it) {
    for (;;) {
      const r = await it.next();
      if (r.done) return;
      record(sdk, r.value);
      yield r.value;
    }
  }
  return new Proxy(q, {
    get(target, prop) {
      if (prop === Symbol.asyncIterator) return () => iterate(target[Symbol.asyncIterator]());
      const v = Reflect.get(target, prop, target);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
}

// query is the Claude Agent SDK's query(), recorded.
export function query(params) {
  return recorded(claudeQuery(params), "claude");
}

// qwenQuery is Qwen Code's SDK's query(), recorded.
export function qwenQuery(params) {
  return recorded(qwenSDKQuery(params), "qwen");
}

// collect runs a query to its end and returns every message it yielded.
export async function collect(q) {
  const out = [];
  for await (const m of q) out.push(m);
  return out;
}

// collectAll runs a query to its end like collect, but keeps what it yielded when the
// query throws (an SDK ends a query that way on an error result or a failed process):
// {messages, err}.
export async function collectAll(q) {
  const messages = [];
  try {
    for await (const m of q) messages.push(m);
  } catch (err) {
    return { messages, err };
  }
  return { messages, err: undefined };
}

// run is query() + collect() with a string prompt.
export async function run(prompt, opts) {
  const q = query({ prompt, options: opts });
  return { q, messages: await collect(q) };
}

export const results = (ms) => ms.filter((m) => m.type === "result");
export const ofType = (ms, type, subtype) => ms.filter((m) => m.type === type && (subtype === undefined || m.subtype === subtype));

// userMessage is one message of a streaming prompt, as apps write them.
export function userMessage(content) {
  return { type: "user", message: { role: "user", content }, parent_tool_use_id: null, session_id: "" };
}

// gate is a promise the test resolves later, to pace a streaming prompt.
export function gate() {
  let open;
  const p = new Promise((r) => (open = r));
  return { wait: () => p, open };
}

// held is a streaming prompt that yields the messages before, then keeps stdin open
// until release is called, then yields the messages after: the session stays open for
// the test's control requests.
export function held(before, after = []) {
  const g = gate();
  async function* prompt() {
    for (const m of before) yield m;
    await g.wait();
    for (const m of after) yield m;
  }
  return { prompt: prompt(), release: g.open };
}
