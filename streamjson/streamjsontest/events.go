package streamjsontest

import (
	"cmp"
	"fmt"
	"github.com/stoke-cli/stoke/streamjson"
	"math"
	"slices"
	"strings"

	"github.com/tidwall/gjson"
)

// init checks a system/init line (§8.2: cwd, model, tools[], mcp_servers[{name,status}],
// permissionMode).
func (v *validator) init(c *checker) {
	c.nonEmpty("cwd")
	c.nonEmpty("model")
	c.stringList("tools")
	if servers, ok := c.list("mcp_servers"); ok {
		// The SDKs' McpServerStatus: {name, status}.
		for i := range servers {
			path := fmt.Sprintf("mcp_servers.%d", i)
			if c.object(path) {
				c.nonEmpty(path + ".name")
				c.oneOf(path+".status", "connected", "failed", "pending", "needs-auth", "disabled")
			}
		}
	}
	c.nonEmpty("permissionMode")
	if c.has("agents") {
		c.stringList("agents")
	}
}

// assistant checks an assistant line: a BetaMessage whose content is a list (the Python SDK
// indexes message.content and message.model), and parent_tool_use_id.
func (v *validator) assistant(c *checker) {
	if c.object("message") {
		c.nonEmpty("message.id")
		c.oneOf("message.type", "message")
		c.oneOf("message.role", "assistant")
		c.nonEmpty("message.model")
		if r := c.obj.Get("message.stop_reason"); !r.Exists() || (r.Type != gjson.String && r.Type != gjson.Null) {
			c.fail("message.stop_reason", "want a string or null, %s", describe(r))
		}
		if c.object("message.usage") {
			c.count("message.usage.input_tokens")
			c.count("message.usage.output_tokens")
		}
		if blocks, ok := c.list("message.content"); ok {
			for i := range blocks {
				assistantBlock(c, fmt.Sprintf("message.content.%d", i))
			}
		}
	}
	v.agentLine(c)
}

// blockType checks that the content block at path is an object with a type, and
// returns the type.
func blockType(c *checker, path string) (string, bool) {
	if !c.object(path) {
		return "", false
	}
	return c.nonEmpty(path + ".type")
}

func assistantBlock(c *checker, path string) {
	typ, ok := blockType(c, path)
	if !ok {
		return
	}
	switch typ {
	case "text":
		c.str(path + ".text")
	case "tool_use":
		c.nonEmpty(path + ".id")
		c.nonEmpty(path + ".name")
		c.object(path + ".input")
	case "thinking":
		c.str(path + ".thinking")
		c.str(path + ".signature") // the Python SDK indexes it
	case "redacted_thinking":
		c.str(path + ".data")
	default:
		c.fail(path+".type", "unknown assistant block type %q", typ)
	}
}

// user checks a user line: message.content (a string or blocks), tool_use_id on every
// tool_result, and parent_tool_use_id.
func (v *validator) user(c *checker) {
	if c.object("message") {
		c.oneOf("message.role", "user")
		switch content := c.obj.Get("message.content"); {
		case content.Type == gjson.String:
		case content.IsArray():
			for i := range content.Array() {
				userBlock(c, fmt.Sprintf("message.content.%d", i))
			}
		default:
			c.fail("message.content", "want a string or a list, %s", describe(content))
		}
	}
	v.agentLine(c)
}

func userBlock(c *checker, path string) {
	typ, ok := blockType(c, path)
	if !ok {
		return
	}
	switch typ {
	case "text":
		c.str(path + ".text")
	case "tool_result":
		c.nonEmpty(path + ".tool_use_id")
		if r := c.obj.Get(path + ".content"); r.Exists() && r.Type != gjson.String && !r.IsArray() {
			c.fail(path+".content", "want a string or a list, %s", describe(r))
		}
		if c.has(path + ".is_error") {
			c.boolean(path + ".is_error")
		}
	default:
		c.fail(path+".type", "unknown user block type %q", typ)
	}
}

// agentLine checks the keys tying an assistant or user line to its agent: the parent's lines
// have parent_tool_use_id null and no task_id; a subagent's lines have both, the
// parent_tool_use_id being the task call that launched it (kept across continuations), and
// belong to a turn that started (task_started) and has not ended (task_notification).
func (v *validator) agentLine(c *checker) {
	parent, parentOK := c.nullableID("parent_tool_use_id")
	taskID := ""
	if c.has("task_id") {
		taskID, _ = c.nonEmpty("task_id")
	}
	if !parentOK {
		return
	}
	switch {
	case parent != "" && taskID == "":
		c.fail("task_id", "missing on a subagent line (parent_tool_use_id %q)", parent)
		return
	case parent == "" && taskID != "":
		c.fail("parent_tool_use_id", "null on a line of task %q", taskID)
		return
	case taskID == "":
		return
	}
	t := v.knownTask(c, taskID)
	if t == nil {
		return
	}
	if t.launchID != "" && parent != t.launchID {
		c.fail("parent_tool_use_id", "want %q, the task call that launched task %q, got %q", t.launchID, taskID, parent)
	}
	v.inTurn(c, taskID, t)
}

// knownTask returns the state of a task_id, or nil after a "task.unknown" violation: every
// turn of a subagent starts with task_started, so no task line comes before one.
func (v *validator) knownTask(c *checker, id string) *taskState {
	t := v.tasks[id]
	if t == nil {
		v.add(c.line, "task.unknown", fmt.Sprintf("%s line of task %q before any task_started of it", c.kind, id))
	}
	return t
}

// inTurn requires the task's latest turn not to have ended yet.
func (v *validator) inTurn(c *checker, id string, t *taskState) {
	if t.notified != 0 {
		v.add(c.line, "task.order", fmt.Sprintf("%s line of task %q after the task_notification on line %d that ended its turn %d",
			c.kind, id, t.notified, t.turn))
	}
}

// sameTurn requires a task event's turn (when it has one) to be the latest started turn.
func sameTurn(c *checker, id string, t *taskState) {
	if !c.has("turn") {
		return
	}
	if turn, ok := c.count("turn"); ok && t.turn != 0 && turn != t.turn {
		c.fail("turn", "task %q is in turn %d (started on line %d), got %d", id, t.turn, t.startLine, turn)
	}
}

// taskStarted checks a system/task_started line and opens a turn of its task.
func (v *validator) taskStarted(c *checker) {
	id, idOK := c.nonEmpty("task_id")
	c.str("description")
	toolUseID := ""
	if c.has("tool_use_id") {
		toolUseID, _ = c.str("tool_use_id")
	}
	background := false
	if c.has("is_backgrounded") {
		background, _ = c.boolean("is_backgrounded")
	}
	var turn int64
	if c.has("turn") {
		if n, ok := c.count("turn"); ok && n == 0 {
			c.fail("turn", "want a turn of 1 or more, got 0")
		} else {
			turn = n
		}
	}
	var cont streamjson.Continuation
	if c.has("continuation") {
		s, _ := c.oneOf("continuation", string(streamjson.ContinuationFresh), string(streamjson.ContinuationResident), string(streamjson.ContinuationRevived))
		cont = streamjson.Continuation(s)
	}
	if !idOK {
		return
	}

	t := v.tasks[id]
	switch {
	case t == nil:
		if cont == streamjson.ContinuationResident {
			c.fail("continuation", "resident continuation of task %q, which did not start in this process's stream", id)
		}
		if cont == streamjson.ContinuationFresh && turn > 1 {
			c.fail("turn", "a fresh launch has turn %d, want 1", turn)
		}
		t = &taskState{}
		if cont == streamjson.ContinuationFresh {
			t.launchID = toolUseID
		}
		v.tasks[id] = t
	default:
		if cont == streamjson.ContinuationFresh {
			c.fail("continuation", "fresh launch of task %q, which already started on line %d (task ids are never reused)", id, t.startLine)
		}
		if t.background && t.notified == 0 {
			v.add(c.line, "task.overlap", fmt.Sprintf("task %q starts a turn while its background turn %d (line %d) has no task_notification",
				id, t.turn, t.startLine))
		}
		if turn != 0 && t.turn != 0 && turn != t.turn+1 {
			c.fail("turn", "task %q continues turn %d (line %d), want turn %d, got %d", id, t.turn, t.startLine, t.turn+1, turn)
		}
	}
	t.startLine, t.turn, t.background, t.notified = c.line, turn, background, 0
}

// taskProgress checks a system/task_progress line (§8.3: task_id, description, usage).
func (v *validator) taskProgress(c *checker) {
	id, idOK := c.nonEmpty("task_id")
	c.str("description")
	c.taskUsage("usage")
	if !idOK {
		return
	}
	if t := v.knownTask(c, id); t != nil {
		sameTurn(c, id, t)
		v.inTurn(c, id, t)
	}
}

// taskNotification checks a system/task_notification line (§8.3: task_id, status,
// output_file, summary) and closes the turn of its task.
func (v *validator) taskNotification(c *checker) {
	id, idOK := c.nonEmpty("task_id")
	c.oneOf("status", streamjson.StatusCompleted, streamjson.StatusFailed, streamjson.StatusStopped)
	c.str("output_file")
	c.str("summary")
	if c.has("usage") {
		c.taskUsage("usage")
	}
	if c.has("interrupted") {
		c.boolean("interrupted")
	}
	if !idOK {
		return
	}
	t := v.knownTask(c, id)
	if t == nil {
		return
	}
	sameTurn(c, id, t)
	if t.notified != 0 {
		v.add(c.line, "task.duplicate", fmt.Sprintf("a second task_notification for turn %d of task %q (the first is on line %d)",
			t.turn, id, t.notified))
		return
	}
	t.notified = c.line
}

// result checks a result line (§8.2, §8.6).
func (v *validator) result(c *checker) {
	v.results = append(v.results, c.line)
	sub := c.obj.Get("subtype").Str
	isErrSub := strings.HasPrefix(sub, "error_")
	if sub != "" && sub != streamjson.ResultSuccess && !isErrSub {
		c.fail("subtype", "want %q or error_*, got %q", streamjson.ResultSuccess, sub)
	}
	if isErr, ok := c.boolean("is_error"); ok && isErrSub && !isErr {
		c.fail("is_error", "false on subtype %q", sub)
	}
	c.count("duration_ms")
	c.count("duration_api_ms")
	c.count("num_turns")
	if c.object("usage") {
		c.count("usage.input_tokens")
		c.count("usage.output_tokens")
	}
	c.number("total_cost_usd")
	c.list("permission_denials")
	if c.has("modelUsage") {
		c.object("modelUsage")
	}
	if sub == streamjson.ResultSuccess || c.has("result") {
		c.str("result")
	}
	if isErrSub || c.has("errors") {
		c.stringList("errors")
	}
}

// controlResponse checks a control_response line (multi-result mode only).
func (v *validator) controlResponse(c *checker) {
	if !c.object("response") {
		return
	}
	sub, _ := c.oneOf("response.subtype", streamjson.ControlSuccess, streamjson.ControlError)
	c.nonEmpty("response.request_id")
	switch sub {
	case streamjson.ControlSuccess:
		if c.has("response.response") {
			c.object("response.response")
		}
	case streamjson.ControlError:
		c.str("response.error")
	}
}

// sortViolations orders violations by line, the stream-wide ones (line 0) last.
func sortViolations(vs []Violation) {
	key := func(v Violation) int {
		if v.Line == 0 {
			return math.MaxInt
		}
		return v.Line
	}
	slices.SortStableFunc(vs, func(a, b Violation) int { return cmp.Compare(key(a), key(b)) })
}
