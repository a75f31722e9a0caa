package report

import (
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// What the Markdown draws at most: it is a CI job summary, read on one screen; the HTML
// report has everything.
const (
	mdLanes         = 20  // task lanes in the gantt
	mdTurns         = 10  // turns per lane in the gantt
	mdNotifications = 20  // notification milestones (deliveries) in the gantt
	mdAgents        = 100 // rows of the agents table
)

// Markdown writes r as a GitHub job summary: the totals, a Mermaid gantt of the lanes
// (capped; the rest summarised) and the agents table (capped).
func Markdown(w io.Writer, r *Report) error {
	var b strings.Builder
	t := r.Totals
	fmt.Fprintf(&b, "## stoke session `%s`\n\n", r.Session.ID)
	fmt.Fprintf(&b, "| outcome | duration | agents | turns | model calls | tool calls | tokens in / out / cached | cost |\n")
	fmt.Fprintf(&b, "|---|---:|---:|---:|---:|---:|---:|---:|\n")
	tools := fmt.Sprint(t.ToolCalls)
	if t.ToolErrors > 0 {
		tools += fmt.Sprintf(" (%d failed)", t.ToolErrors)
	}
	fmt.Fprintf(&b, "| %s | %s | %d%s | %d | %d | %s | %s / %s / %s | %s |\n\n", mdCell(t.Outcome), fmtMS(r.DurationMS),
		t.Agents, statusCounts(r), t.Turns, t.ModelCalls, tools,
		fmtTokens(t.Usage.InputTokens), fmtTokens(t.Usage.OutputTokens), fmtTokens(t.Usage.CacheReadInputTokens), fmtUSD(t.CostUSD))
	gantt(&b, r)
	if len(r.Missing) > 0 {
		b.WriteString("<details><summary>Not recorded by the stoke that wrote this session</summary>\n\n")
		for _, m := range r.Missing {
			fmt.Fprintf(&b, "- %s\n", mdCell(m))
		}
		b.WriteString("\n</details>\n\n")
	}
	agentsTable(&b, r)
	_, err := io.WriteString(w, b.String())
	return err
}

// statusCounts says how many agents ended how: " (3 completed, 1 failed)".
func statusCounts(r *Report) string {
	if len(r.Agents) == 0 {
		return ""
	}
	var parts []string
	for _, s := range []string{"completed", "failed", "cancelled", "paused", "running", "queued"} {
		if n := r.Totals.Statuses[s]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, s))
		}
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// gantt draws the lanes as a Mermaid gantt: the parent (with the notifications it
// received as milestones) and the first mdLanes task lanes, each turn a task from its
// start to its end, marked done, active (paused, running) or crit (failed, cancelled).
func gantt(b *strings.Builder, r *Report) {
	if len(r.Lanes) == 0 {
		return
	}
	b.WriteString("```mermaid\ngantt\n")
	fmt.Fprintf(b, "    title %s\n", mermaidText("session "+shortID(r.Session.ID)+" started "+r.Start.UTC().Format(time.DateTime)+" UTC"))
	b.WriteString("    dateFormat x\n")
	fmt.Fprintf(b, "    axisFormat %s\n", axisFormat(time.Duration(r.DurationMS)*time.Millisecond))
	tasks, drawn := 0, 0
	for _, lane := range r.Lanes {
		if lane.Kind == KindTask {
			tasks++
			if drawn == mdLanes {
				continue
			}
			drawn++
		}
		name := lane.Label
		if lane.Kind == KindTask {
			name = lane.Label + " " + shortID(lane.ID)
		}
		fmt.Fprintf(b, "    section %s\n", mermaidText(name))
		for i, t := range lane.Turns {
			if i == mdTurns {
				fmt.Fprintf(b, "    %s :%d, 1ms\n", mermaidText(fmt.Sprintf("%d more turns", len(lane.Turns)-i)), t.Start.UnixMilli())
				break
			}
			what := fmt.Sprintf("t%d", t.N)
			if t.Continuation != "" {
				what += " " + t.Continuation
			} else if t.Trigger != "" {
				what += " " + t.Trigger
			}
			what += " " + t.Status
			tag := ""
			switch t.Status {
			case "completed":
				tag = "done, "
			case "failed", "cancelled":
				tag = "crit, "
			case "paused", "running":
				tag = "active, "
			}
			end := max(t.End.UnixMilli(), t.Start.UnixMilli()+1)
			fmt.Fprintf(b, "    %s :%s%d, %d\n", mermaidText(what), tag, t.Start.UnixMilli(), end)
		}
		if lane.Kind == KindParent {
			notificationMilestones(b, r.Notifications)
		}
	}
	b.WriteString("```\n\n")
	if tasks > drawn {
		fmt.Fprintf(b, "_The gantt draws the parent and %d of %d agents; the HTML report draws them all._\n\n", drawn, tasks)
	}
}

// notificationMilestones draws the notifications the parent received as milestones: one
// per delivery (the notifications that arrived together, in one message, share one), at
// most mdNotifications, then one for the rest.
func notificationMilestones(b *strings.Builder, ns []Notification) {
	drawn := 0
	for i := 0; i < len(ns); {
		j := i + 1
		for j < len(ns) && ns[j].Time.Equal(ns[i].Time) {
			j++
		}
		if drawn == mdNotifications {
			fmt.Fprintf(b, "    %s :milestone, %d, 1ms\n", mermaidText(fmt.Sprintf("%d more notifications", len(ns)-i)), ns[i].Time.UnixMilli())
			return
		}
		what := fmt.Sprintf("notified %s t%d %s", shortID(ns[i].TaskID), ns[i].Turn, ns[i].Status)
		if j-i > 1 {
			what = fmt.Sprintf("%d notifications", j-i)
		}
		fmt.Fprintf(b, "    %s :milestone, %d, 1ms\n", mermaidText(what), ns[i].Time.UnixMilli())
		drawn++
		i = j
	}
}

// axisFormat is a d3 time format that tells the ticks of a span apart.
func axisFormat(span time.Duration) string {
	switch {
	case span < 10*time.Second:
		return "%S.%L"
	case span < time.Hour:
		return "%M:%S"
	case span < 24*time.Hour:
		return "%H:%M"
	}
	return "%m-%d %H:%M"
}

func shortID(id string) string {
	if utf8.RuneCountInString(id) > 8 {
		return string([]rune(id)[:8])
	}
	return id
}

// mermaidText makes s safe as a gantt title, section or task name: only letters, digits,
// spaces and a few harmless marks survive (':', '#', ';', quotes, brackets and angle
// brackets are Mermaid's or HTML's), at most 60 characters.
func mermaidText(s string) string {
	var b strings.Builder
	n := 0
	space := false
	for _, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r > 127 && r != '\u2028' && r != '\u2029' && r != '\ufeff' ||
			strings.ContainsRune("-_.,/+=@()", r)
		if !ok {
			space = b.Len() > 0
			continue
		}
		if n == 60 {
			break
		}
		if space {
			b.WriteByte(' ')
			n++
			space = false
		}
		b.WriteRune(r)
		n++
	}
	if b.Len() == 0 {
		return "-"
	}
	return b.String()
}

func agentsTable(b *strings.Builder, r *Report) {
	if len(r.Agents) == 0 {
		return
	}
	b.WriteString("### Agents\n\n| task id | type | description | turns | status | continuable | tokens in / out / cached | tool calls | cost |\n")
	b.WriteString("|---|---|---|---:|---|---|---:|---:|---:|\n")
	for i, a := range r.Agents {
		if i == mdAgents {
			fmt.Fprintf(b, "\n_%d more agents: the HTML report lists them all._\n", len(r.Agents)-i)
			break
		}
		cont := "yes"
		if !a.Continuable {
			cont = "no: " + a.BlockedReason
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %d | %s | %s | %s / %s / %s | %d | %s |\n", mdCode(a.TaskID), mdCell(a.SubagentType), mdCell(a.Description),
			a.Turns, mdCell(a.Status), mdCell(cont), fmtTokens(a.Usage.InputTokens), fmtTokens(a.Usage.OutputTokens), fmtTokens(a.Usage.CacheReadInputTokens), a.ToolCalls, fmtUSD(a.CostUSD))
	}
	b.WriteString("\n")
}

// mdCell makes s one inert table cell: one line, HTML escaped, Markdown's marks escaped.
func mdCell(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			b.WriteByte(' ')
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '&':
			b.WriteString("&amp;")
		case strings.ContainsRune("\\`*_[]()#+!|~{}", r):
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// mdCode makes s safe inside a code span (task ids are hex; this is for safety).
func mdCode(s string) string {
	return strings.NewReplacer("`", "'", "|", "\\|", "\n", " ").Replace(s)
}
