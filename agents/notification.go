package agents

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/runtime"

	"github.com/stoke-cli/stoke/streamjson"
)

// taskStarted is the task_started event of turn t of row.
func taskStarted(row Row, t turn) *streamjson.TaskStarted {
	ev := streamjson.NewTaskStarted()
	ev.TaskID, ev.RunID, ev.ToolUseID = string(row.TaskID), runID(row.TaskID, t.n), t.toolUseID
	ev.Description, ev.SubagentType, ev.Prompt = row.Description, row.SubagentType, t.instruction
	ev.IsBackgrounded, ev.Turn, ev.Continuation = t.background, t.n, t.continuation
	return ev
}

// taskNotification is the task_notification event of turn t, whose end row records.
func taskNotification(row Row, t turn) *streamjson.TaskNotification {
	n := streamjson.NewTaskNotification()
	n.TaskID, n.RunID, n.ToolUseID = string(row.TaskID), runID(row.TaskID, t.n), t.toolUseID
	n.Turn, n.Summary, n.Interrupted = t.n, row.LastOutcome.Text, row.Interrupted
	n.OutputFile, n.Usage = row.Transcript, row.LastOutcome.Usage
	switch row.Status {
	case StatusCompleted:
		n.Status = streamjson.StatusCompleted
	case StatusCancelled, StatusPaused:
		// The SDKs' word for a turn cut short; the row says whether it can go on.
		n.Status, n.Reason = streamjson.StatusStopped, runtime.ReasonCancelled
	default:
		n.Status, n.Reason = streamjson.StatusFailed, row.LastOutcome.Reason
	}
	return n
}

func runID(id TaskID, turn int) string { return fmt.Sprintf("%s#%d", id, turn) }

// Notification is the end of a background turn, told to the parent (RegistryConfig.Notify).
type Notification struct {
	// Row is the row as the turn left it.
	Row Row
	// ToolUseID is the task or send_message call that started the turn.
	ToolUseID string
	// Status is streamjson's word for how it ended: completed, failed or stopped.
	Status string
	// ack tells the task's controller of the delivery (Delivered); nil for none.
	ack func()
}

// Delivered records that the parent has been handed n: the consumer of
// RegistryConfig.Notify calls it once the parent has the notification (the run loop's
// mailbox, as the parent reads it). Until then the task's row is kept however many rows
// settle after it (MaxRetained), for the parent may still collect or continue it. Safe
// for concurrent use; calls after the first do nothing.
func (n Notification) Delivered() {
	if n.ack != nil {
		n.ack()
	}
}

// The size of what the parent reads of background turns' ends: a result longer than its
// share is cut, with a pointer to the whole of it (task with the task_id, and the output
// file). One message shares NotifyResultBytes among its notifications; each result keeps
// at least NotifyResultMin bytes.
const (
	NotifyResultBytes = 64 << 10
	NotifyResultMin   = 256
)

const notificationNote = "<note>The same task id notifies again after every continuation. Continue it with send_message.</note>\n"

// NotificationText is the <task-notification> message the parent model reads, its result
// cut to NotifyResultBytes.
func NotificationText(row Row, toolUseID, status string) string {
	return Notification{Row: row, ToolUseID: toolUseID, Status: status}.text(NotifyResultBytes, true)
}

// NotificationsMessage is the user message that tells the parent of the turns ns ended:
// one <task-notification> text block each, oldest first, their results sharing
// NotifyResultBytes (each result keeps at least NotifyResultMin).
func NotificationsMessage(ns []Notification) llm.Message {
	m := llm.Message{Role: llm.RoleUser}
	if len(ns) == 1 {
		m.Content = []llm.Block{llm.TextBlock(ns[0].text(NotifyResultBytes, true))}
		return m
	}
	share := max(NotifyResultBytes/max(len(ns), 1), NotifyResultMin)
	for _, n := range ns {
		m.Content = append(m.Content, llm.TextBlock(n.text(share, false)))
	}
	m.Content = append(m.Content, llm.TextBlock(strings.TrimSuffix(notificationNote, "\n")))
	return m
}

// text renders n with its result cut to limit bytes; note adds the note on continuing.
func (n Notification) text(limit int, note bool) string {
	row := n.Row
	var b strings.Builder
	b.WriteString("<task-notification>\n")
	fmt.Fprintf(&b, "<task-id>%s</task-id>\n", row.TaskID)
	fmt.Fprintf(&b, "<tool-use-id>%s</tool-use-id>\n", n.ToolUseID)
	fmt.Fprintf(&b, "<status>%s</status>\n", n.Status)
	fmt.Fprintf(&b, "<turn>%d</turn>\n", row.Turn)
	summary := fmt.Sprintf("Agent %q (%s) %s turn %d.", row.Description, row.SubagentType, n.Status, row.Turn)
	switch {
	case row.Interrupted && row.neverStarted():
		summary += " " + interruptedNote(row)
	case row.Status == StatusPaused:
		summary += " It was interrupted when the run ended, before it finished; the result holds its partial findings, and send_message continues it."
	case row.Interrupted:
		summary += " It was cancelled before it finished; the result holds its partial findings."
	case row.LastOutcome.Error != "":
		summary += " Error: " + row.LastOutcome.Error
		if row.Status == StatusFailed && row.blocked() == "" {
			summary += " It keeps its history: send_message continues it."
		}
	}
	if row.LastOutcome.Worktree != "" {
		summary += " " + row.LastOutcome.Worktree
	}
	if k := row.LastOutcome.Undelivered; k > 0 {
		summary += fmt.Sprintf(" %d message(s) sent to it with send_message were not delivered.", k)
	}
	fmt.Fprintf(&b, "<summary>%s</summary>\n", summary)
	fmt.Fprintf(&b, "<result>%s</result>\n", cutResult(row, limit))
	u := row.LastOutcome.Usage
	fmt.Fprintf(&b, "<usage><total_tokens>%d</total_tokens><tool_uses>%d</tool_uses><duration_ms>%d</duration_ms></usage>\n", u.TotalTokens, u.ToolUses, u.DurationMS)
	if note {
		b.WriteString(notificationNote)
	}
	b.WriteString("</task-notification>")
	return b.String()
}

// interruptedNote says, for the parent, what an interrupted turn of row left: its
// partial findings (the text it had produced), or none when it never started, and how it
// may go on. It opens with the words of the synchronous path of seed 003.
func interruptedNote(row Row) string {
	why := row.LastOutcome.Error
	if why == "" {
		why = "cancelled"
	}
	switch {
	case row.neverStarted() && row.Status == StatusPaused:
		return fmt.Sprintf("Task interrupted before it started: it was queued when the run ended (%s), so it has no findings. send_message starts it: the instruction it was queued with runs first, then your message.", why)
	case row.neverStarted():
		return fmt.Sprintf("Task interrupted before it started (%s): it has no findings.", why)
	case row.Status == StatusPaused:
		return fmt.Sprintf("Task interrupted. These are partial findings, from before the run ended (%s); send_message continues it:", why)
	default:
		return fmt.Sprintf("Task interrupted. These are partial findings, from before it was stopped (%s):", why)
	}
}

// cutResult is row's result, cut to at most limit bytes (at a character boundary) with a
// pointer to the whole of it.
func cutResult(row Row, limit int) string {
	text := row.LastOutcome.Text
	if len(text) <= limit {
		return text
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	where := fmt.Sprintf("task with task_id %s", row.TaskID)
	if row.Transcript != "" {
		where += ", or the output file " + row.Transcript
	}
	return fmt.Sprintf("%s\n[cut: %d more bytes; the whole result: %s]", text[:cut], len(text)-cut, where)
}
