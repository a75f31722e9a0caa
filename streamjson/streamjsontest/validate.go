package streamjsontest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/tidwall/gjson"
)

// Validate checks a whole stream-json output written for a text prompt (-p or stdin text)
// against the output contract of DESIGN.md and the minimum compatibility checklist of the
// stream-json conventions (§8.6): the keys the Claude Agent SDKs index without a guard, the
// line order (system/init first, exactly one result, last), one session_id throughout, and
// the task lifecycle (every background turn that starts settles with a task_notification
// before the result).
//
// It returns nil, a *ValidationError (wrapping ErrInvalidStream) listing every broken rule
// with its line, or a wrapped read error.
func Validate(r io.Reader) error { return ValidateLines(r, false) }

// ValidateLines is Validate with a choice of mode. With multiResult (output of
// --input-format stream-json) the stream may hold one result per turn, the last line still
// being a result, and control_response lines (answers to SDK control requests) are allowed,
// also before the first system/init.
func ValidateLines(r io.Reader, multiResult bool) error {
	v := &validator{multi: multiResult, uuids: map[string]int{}, tasks: map[string]*taskState{}}
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			v.line(line)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read stream line %d: %w", v.n+1, err)
		}
	}
	v.finish()
	if len(v.violations) > 0 {
		return &ValidationError{Violations: v.violations}
	}
	return nil
}

// validator holds what the rules need to remember across lines.
type validator struct {
	multi      bool
	violations []Violation

	n           int  // lines read
	lastNewline bool // the last line read ended with '\n'
	lastType    string
	firstEvent  int            // line of the first line that must be system/init; 0 until seen
	sessionID   string         // session_id of the first line that had one
	sessionLine int            // …and its line
	uuids       map[string]int // uuid -> line
	results     []int          // lines of result events
	tasks       map[string]*taskState
}

// taskState is what the validator knows of one task_id.
type taskState struct {
	startLine  int    // line of the latest task_started
	turn       int64  // turn of the latest task_started; 0 when it had none
	launchID   string // tool_use_id of the fresh launch, when it is in the stream
	background bool   // the latest turn runs in the background
	notified   int    // line of the latest turn's task_notification; 0 until then
}

func (v *validator) add(line int, rule, detail string) {
	v.violations = append(v.violations, Violation{Line: line, Rule: rule, Detail: detail})
}

func (v *validator) line(b []byte) {
	v.n++
	v.lastNewline = bytes.HasSuffix(b, []byte{'\n'})
	v.lastType = ""
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0:
		v.add(v.n, "json", "empty line")
		return
	case !json.Valid(b): // bounded nesting depth, unlike gjson.ValidBytes
		v.add(v.n, "json", "not valid JSON")
		return
	}
	obj := gjson.ParseBytes(b)
	if !obj.IsObject() {
		v.add(v.n, "json", "not a JSON object")
		return
	}
	c := &checker{v: v, line: v.n, kind: "envelope", obj: obj}
	typ, _ := c.nonEmpty("type")
	v.lastType = typ
	v.envelope(c, typ)

	if v.firstEvent == 0 && !(v.multi && typ == "control_response") {
		v.firstEvent = v.n
		if typ != "system" || obj.Get("subtype").Str != "init" {
			v.add(v.n, "init.first", fmt.Sprintf("the first line is %s, want system/init", kindOf(obj)))
		}
	}

	switch typ {
	case "":
	case "system":
		switch sub := obj.Get("subtype").Str; sub {
		case "init":
			v.init(c.as("init"))
		case "task_started":
			v.taskStarted(c.as(sub))
		case "task_progress":
			v.taskProgress(c.as(sub))
		case "task_notification":
			v.taskNotification(c.as(sub))
		}
		// Other system subtypes (task_updated, background_tasks_changed, …) are generic
		// SystemMessages to the SDKs: the envelope rules are all they need.
	case "assistant":
		v.assistant(c.as(typ))
	case "user":
		v.user(c.as(typ))
	case "result":
		v.result(c.as(typ))
	case "stream_event":
		cc := c.as(typ)
		cc.object("event")
		cc.nullableID("parent_tool_use_id")
	case "control_response":
		if !v.multi {
			v.add(v.n, "envelope.type", "control_response is written only with --input-format stream-json")
			return
		}
		v.controlResponse(c.as(typ))
	default:
		v.add(v.n, "envelope.type", fmt.Sprintf("unknown type %q", typ))
	}
}

// envelope checks the keys every line has.
func (v *validator) envelope(c *checker, typ string) {
	if id, ok := c.nonEmpty("uuid"); ok {
		if prev, dup := v.uuids[id]; dup {
			v.add(v.n, "envelope.uuid_unique", fmt.Sprintf("uuid %q already used on line %d", id, prev))
		} else {
			v.uuids[id] = v.n
		}
	}
	if sid, ok := c.nonEmpty("session_id"); ok {
		switch {
		case v.sessionID == "":
			v.sessionID, v.sessionLine = sid, v.n
		case sid != v.sessionID:
			v.add(v.n, "envelope.session_id_equal",
				fmt.Sprintf("session_id %q differs from %q on line %d", sid, v.sessionID, v.sessionLine))
		}
	}
	if typ == "system" || typ == "result" {
		c.nonEmpty("subtype")
	}
}

// kindOf names a line as type/subtype for messages.
func kindOf(obj gjson.Result) string {
	typ, sub := obj.Get("type"), obj.Get("subtype")
	if typ.Type != gjson.String {
		return "a line without a type"
	}
	if sub.Type == gjson.String && sub.Str != "" {
		return typ.Str + "/" + sub.Str
	}
	return typ.Str
}

// as returns a checker for the same line naming its rules after kind.
func (c *checker) as(kind string) *checker {
	return &checker{v: c.v, line: c.line, kind: kind, obj: c.obj}
}

// finish applies the rules about the stream as a whole.
func (v *validator) finish() {
	if v.n == 0 {
		v.add(0, "stream.empty", "no lines")
		return
	}
	if !v.lastNewline {
		v.add(v.n, "stream.newline", "the last line does not end with a newline")
	}
	if len(v.results) == 0 {
		v.add(0, "result.missing", "no result line")
		return
	}
	if v.lastType != "result" {
		v.add(v.n, "result.last", fmt.Sprintf("the last line is not a result (the last result is on line %d)",
			v.results[len(v.results)-1]))
	}
	if !v.multi {
		for _, l := range v.results[1:] {
			v.add(l, "result.single", fmt.Sprintf("a second result (the first is on line %d); a text-prompt run writes exactly one", v.results[0]))
		}
	}
	for id, t := range v.tasks {
		if t.background && t.notified == 0 {
			v.add(t.startLine, "task.unsettled",
				fmt.Sprintf("background turn %d of task %q has no task_notification before the final result", t.turn, id))
		}
	}
	sortViolations(v.violations)
}
