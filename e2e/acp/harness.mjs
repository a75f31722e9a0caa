// Shared set-up of the ACP suite: every test starts `stoke --acp` (the binary $STOKE_BIN,
// built by acp_test.go) on the scripted model and drives it through the official ACP
// TypeScript client (@agentclientprotocol/sdk: client(), connect(), ctx.request). The
// messages stoke writes are read here, one JSON line each, and every one is checked
// against the ACP JSON schema the client package ships (schema/v1/schema.json, the
// "Agent" side of its messages) with ajv before the client sees it: a message that does
// not validate fails the test that received it.
import { spawn } from "node:child_process";
import { mkdtempSync, mkdirSync, rmSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import * as acp from "@agentclientprotocol/sdk";
import { Ajv2020 } from "ajv/dist/2020.js";

export const stokeBin = process.env.STOKE_BIN;
if (!stokeBin) {
  throw new Error("STOKE_BIN is not set: run the suite with `make acp-test` (or go test ./e2e/acp)");
}
export const scenarios = resolve(process.env.STOKE_SCENARIOS ?? join(import.meta.dirname, "..", "..", "scenarios"));

const require = createRequire(import.meta.url);
const schema = JSON.parse(await readFile(require.resolve("@agentclientprotocol/sdk/schema/v1/schema.json"), "utf8"));

// The schema's validators: the "Agent" branch (any message an agent sends), and for each
// method the definition of its params and of its result, found by their x-method
// annotations (SessionNotification is session/update's params, InitializeResponse is
// initialize's result, ...). The Agent branch alone would take any params (its union
// ends with the extension methods' catch-all), so each message is also checked against
// its method's own definition.
const validators = (() => {
  const agentSide = schema.anyOf.find((s) => s.title === "Agent");
  if (!agentSide) throw new Error("the ACP schema has no Agent branch");
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
  ajv.addSchema({ ...schema, anyOf: [agentSide] }, "acp");
  const def = (name) => ajv.getSchema(`acp#/$defs/${name}`);
  const params = {}; // method -> validator of the params stoke sends (requests, notifications)
  const results = {}; // method -> validator of the result stoke answers with
  for (const [name, d] of Object.entries(schema.$defs)) {
    const method = d["x-method"];
    if (!method) continue;
    if (d["x-side"] === "client" && /(Request|Notification)$/.test(name)) params[method] = def(name);
    if (d["x-side"] === "agent" && /Response$/.test(name)) results[method] = def(name);
  }
  return { message: ajv.getSchema("acp"), error: def("Error"), params, results };
})();

// check returns why msg, a message stoke sent, is not valid ACP ("" when it is); sent maps
// the ids of the client's requests to their methods.
function check(msg, sent) {
  const errs = [];
  const run = (v, x, what) => {
    if (!v) return errs.push(`${what}: no schema definition`);
    if (!v(x)) errs.push(`${what}: ${JSON.stringify(v.errors).slice(0, 1500)}`);
  };
  run(validators.message, msg, "message");
  if (msg.method) {
    if (msg.method !== "$/cancel_request") run(validators.params[msg.method], msg.params, `params of ${msg.method}`);
  } else if (msg.error) {
    run(validators.error, msg.error, "error");
  } else {
    const method = sent.get(msg.id);
    run(validators.results[method], msg.result, `result of ${method}`);
  }
  return errs.join("; ");
}

// workspace makes an empty directory (a project) and $STOKE_HOME beside it, removed
// after the test: {root, home, dir(name)} where dir makes another project directory.
export function workspace(t) {
  const root = mkdtempSync(join(tmpdir(), "stoke-acp-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const dir = (name) => {
    const d = join(root, name);
    mkdirSync(d, { recursive: true });
    return d;
  };
  return { root, home: join(root, ".stoke"), project: dir("project"), dir };
}

// start runs `stoke --acp` on a scenario of scenarios/, in w.project with $STOKE_HOME
// w.home, and connects the ACP client to it. handlers: {permission(params) -> response,
// readTextFile(params), writeTextFile(params), terminal: {create, output, wait, kill,
// release}} for the client's side; updates are
// collected per session. Returns {agent, updates(sessionId), messages, stderr, exited,
// stop}. The test fails if stoke sent a message that the schema refuses.
export function start(t, w, scenario, { args = [], env = {}, handlers = {}, capabilities } = {}) {
  const child = spawn(stokeBin, ["--acp", ...args], {
    cwd: w.project,
    env: {
      PATH: process.env.PATH,
      HOME: w.root,
      STOKE_HOME: w.home,
      STOKE_PROVIDER: "scripted",
      STOKE_SCENARIO: resolve(scenarios, scenario),
      ...(process.env.GOCOVERDIR ? { GOCOVERDIR: process.env.GOCOVERDIR } : {}),
      ...env,
    },
    stdio: ["pipe", "pipe", "pipe"],
  });
  const stderr = [];
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (s) => stderr.push(s));
  const exited = new Promise((res) => child.on("exit", (code, signal) => res({ code, signal })));
  const messages = []; // everything stoke sent, parsed
  const invalid = [];
  const sent = new Map(); // the client's requests: id -> method
  const readable = new ReadableStream({
    start(controller) {
      let buf = "";
      child.stdout.setEncoding("utf8");
      child.stdout.on("data", (chunk) => {
        buf += chunk;
        for (let i = buf.indexOf("\n"); i >= 0; i = buf.indexOf("\n")) {
          const line = buf.slice(0, i);
          buf = buf.slice(i + 1);
          if (!line.trim()) continue;
          const msg = JSON.parse(line);
          messages.push(msg);
          const why = check(msg, sent);
          if (why) invalid.push({ msg, why });
          controller.enqueue(msg);
        }
      });
      child.stdout.on("end", () => controller.close());
    },
  });
  const writable = new WritableStream({
    write(msg) {
      if (msg.method && msg.id !== undefined) sent.set(msg.id, msg.method);
      return new Promise((res, rej) => child.stdin.write(JSON.stringify(msg) + "\n", (err) => (err ? rej(err) : res())));
    },
    close() {
      child.stdin.end();
    },
  });
  const updates = new Map(); // sessionId -> [update]
  const waiters = [];
  const app = acp
    .client({ name: "stoke-acp-e2e" })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      const list = updates.get(params.sessionId) ?? [];
      list.push(params.update);
      updates.set(params.sessionId, list);
      for (const w of waiters.slice()) w();
    })
    .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
      if (!handlers.permission) throw new Error("unexpected session/request_permission");
      return handlers.permission(params);
    })
    .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => {
      if (!handlers.readTextFile) throw new Error("unexpected fs/read_text_file");
      return handlers.readTextFile(params);
    })
    .onRequest(acp.methods.client.fs.writeTextFile, ({ params }) => {
      if (!handlers.writeTextFile) throw new Error("unexpected fs/write_text_file");
      return handlers.writeTextFile(params);
    });
  for (const [name, method] of Object.entries({ create: "create", output: "output", wait: "waitForExit", kill: "kill", release: "release" })) {
    app.onRequest(acp.methods.client.terminal[method], ({ params }) => {
      if (!handlers.terminal?.[name]) throw new Error(`unexpected terminal/${method}`);
      return handlers.terminal[name](params);
    });
  }
  const conn = app.connect({ readable, writable });
  let stopped = false;
  const stop = async () => {
    if (stopped) return exited;
    stopped = true;
    child.stdin.end();
    return exited;
  };
  t.after(async () => {
    if (!stopped) {
      child.kill("SIGKILL");
      await exited;
    }
    if (invalid.length > 0) {
      throw new Error(`stoke sent ${invalid.length} message(s) the ACP schema refuses; the first:\n${JSON.stringify(invalid[0], null, 1).slice(0, 4000)}`);
    }
  });
  const initialize = () =>
    conn.agent.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: capabilities ?? { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
      clientInfo: { name: "stoke-acp-e2e", version: "1.0.0" },
    });
  // until resolves once pred(updates of sessionId) holds.
  const until = (sessionId, pred) =>
    new Promise((res) => {
      const check = () => {
        if (pred(updates.get(sessionId) ?? [])) {
          waiters.splice(waiters.indexOf(check), 1);
          res();
        }
      };
      waiters.push(check);
      check();
    });
  return { agent: conn.agent, conn, initialize, updates: (id) => updates.get(id) ?? [], until, messages, invalid, stderr, exited, stop };
}

// text joins the agent_message_chunk texts of updates.
export function text(updates) {
  return updates
    .filter((u) => u.sessionUpdate === "agent_message_chunk" && u.content.type === "text")
    .map((u) => u.content.text)
    .join("");
}

// agentTurns are the tool calls of background agents' turns (task_started): [{taskId,
// turn, continuation}], in order.
export function agentTurns(updates) {
  return updates
    .filter((u) => u.sessionUpdate === "tool_call" && u._meta?.stoke?.taskId)
    .map((u) => u._meta.stoke);
}

// settled returns the tool_call_update that completed (or failed) the tool call id, or
// undefined.
export function settled(updates, id) {
  return updates.find((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === id && (u.status === "completed" || u.status === "failed"));
}

// turnCallId is the tool call id of a background agent's turn.
export const turnCallId = (taskId, turn) => `${taskId}-turn-${turn}`;

// since returns the updates after the first n.
export const since = (updates, n) => updates.slice(n);
