// The product's proof through an editor's protocol: a background agent keeps a nonce, its
// notification waits for the next prompt, send_message continues it on its resident
// runtime; session/close releases it, session/load brings the roster back (the reminder
// once) and send_message revives it; and so does a new process.
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { workspace, start, text, agentTurns, settled, turnCallId, since } from "../harness.mjs";

// starts counts the parent's calls that start an agent's turn: launches and send_message.
const starts = (us) => us.filter((u) => u.sessionUpdate === "tool_call" && /^(Agent: |Message to agent )/.test(u.title)).length;

// converse prompts session id with first, then with "Any news?" each time every agent
// turn the parent started has opened and settled, until the text answered holds want (at
// most 6 prompts). Every prompt after the first must find a notification waiting: the
// parent takes no turn of its own between prompts, so it reacts only then. Returns the
// updates of the conversation and the prompts' stop reasons.
async function converse(s, id, first, want) {
  const from = s.updates(id).length;
  const stops = [];
  let prompt = first;
  for (let i = 0; i < 6; i++) {
    const n = s.updates(id).length;
    const r = await s.agent.request("session/prompt", { sessionId: id, prompt: [{ type: "text", text: prompt }] });
    stops.push(r.stopReason);
    assert.ok(!text(since(s.updates(id), n)).includes("No news yet."), `prompt ${i + 1} found no notification waiting\nstderr: ${s.stderr.join("")}`);
    if (text(since(s.updates(id), from)).includes(want)) return { updates: since(s.updates(id), from), stops };
    // The notification of the turn running comes as an update whenever it settles.
    await s.until(id, (us) => {
      const turns = agentTurns(since(us, from));
      return turns.length === starts(since(us, from)) && turns.every((t) => settled(us, turnCallId(t.taskId, t.turn)));
    });
    prompt = "Any news?";
  }
  assert.fail(`no answer holding ${want} after 6 prompts: ${text(since(s.updates(id), from))}\nstderr: ${s.stderr.join("")}`);
}

test("the nonce scenario over ACP: resident, then revived after session/close and in a new process, the reminder once", { timeout: 60_000 }, async (t) => {
  const w = workspace(t);
  const nonce = "NONCE-" + randomBytes(3).toString("hex").toUpperCase();
  const s = start(t, w, "acp-nonce.yaml");
  const init = await s.initialize();
  assert.equal(init.protocolVersion, 1);
  assert.equal(init.agentCapabilities.loadSession, true);
  assert.equal(init.agentCapabilities.promptCapabilities.embeddedContext, true);
  assert.deepEqual(init.agentCapabilities.mcpCapabilities, { http: true, sse: true });
  assert.equal(init.agentInfo.name, "stoke");
  assert.ok(init.agentInfo.version, "agentInfo has stoke's version");
  const { sessionId: id } = await s.agent.request("session/new", { cwd: w.project, mcpServers: [] });

  // Phase 1 and 2 in one session: fresh, then resident, on one task id.
  const one = await converse(s, id, `Keep ${nonce} safe with a background agent.`, `The agent remembered the nonce: ${nonce}`);
  assert.ok(one.stops.every((r) => r === "end_turn"), `stop reasons ${one.stops}`);
  const turns = agentTurns(one.updates);
  assert.deepEqual(turns.map((x) => [x.turn, x.continuation]), [[1, "fresh"], [2, "resident"]]);
  assert.equal(turns[0].taskId, turns[1].taskId, "one task id across both turns");
  const taskId = turns[0].taskId;
  assert.equal(settled(one.updates, turnCallId(taskId, 2)).content[0].content.text, nonce, "the second turn's completion says the nonce");
  const launch = one.updates.find((u) => u.sessionUpdate === "tool_call" && u.title === "Agent: Keep a nonce (background)");
  assert.ok(launch, "the launch is a tool call");
  assert.equal(launch.kind, "think");

  // session/close releases the resident runtime; session/load restores the roster, and the
  // reminder (once) makes the parent continue the task, revived from its transcript.
  assert.deepEqual(await s.agent.request("session/close", { sessionId: id }), {});
  await assert.rejects(s.agent.request("session/prompt", { sessionId: id, prompt: [{ type: "text", text: "hello?" }] }),
    (err) => err.code === -32602 && JSON.stringify(err.data).includes("no session"), "a closed session takes no prompt");
  const before = s.updates(id).length;
  await s.agent.request("session/load", { sessionId: id, cwd: w.project, mcpServers: [] });
  const replayed = since(s.updates(id), before);
  assert.ok(replayed.some((u) => u.sessionUpdate === "user_message_chunk" && u.content.text.includes(nonce)), "the first prompt is replayed");
  assert.ok(text(replayed).includes(`The agent remembered the nonce: ${nonce}`), "the answers are replayed");
  assert.ok(!replayed.some((u) => u.sessionUpdate === "user_message_chunk" && u.content.text.includes("<task-notification>")), "no notification is replayed as a user message");
  const two = await converse(s, id, "Ask the agent for the nonce again.", `The revived agent remembered the nonce: ${nonce}`);
  assert.deepEqual(agentTurns(two.updates).map((x) => [x.taskId, x.turn, x.continuation]), [[taskId, 3, "revived"]]);
  const thanks = await s.agent.request("session/prompt", { sessionId: id, prompt: [{ type: "text", text: "Thanks." }] });
  assert.equal(thanks.stopReason, "end_turn");
  const lists = since(s.updates(id), before).filter((u) => u.sessionUpdate === "tool_call" && u.title === "List agents");
  assert.equal(lists.length, 1, "the reminder came once: one list_agents");
  await s.stop();
  assert.deepEqual(await s.exited, { code: 0, signal: null }, s.stderr.join(""));

  // A new process: session/load, the reminder, revived again on the same task id.
  const p2 = start(t, w, "acp-nonce.yaml");
  await p2.initialize();
  const listed = await p2.agent.request("session/list", { cwd: w.project });
  assert.deepEqual(listed.sessions.map((x) => x.sessionId), [id]);
  await p2.agent.request("session/load", { sessionId: id, cwd: w.project, mcpServers: [] });
  const loaded = p2.updates(id).length; // the replay (of process 1's list_agents too)
  const three = await converse(p2, id, "Ask the agent for the nonce again.", `The revived agent remembered the nonce: ${nonce}`);
  assert.deepEqual(agentTurns(three.updates).map((x) => [x.taskId, x.turn, x.continuation]), [[taskId, 4, "revived"]]);
  await p2.agent.request("session/prompt", { sessionId: id, prompt: [{ type: "text", text: "Thanks." }] });
  assert.equal(since(p2.updates(id), loaded).filter((u) => u.sessionUpdate === "tool_call" && u.title === "List agents").length, 1, "the reminder came once");
  await p2.stop();
  assert.deepEqual(await p2.exited, { code: 0, signal: null }, p2.stderr.join(""));
});

test("a session loaded under another working directory releases its residents: the next send_message revives", { timeout: 60_000 }, async (t) => {
  const w = workspace(t);
  const nonce = "NONCE-" + randomBytes(3).toString("hex").toUpperCase();
  const s = start(t, w, "acp-nonce.yaml");
  await s.initialize();
  const { sessionId: id } = await s.agent.request("session/new", { cwd: w.project, mcpServers: [] });
  const one = await converse(s, id, `Keep ${nonce} safe with a background agent.`, `The agent remembered the nonce: ${nonce}`);
  const taskId = agentTurns(one.updates)[0].taskId;
  await s.agent.request("session/load", { sessionId: id, cwd: w.dir("elsewhere"), mcpServers: [] });
  const two = await converse(s, id, `Ask agent ${taskId} for the nonce again.`, `The revived agent remembered the nonce: ${nonce}`);
  assert.deepEqual(agentTurns(two.updates).map((x) => [x.turn, x.continuation]), [[3, "revived"]], "the resident runtime was released");
  await s.stop();
  assert.equal((await s.exited).code, 0, s.stderr.join(""));
});

test("two sessions in one process, in two directories, stay apart", { timeout: 60_000 }, async (t) => {
  const w = workspace(t);
  const s = start(t, w, "acp-nonce.yaml");
  await s.initialize();
  const dirs = [w.dir("alpha"), w.dir("beta")];
  const nonces = dirs.map(() => "NONCE-" + randomBytes(3).toString("hex").toUpperCase());
  const ids = [];
  for (const cwd of dirs) ids.push((await s.agent.request("session/new", { cwd, mcpServers: [] })).sessionId);
  assert.notEqual(ids[0], ids[1]);
  const runs = await Promise.all(ids.map((id, i) => converse(s, id, `Keep ${nonces[i]} safe with a background agent.`, `The agent remembered the nonce: ${nonces[i]}`)));
  for (const [i, run] of runs.entries()) {
    const other = nonces[1 - i];
    assert.ok(!JSON.stringify(s.updates(ids[i])).includes(other), `session ${i} never saw the other session's nonce`);
    assert.deepEqual(agentTurns(run.updates).map((x) => x.continuation), ["fresh", "resident"]);
    const listed = await s.agent.request("session/list", { cwd: dirs[i] });
    assert.deepEqual(listed.sessions.map((x) => [x.sessionId, x.cwd]), [[ids[i], dirs[i]]], "each session is stored under its own directory");
  }
  const tasks = runs.map((r) => agentTurns(r.updates)[0].taskId);
  assert.notEqual(tasks[0], tasks[1], "each session has its own registry");
  await s.stop();
  assert.equal((await s.exited).code, 0, s.stderr.join(""));
});
