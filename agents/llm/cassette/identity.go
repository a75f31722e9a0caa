package cassette

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"sync"

	"github.com/stoke-cli/stoke/agents/llm"
)

// Agent identity. A call is keyed by who made it and its index among that agent's calls.
// The parent is "parent". A subagent is its type and its launch: the position of the
// tool call that launched it in the launcher's replies ("parent/1.2": the parent's call
// 1, tool call 2). Positions, unlike the order in which concurrent launches reach the
// registry, are the same in every replay of a recording: the replies are the recorded
// ones. The registry marks each subagent turn's context with its task id
// (llm.WithTaskID), and the task id comes from the launch (NewTaskID), so a call is
// matched to its agent even when several agents of one type run at once.
//
// Task ids are derived from the cassette's seed and the launch, so that a replay gives
// every task the id it had when recorded: the replies that name them (send_message,
// task collects) stay valid.

// launches tracks the run's tool calls and tasks. It is safe for concurrent use.
type launches struct {
	seed []byte

	mu       sync.Mutex
	toolUses map[string]string // tool_use id -> launch key
	tasks    map[string]string // task id -> launch key
	unkeyed  int
}

func newLaunches(seed []byte) *launches {
	return &launches{seed: seed, toolUses: make(map[string]string), tasks: make(map[string]string)}
}

// sawToolCall records that the call-th call of who asked for a tool call with id at
// position pos (from 1) of its reply.
func (l *launches) sawToolCall(who identity, call, pos int, id string) {
	if id == "" {
		return
	}
	key := who.String() + "/" + strconv.Itoa(call) + "." + strconv.Itoa(pos)
	l.mu.Lock()
	l.toolUses[id] = key
	l.mu.Unlock()
}

// newTaskID returns the id of the task launched by the tool call toolUseID: a hash of the
// seed and the launch. A launch that no recorded tool call made (an SDK host's, say) is
// keyed by how many such launches came before it.
func (l *launches) newTaskID(toolUseID string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	key, ok := l.toolUses[toolUseID]
	if !ok || toolUseID == "" {
		l.unkeyed++
		key = "launch/" + strconv.Itoa(l.unkeyed)
	}
	sum := sha256.Sum256(append(append([]byte(nil), l.seed...), key...))
	id := "a" + hex.EncodeToString(sum[:8])
	l.tasks[id] = key
	return id
}

// identify names the agent making req under ctx.
func (l *launches) identify(ctx context.Context, req *llm.Request) identity {
	agent := req.Agent
	if agent == "" {
		agent = "agent"
	}
	task := llm.TaskIDFrom(ctx)
	if task == "" {
		return identity{agent: agent}
	}
	l.mu.Lock()
	key, ok := l.tasks[task]
	l.mu.Unlock()
	if !ok {
		key = "id/" + task // a task this run did not launch (restored from disk)
	}
	return identity{agent: agent, task: key}
}

// agentState is what a recording or a replay keeps of one agent. Its calls never
// overlap, but mu guards it in case two agents share an identity (calls made outside any
// task).
type agentState struct {
	mu    sync.Mutex
	calls int
	h     *hasher
	// what the agent's previous entry outlined (the recorder writes only changes)
	system string
	tools  []string
}

// agentTable holds the state of every agent of the run. It is safe for concurrent use.
type agentTable struct {
	norm *normaliser

	mu sync.Mutex
	m  map[identity]*agentState
}

func newAgentTable(norm *normaliser) *agentTable {
	return &agentTable{norm: norm, m: make(map[identity]*agentState)}
}

// get returns who's state, made on first use.
func (t *agentTable) get(who identity) *agentState {
	t.mu.Lock()
	defer t.mu.Unlock()
	a := t.m[who]
	if a == nil {
		a = &agentState{h: newHasher(t.norm)}
		t.m[who] = a
	}
	return a
}

// begun is a call as a recording or a replay first sees it: who made it, its index among
// that agent's calls, and its request's fingerprint (keep: the messages it shares with the
// agent's previous request). The agent's state stays locked until end.
type begun struct {
	who   identity
	a     *agentState
	index int
	fp    string
	keep  int
}

// begin identifies and fingerprints the call of req under ctx.
func (t *agentTable) begin(ctx context.Context, l *launches, req *llm.Request) begun {
	who := l.identify(ctx, req)
	a := t.get(who)
	a.mu.Lock()
	a.calls++
	fp, keep := a.h.add(req)
	return begun{who: who, a: a, index: a.calls, fp: fp, keep: keep}
}

func (b begun) end() { b.a.mu.Unlock() }
