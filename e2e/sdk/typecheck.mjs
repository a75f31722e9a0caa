// typecheck.mjs CORPUS_DIR: checks every message the suite recorded (harness.mjs writes
// <sdk>-<test file>.jsonl there) against the SDK's own TypeScript declarations, with the
// TypeScript compiler pinned in package.json: Claude Agent SDK messages against its
// sdk.d.ts (SDKSystemMessage for system/init, SDKAssistantMessage, SDKResultMessage, ...),
// Qwen Code SDK messages against its index.d.ts. A message's keys must have the declared
// types and its required keys must be there; keys the declarations do not name (stoke's
// own: turn, continuation, stoke_version, ...) are allowed, as they are to a TypeScript
// consumer that reads the object. It exits 1 with one line per error, naming the file
// and line of the message, or when the corpus lacks a message kind it must cover.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";

const dir = process.argv[2];
if (!dir) {
  console.error("usage: node typecheck.mjs CORPUS_DIR");
  process.exit(2);
}

// The declared type of each message kind; other kinds are checked against the union.
const claudeTypes = {
  "system/init": "SDKSystemMessage",
  "system/api_retry": "SDKAPIRetryMessage",
  "system/task_started": "SDKTaskStartedMessage",
  "system/task_progress": "SDKTaskProgressMessage",
  "system/task_notification": "SDKTaskNotificationMessage",
  "system/session_state_changed": "SDKSessionStateChangedMessage",
  assistant: "SDKAssistantMessage",
  user: "SDKUserMessage",
  result: "SDKResultMessage",
  stream_event: "SDKPartialAssistantMessage",
};
const qwenTypes = {
  system: "SDKSystemMessage",
  assistant: "SDKAssistantMessage",
  user: "SDKUserMessage",
  result: "SDKResultMessage",
  stream_event: "SDKPartialAssistantMessage",
};

// The kinds the corpus must hold, so that a suite that stopped producing them fails here.
const required = {
  claude: ["system/init", "assistant", "user", "result/success", "result/error_during_execution", "result/error_max_turns", "result/error_max_budget_usd",
    "result/error_max_structured_output_retries", "stream_event",
    "system/task_started", "system/task_progress", "system/task_notification"],
  qwen: ["system/init", "assistant", "user", "result/success", "result/error_max_turns", "system/task_started", "system/task_notification"],
};

const kindOf = (m) => (m.type === "system" || m.type === "result" ? `${m.type}/${m.subtype}` : m.type);

const lines = ["import type * as claude from \"@anthropic-ai/claude-agent-sdk\";",
  "import type * as qwen from \"@qwen-code/sdk\";",
  "function is<T>() { return <const V extends T>(v: V): V => v; }"];
const origin = new Map(); // generated line -> "file:line kind"
const seen = { claude: new Map(), qwen: new Map() };
const files = readdirSync(dir).filter((f) => f.endsWith(".jsonl")).sort();
for (const file of files) {
  const sdk = file.startsWith("qwen-") ? "qwen" : "claude";
  const text = readFileSync(join(dir, file), "utf8");
  text.split("\n").forEach((raw, i) => {
    if (!raw.trim()) return;
    const m = JSON.parse(raw);
    const kind = kindOf(m);
    seen[sdk].set(kind, (seen[sdk].get(kind) ?? 0) + 1);
    const types = sdk === "qwen" ? qwenTypes : claudeTypes;
    const type = types[kind] ?? types[m.type] ?? "SDKMessage";
    origin.set(lines.length, `${file}:${i + 1} ${kind}`);
    lines.push(`is<${sdk}.${type}>()(${raw});`);
  });
}

const missing = [];
for (const [sdk, kinds] of Object.entries(required)) {
  for (const k of kinds) if (!seen[sdk].has(k)) missing.push(`${sdk} ${k}`);
}

const work = mkdtempSync(join(import.meta.dirname, ".typecheck-"));
let failed = 0;
try {
  const file = join(work, "corpus.mts");
  writeFileSync(file, lines.join("\n") + "\n");
  const program = ts.createProgram([file], {
    strict: true, noEmit: true, skipLibCheck: true, types: [],
    target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext,
  });
  for (const d of ts.getPreEmitDiagnostics(program)) {
    failed++;
    const text = ts.flattenDiagnosticMessageText(d.messageText, "\n  ");
    if (d.file && d.file.fileName === file) {
      const { line } = d.file.getLineAndCharacterOfPosition(d.start ?? 0);
      console.error(`${origin.get(line) ?? `corpus line ${line + 1}`}: ${text}`);
    } else {
      console.error(`${d.file?.fileName ?? "tsc"}: ${text}`);
    }
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
for (const [sdk, kinds] of Object.entries(seen)) {
  const total = [...kinds.values()].reduce((a, b) => a + b, 0);
  console.log(`${sdk}: ${total} messages: ${[...kinds].map(([k, n]) => `${k} ${n}`).join(", ")}`);
}
if (missing.length > 0) {
  console.error(`the corpus lacks: ${missing.join(", ")}`);
}
if (failed > 0 || missing.length > 0) {
  process.exit(1);
}
