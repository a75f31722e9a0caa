package report

import (
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/stoke-cli/stoke/agents"
	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/store"
	"github.com/stoke-cli/stoke/streamjson"
)

// patterns are what a parent's messages are read with, compiled for each Load (nothing
// at init).
type patterns struct {
	notification, taskID, status, turn *regexp.Regexp
	// continued reads the result of a send_message that started a new turn.
	continued *regexp.Regexp
}

func newPatterns() patterns {
	return patterns{
		notification: regexp.MustCompile(`(?s)<task-notification>(.*?)</task-notification>`),
		taskID:       regexp.MustCompile(`<task-id>([^<]*)</task-id>`),
		status:       regexp.MustCompile(`<status>([^<]*)</status>`),
		turn:         regexp.MustCompile(`<turn>(\d+)</turn>`),
		continued:    regexp.MustCompile(`^task_id: (\S+)\n(continued on its resident runtime|revived from its transcript) as turn (\d+)`),
	}
}

// parentLane reads the parent's transcript: its turns (delimited by its turn records, or
// inferred from its messages in a session that has none: a turn starts with a user
// message that follows a reply without tool calls), the notifications it received, and
// what its send_message results say of the continued turns.
func (l *loader) parentLane(recs []store.Record, model string) Lane {
	lane := Lane{ID: ParentLane, Kind: KindParent, Label: ParentLane, Turns: []Turn{}}
	var cur *turn
	var prev *llm.Message // the previous message of the transcript
	sawRecord := false
	closeCur := func(rec *store.Record) {
		if cur == nil {
			return
		}
		t := l.close(cur, rec)
		if rec == nil && prev != nil && prev.Role == llm.RoleAssistant && len(prev.ToolUses()) == 0 {
			t.Status = string(agents.StatusCompleted)
		}
		lane.Turns = append(lane.Turns, t)
		cur = nil
	}
	for i := range recs {
		rec := recs[i]
		switch rec.Type {
		case store.RecordMeta:
			if rec.Model != "" {
				model = rec.Model
			}
		case store.RecordTurn:
			sawRecord = true
			closeCur(&rec)
		case store.RecordMessage:
			m := rec.Message
			if m == nil {
				continue
			}
			starts := m.Role == llm.RoleUser && hasText(m) && (prev == nil || prev.Role == llm.RoleAssistant && len(prev.ToolUses()) == 0)
			if cur != nil && starts && !sawRecord {
				closeCur(nil)
			}
			if cur == nil {
				cur = newTurn(len(lane.Turns) + 1)
				cur.t.Trigger = TriggerPrompt
				if m.Role == llm.RoleUser && strings.Contains(m.Text(), "<task-notification>") {
					cur.t.Trigger = TriggerNotification
				}
			}
			l.add(cur, rec, model)
			l.notifications(cur.t.N, rec)
			l.continuations(rec)
			prev = m
		}
	}
	if cur != nil {
		closeCur(nil)
	}
	if !sawRecord && len(lane.Turns) > 0 {
		l.missing[missingParentTurns] = true
	}
	return lane
}

func hasText(m *llm.Message) bool {
	return slices.ContainsFunc(m.Content, func(b llm.Block) bool { return b.Type == llm.BlockText })
}

// notifications records the task notifications a parent message holds.
func (l *loader) notifications(parentTurn int, rec store.Record) {
	if rec.Message.Role != llm.RoleUser {
		return
	}
	for _, b := range rec.Message.Content {
		if b.Type != llm.BlockText {
			continue
		}
		for _, m := range l.re.notification.FindAllStringSubmatch(b.Text, -1) {
			n := Notification{Time: rec.Time, ParentTurn: parentTurn}
			if s := l.re.taskID.FindStringSubmatch(m[1]); s != nil {
				n.TaskID = s[1]
			}
			if s := l.re.status.FindStringSubmatch(m[1]); s != nil {
				n.Status = s[1]
			}
			if s := l.re.turn.FindStringSubmatch(m[1]); s != nil {
				n.Turn, _ = strconv.Atoi(s[1])
			}
			if n.TaskID == "" {
				continue
			}
			n.TaskID, _ = l.text(n.TaskID, 64)
			n.Status, _ = l.text(n.Status, 32)
			l.r.Notifications = append(l.r.Notifications, n)
		}
	}
}

// continuations records how the turns that send_message results name were started.
func (l *loader) continuations(rec store.Record) {
	if rec.Message.Role != llm.RoleUser {
		return
	}
	for _, b := range rec.Message.Content {
		if b.Type != llm.BlockToolResult || b.IsError {
			continue
		}
		m := l.re.continued.FindStringSubmatch(b.Content)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[3])
		kind := string(streamjson.ContinuationResident)
		if m[2] == "revived from its transcript" {
			kind = string(streamjson.ContinuationRevived)
		}
		l.continued[turnKey(m[1], n)] = kind
	}
}
