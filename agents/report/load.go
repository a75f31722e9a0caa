package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/stoke-cli/stoke/agents"
	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/store"
	"github.com/stoke-cli/stoke/streamjson"
)

// What a session may not have recorded (Report.Missing), when an older stoke wrote it.
const (
	missingUsage        = "usage: some model calls have no recorded usage (tokens and cost count only those that do)"
	missingToolTimes    = "tool times: some tool calls have no recorded start and duration (each shows its whole tool round's)"
	missingContinuation = "continuation: how some turns ran (fresh, resident, revived) was not recorded"
	missingQueue        = "queue: some turns have no recorded start (their queued time is unknown; they start with their first message)"
	missingParentTurns  = "parent turns: the parent's turn boundaries were not recorded (inferred from its messages)"
)

// Load reads the session found into a Report. What cannot be read (a corrupt line, an
// unreadable sidecar, a missing transcript) becomes a warning; Load fails only when the
// session holds nothing to draw.
func Load(found store.Stored, opts Options) (*Report, error) {
	l := newLoader(opts)
	info := found.Info
	r := l.r
	r.Session = Session{ID: info.SessionID, CWD: info.CWD, Model: info.Model, CreatedAt: info.CreatedAt, UpdatedAt: info.UpdatedAt, ForkedFrom: info.ForkedFrom}
	if found.Warning != "" {
		l.warn(found.Warning)
	}
	sess := found.Session
	parentRecs, warnings, err := sess.ReadRecords(sess.ParentTranscript())
	l.warn(warnings...)
	switch {
	case errors.Is(err, os.ErrNotExist):
		l.warn("the parent's transcript is missing")
	case err != nil:
		l.warn(fmt.Sprintf("the parent's transcript: %v", err))
	}
	sidecars, warnings := agents.ReadSidecars(sess)
	l.warn(warnings...)
	if parentRecs == nil && len(sidecars) == 0 && !sess.Exists() {
		return nil, fmt.Errorf("%w: %s holds nothing to report", store.ErrUnknownSession, sess)
	}
	roster, _, _ := agents.LoadRoster(sess, agents.RosterOptions{SessionID: info.SessionID, CWD: info.CWD})
	restored := map[agents.TaskID]agents.Row{}
	for _, row := range roster {
		restored[row.TaskID] = row
	}
	dead := sess.DeadWriter() > 0

	parent := l.parentLane(parentRecs, info.Model)
	r.Lanes = append(r.Lanes, parent)
	notified := map[string]time.Time{} // task id and turn → when the parent received it
	for _, n := range r.Notifications {
		if k := turnKey(n.TaskID, n.Turn); notified[k].IsZero() {
			notified[k] = n.Time
		}
	}
	for _, sc := range sidecars {
		if dead && sc.Status.Active() {
			sc.Status = agents.StatusPaused // as --resume and stoke agents list take it
		}
		var recs []store.Record
		if sc.Transcript != "" {
			var err error
			recs, warnings, err = sess.ReadRecords(sc.Transcript)
			l.warn(prefixed(string(sc.TaskID), warnings)...)
			if err != nil {
				l.warn(fmt.Sprintf("%s: its transcript: %v", sc.TaskID, err))
			}
			if len(recs) > 0 && recs[0].Type == store.RecordMeta && recs[0].TaskID != "" && recs[0].TaskID != string(sc.TaskID) {
				l.warn(fmt.Sprintf("%s: its transcript belongs to task %s; left out", sc.TaskID, recs[0].TaskID))
				recs = nil
			}
		}
		lane := l.taskLane(sc, recs, info.Model)
		for i := range lane.Turns {
			lane.Turns[i].Notified = notified[turnKey(lane.ID, lane.Turns[i].N)]
		}
		r.Lanes = append(r.Lanes, lane)
		r.Agents = append(r.Agents, l.agentRow(sc, lane, restored))
	}
	l.finish()
	return r, nil
}

func turnKey(task string, turn int) string { return task + "\x00" + strconv.Itoa(turn) }

func prefixed(p string, ws []string) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = p + ": " + w
	}
	return out
}

// loader is one Load's state.
type loader struct {
	opts    Options
	r       *Report
	missing map[string]bool
	// continued says how a task's turn (turnKey) ran, as the parent's send_message
	// results told it (for sessions that did not record it in the task's turn record).
	continued map[string]string
	re        patterns
}

func newLoader(opts Options) *loader {
	lim := opts.Limits
	def := DefaultLimits()
	if lim.Text <= 0 {
		lim.Text = def.Text
	}
	if lim.Tool <= 0 {
		lim.Tool = def.Tool
	}
	if lim.Blocks <= 0 {
		lim.Blocks = def.Blocks
	}
	opts.Limits = lim
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	r := &Report{Version: Version, Generator: opts.Generator, GeneratedAt: now().UTC(), Limits: lim,
		Lanes: []Lane{}, Agents: []Agent{}, Notifications: []Notification{}}
	r.Totals.Statuses = map[string]int{}
	return &loader{opts: opts, r: r, missing: map[string]bool{}, continued: map[string]string{}, re: newPatterns()}
}

func (l *loader) warn(ws ...string) {
	for _, w := range ws {
		l.r.Warnings = append(l.r.Warnings, l.redact(w))
	}
}

func (l *loader) redact(s string) string {
	if l.opts.Redact == nil {
		return s
	}
	return l.opts.Redact(s)
}

// text returns s redacted, then cut to n characters; cut says whether it was.
func (l *loader) text(s string, n int) (out string, cut bool) {
	s = l.redact(s)
	if utf8.RuneCountInString(s) <= n {
		return s, false
	}
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos] + "…", true
		}
		i++
	}
	return s, false
}

// turn builds one Turn from the records of its messages.
type turn struct {
	t         Turn
	calls     map[string]int // tool_use id → index in t.ToolCalls
	lastReply time.Time      // the time of the latest reply with tool calls
	first     time.Time      // the first message's time
	last      time.Time      // the latest message's time
	lastText  string         // the latest reply's text
	closed    bool
}

func newTurn(n int) *turn {
	return &turn{t: Turn{N: n, Status: StatusUnknown, ToolCalls: []ToolCall{}, Messages: []Message{}}, calls: map[string]int{}}
}

// add takes one message record into the turn; model is the lane's model, for replies
// that do not name theirs.
func (l *loader) add(t *turn, rec store.Record, model string) {
	m := rec.Message
	if t.first.IsZero() {
		t.first = rec.Time
	}
	t.last = rec.Time
	t.t.Messages = append(t.t.Messages, l.message(rec))
	switch m.Role {
	case llm.RoleAssistant:
		t.t.ModelCalls++
		if rec.Model != "" {
			model = rec.Model
		}
		if model != "" && !slices.Contains(t.t.Models, model) {
			t.t.Models = append(t.t.Models, model)
		}
		if rec.Usage == nil {
			l.missing[missingUsage] = true
		} else {
			t.t.Usage = t.t.Usage.Add(*rec.Usage)
			t.t.CostUSD += l.opts.Prices.Cost(model, *rec.Usage)
		}
		if text := m.Text(); text != "" {
			t.lastText = text
		}
		for _, b := range m.Content {
			if b.Type == llm.BlockToolUse {
				t.calls[b.ID] = len(t.t.ToolCalls)
				t.t.ToolCalls = append(t.t.ToolCalls, ToolCall{ID: b.ID, Name: b.Name})
				t.lastReply = rec.Time
			}
		}
	case llm.RoleUser:
		for _, b := range m.Content {
			if b.Type != llm.BlockToolResult {
				continue
			}
			i, ok := t.calls[b.ToolUseID]
			if !ok {
				continue
			}
			c := &t.t.ToolCalls[i]
			c.Answered, c.IsError = true, b.IsError
			if at := slices.IndexFunc(rec.Calls, func(ct store.CallTime) bool { return ct.ID == b.ToolUseID }); at >= 0 {
				c.Start, c.DurationMS = rec.Calls[at].Start, rec.Calls[at].DurationMS
			} else {
				l.missing[missingToolTimes] = true
				c.Start, c.DurationMS, c.Estimated = t.lastReply, rec.Time.Sub(t.lastReply).Milliseconds(), true
			}
		}
	}
}

// close ends the turn: with its turn record when there is one (end, start, queue time,
// continuation, status, summary), else from its messages.
func (l *loader) close(t *turn, rec *store.Record) Turn {
	t.closed = true
	out := t.t
	out.Start, out.End = t.first, t.last
	if rec != nil {
		out.End = rec.Time
		out.Status = rec.Status
		if !rec.Start.IsZero() {
			out.Start = rec.Start
		}
		out.Queued = rec.Queued
		out.Continuation = rec.Continuation
		if rec.Summary != "" {
			t.lastText = rec.Summary
		}
	}
	if out.Start.IsZero() {
		out.Start = out.End
	}
	if out.End.Before(out.Start) {
		out.End = out.Start
	}
	if !out.Queued.IsZero() && out.Queued.Before(out.Start) {
		out.QueueMS = out.Start.Sub(out.Queued).Milliseconds()
	} else {
		out.Queued = time.Time{}
	}
	out.DurationMS = out.End.Sub(out.Start).Milliseconds()
	out.Summary, _ = l.text(t.lastText, l.opts.Limits.Text)
	return out
}

// message converts a message record, its text redacted and cut.
func (l *loader) message(rec store.Record) Message {
	lim := l.opts.Limits
	m := Message{Time: rec.Time, Role: string(rec.Message.Role), Blocks: []Block{}}
	for i, b := range rec.Message.Content {
		if i == lim.Blocks {
			m.More = len(rec.Message.Content) - i
			break
		}
		out := Block{Type: b.Type}
		switch b.Type {
		case llm.BlockText:
			out.Text, out.Cut = l.text(b.Text, lim.Text)
		case llm.BlockToolUse:
			out.ID, out.Name = b.ID, b.Name
			out.Input, out.Cut = l.text(readableJSON(b.Input), lim.Tool)
		case llm.BlockToolResult:
			out.ID, out.IsError = b.ToolUseID, b.IsError
			out.Content, out.Cut = l.text(b.Content, lim.Tool)
		}
		m.Blocks = append(m.Blocks, out)
	}
	return m
}

// taskLane reads one task's transcript into its lane: a turn per turn number of its
// messages and turn records.
func (l *loader) taskLane(sc agents.Sidecar, recs []store.Record, model string) Lane {
	label, _ := l.text(sc.Description, 200)
	if label == "" {
		label = string(sc.TaskID)
	}
	lane := Lane{ID: string(sc.TaskID), Kind: KindTask, Label: label, SubagentType: sc.SubagentType, Status: string(sc.Status), Turns: []Turn{}}
	turns := map[int]*turn{}
	var order []int
	get := func(n int) *turn {
		t := turns[n]
		if t == nil {
			t = newTurn(n)
			turns[n] = t
			order = append(order, n)
		}
		return t
	}
	ended := map[int]store.Record{}
	for _, rec := range recs {
		switch rec.Type {
		case store.RecordMessage:
			if rec.Message != nil && rec.Turn > 0 {
				l.add(get(rec.Turn), rec, model)
			}
		case store.RecordTurn:
			if rec.Turn > 0 {
				get(rec.Turn)
				ended[rec.Turn] = rec // a turn record is written once; the last wins
			}
		}
	}
	slices.Sort(order)
	for _, n := range order {
		var t Turn
		if rec, ok := ended[n]; ok {
			t = l.close(turns[n], &rec)
			if rec.Start.IsZero() {
				l.missing[missingQueue] = true
			}
		} else {
			t = l.close(turns[n], nil)
			if n == sc.Turn {
				t.Status = string(sc.Status) // the latest turn: as its sidecar says (running, paused)
			}
		}
		if t.Continuation == "" {
			switch kind := l.continued[turnKey(lane.ID, n)]; {
			case n == 1:
				t.Continuation = string(streamjson.ContinuationFresh)
			case kind != "":
				t.Continuation = kind
			default:
				l.missing[missingContinuation] = true
			}
		}
		lane.Turns = append(lane.Turns, t)
	}
	return lane
}

// agentRow is the agents-table row of a task.
func (l *loader) agentRow(sc agents.Sidecar, lane Lane, restored map[agents.TaskID]agents.Row) Agent {
	desc, _ := l.text(sc.Description, 200)
	a := Agent{TaskID: string(sc.TaskID), SubagentType: sc.SubagentType, Description: desc, Status: string(sc.Status),
		Turns: sc.Turn, Backgrounded: sc.Backgrounded, CreatedAt: sc.CreatedAt, EndedAt: sc.EndedAt}
	for _, t := range lane.Turns {
		a.Usage = a.Usage.Add(t.Usage)
		a.CostUSD += t.CostUSD
		a.ToolCalls += len(t.ToolCalls)
	}
	if a.Turns < len(lane.Turns) {
		a.Turns = len(lane.Turns)
	}
	reason := ""
	if row, ok := restored[sc.TaskID]; ok {
		reason = row.BlockedReason
	} else {
		switch {
		case sc.BlockedReason != "":
			reason = sc.BlockedReason
		case sc.Status == agents.StatusCancelled:
			reason = "it was stopped with task_stop and cannot be continued"
		case !sc.Backgrounded:
			reason = "a foreground task: --resume does not restore it"
		default:
			reason = "--resume does not restore it"
		}
	}
	a.Continuable = reason == ""
	a.BlockedReason, _ = l.text(reason, 300)
	return a
}

// finish adds up the totals and the bounds of the timeline.
func (l *loader) finish() {
	r := l.r
	tot := &r.Totals
	tot.Agents = len(r.Agents)
	tot.Outcome = StatusUnknown
	var start, end time.Time
	span := func(ts ...time.Time) {
		for _, t := range ts {
			if t.IsZero() {
				continue
			}
			if start.IsZero() || t.Before(start) {
				start = t
			}
			if t.After(end) {
				end = t
			}
		}
	}
	for _, lane := range r.Lanes {
		for _, t := range lane.Turns {
			tot.Turns++
			tot.ModelCalls += t.ModelCalls
			tot.ToolCalls += len(t.ToolCalls)
			for _, c := range t.ToolCalls {
				if c.IsError {
					tot.ToolErrors++
				}
			}
			tot.Usage = tot.Usage.Add(t.Usage)
			tot.CostUSD += t.CostUSD
			span(t.Queued, t.Start, t.End, t.Notified)
		}
		if lane.Kind == KindParent && len(lane.Turns) > 0 {
			tot.Outcome = lane.Turns[len(lane.Turns)-1].Status
		}
	}
	for _, a := range r.Agents {
		tot.Statuses[a.Status]++
	}
	for _, n := range r.Notifications {
		span(n.Time)
	}
	if start.IsZero() {
		span(r.Session.CreatedAt, r.Session.UpdatedAt)
	}
	r.Start, r.End = start, end
	r.DurationMS = end.Sub(start).Milliseconds()
	for m := range l.missing {
		r.Missing = append(r.Missing, m)
	}
	slices.Sort(r.Missing)
}

// readableJSON is a tool call's input as people read it: the JSON a transcript stores
// with <, > and & HTML-escaped as \u003c..., written out again without those escapes
// (the page escapes what it shows).
func readableJSON(raw []byte) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return string(raw)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return string(raw)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
