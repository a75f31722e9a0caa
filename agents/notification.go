package agents

import (
	"fmt"
	"strings"

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
		n.Status, n.Reason = streamjson.StatusStopped, "cancelled"
	default:
		n.Status, n.Reason = streamjson.StatusFailed, row.LastOutcome.Reason
	}
	return n
}

func runID(id TaskID, turn int) string { return fmt.Sprintf("%s#%d", id, turn) }

// NotificationText is the <task-notification> message the parent model reads.
func NotificationText(row Row, toolUseID, status string) string {
	var b strings.Builder
	b.WriteString("<task-notification>\n")
	fmt.Fprintf(&b, "<task-id>%s</task-id>\n", row.TaskID)
	fmt.Fprintf(&b, "<tool-use-id>%s</tool-use-id>\n", toolUseID)
	fmt.Fprintf(&b, "<status>%s</status>\n", status)
	fmt.Fprintf(&b, "<turn>%d</turn>\n", row.Turn)
	summary := fmt.Sprintf("Agent %q (%s) %s turn %d.", row.Description, row.SubagentType, status, row.Turn)
	switch {
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
	if n := row.LastOutcome.Undelivered; n > 0 {
		summary += fmt.Sprintf(" %d message(s) sent to it with send_message were not delivered.", n)
	}
	fmt.Fprintf(&b, "<summary>%s</summary>\n", summary)
	fmt.Fprintf(&b, "<result>%s</result>\n", row.LastOutcome.Text)
	u := row.LastOutcome.Usage
	fmt.Fprintf(&b, "<usage><total_tokens>%d</total_tokens><tool_uses>%d</tool_uses><duration_ms>%d</duration_ms></usage>\n", u.TotalTokens, u.ToolUses, u.DurationMS)
	b.WriteString("<note>The same task id notifies again after every continuation. Continue it with send_message.</note>\n")
	b.WriteString("</task-notification>")
	return b.String()
}
