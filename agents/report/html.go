package report

import (
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"strconv"
	"strings"
	"time"
)

// The page: one self-contained file, its style and its one small script inline. The
// timeline is plain HTML and CSS drawn here (each turn a link positioned in percent of
// the session's time), which costs no library, scales with the window, prints, and works
// without the script; the script only filters lanes and opens folded sections.
var (
	//go:embed report.html.tmpl
	pageTemplate string
	//go:embed report.css
	pageStyle string
	//go:embed report.js
	pageScript string
)

// groupSize is how many task lanes the timeline shows per folded group: a session of
// 1,000 agents opens with the parent and its first 100 lanes, the others one click away.
const groupSize = 100

// maxCallRows caps the tool-call rows drawn for one turn (a parent fanning out to
// 1,000 agents); the JSON has them all.
const maxCallRows = 200

// HTML writes r as one self-contained HTML page.
func HTML(w io.Writer, r *Report) error {
	t, err := template.New("page").Funcs(template.FuncMap{
		"ms":   fmtMS,
		"tok":  fmtTokens,
		"usd":  fmtUSD,
		"at":   func(t time.Time) string { return t.UTC().Format("15:04:05.000") },
		"date": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
		"pct":  func(f float64) string { return strconv.FormatFloat(f, 'f', 3, 64) },
		"calls": func(cs []ToolCall) []ToolCall {
			if len(cs) > maxCallRows {
				return cs[:maxCallRows]
			}
			return cs
		},
		"more":  func(cs []ToolCall) int { return max(0, len(cs)-maxCallRows) },
		"lower": func(ss ...string) string { return strings.ToLower(strings.Join(ss, " ")) },
	}).Parse(pageTemplate)
	if err != nil {
		return fmt.Errorf("report template: %w", err)
	}
	return t.Execute(w, newPage(r))
}

// page is what the template draws.
type page struct {
	R      *Report
	CSP    string
	Style  template.CSS
	Script template.JS
	Ticks  []tick
	Gaps   []gap // idle stretches drawn as breaks (axis.go)
	Parent *laneView
	Groups []group
	Lanes  []*laneView // every lane, the parent first (the conversations)
	// Statuses are the agent statuses present, for the filter.
	Statuses []string
}

type tick struct {
	Left  float64
	Label string
}

type group struct {
	Label string
	Open  bool
	Lanes []*laneView
}

type laneView struct {
	*Lane
	Search string // what the filter matches: id, label, type, lowercased
	Filter string // the status the filter matches
	Bars   []bar
	Marks  []mark
}

type bar struct {
	*Turn
	Anchor       string
	Left, Width  float64
	QLeft, QWide float64 // the queued time before the bar (QWide 0: none)
	Kind         string  // the colour: the continuation, or "parent"
	Title        string
}

type mark struct {
	Left   float64
	Anchor string
	Title  string
	Status string
}

func newPage(r *Report) *page {
	sum := sha256.Sum256([]byte(pageScript))
	p := &page{R: r, Style: template.CSS(pageStyle), Script: template.JS(pageScript),
		// Nothing may be fetched, and no script runs but this page's own: a session's
		// text that escaped its escaping would still be inert.
		CSP: "default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'sha256-" +
			base64.StdEncoding.EncodeToString(sum[:]) + "'; base-uri 'none'; form-action 'none'"}
	ax := newAxis(r)
	pos := ax.pos
	p.Ticks, p.Gaps = ax.ticks(), ax.gaps()
	seen := map[string]bool{}
	for i := range r.Lanes {
		lane := &r.Lanes[i]
		v := &laneView{Lane: lane, Search: strings.ToLower(lane.ID + " " + lane.Label + " " + lane.SubagentType), Filter: lane.Status}
		for j := range lane.Turns {
			t := &lane.Turns[j]
			b := bar{Turn: t, Anchor: turnAnchor(lane.ID, t.N), Left: pos(t.Start), Kind: t.Continuation}
			b.Width = pos(t.End) - b.Left
			if lane.Kind == KindParent {
				b.Kind = KindParent
			}
			if b.Kind == "" {
				b.Kind = StatusUnknown
			}
			if !t.Queued.IsZero() {
				b.QLeft = pos(t.Queued)
				b.QWide = b.Left - b.QLeft
			}
			b.Title = barTitle(lane, t)
			v.Bars = append(v.Bars, b)
		}
		if lane.Kind == KindParent {
			v.Filter = r.Totals.Outcome
			for _, n := range r.Notifications {
				v.Marks = append(v.Marks, mark{Left: pos(n.Time), Anchor: turnAnchor(n.TaskID, n.Turn), Status: n.Status,
					Title: fmt.Sprintf("notification at +%s: task %s turn %d %s (read by parent turn %d)", fmtMS(n.Time.Sub(r.Start).Milliseconds()), n.TaskID, n.Turn, n.Status, n.ParentTurn)})
			}
			p.Parent = v
		} else if !seen[lane.Status] {
			seen[lane.Status] = true
			p.Statuses = append(p.Statuses, lane.Status)
		}
		p.Lanes = append(p.Lanes, v)
	}
	tasks := p.Lanes
	if len(tasks) > 0 && tasks[0].Kind == KindParent {
		tasks = tasks[1:]
	}
	for i := 0; i < len(tasks); i += groupSize {
		end := min(i+groupSize, len(tasks))
		label := fmt.Sprintf("agents %d–%d of %d", i+1, end, len(tasks))
		if len(tasks) <= groupSize {
			label = fmt.Sprintf("agents (%d)", len(tasks))
		}
		p.Groups = append(p.Groups, group{Label: label, Open: i == 0, Lanes: tasks[i:end]})
	}
	return p
}

// turnAnchor is the id of a turn's section in the page.
func turnAnchor(lane string, n int) string { return "t-" + lane + "-" + strconv.Itoa(n) }

func barTitle(lane *Lane, t *Turn) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s turn %d", lane.Label, t.N)
	if t.Trigger != "" {
		fmt.Fprintf(&b, " (%s)", t.Trigger)
	}
	if t.Continuation != "" {
		fmt.Fprintf(&b, " · %s", t.Continuation)
	}
	fmt.Fprintf(&b, " · %s · %s", t.Status, fmtMS(t.DurationMS))
	if t.QueueMS > 0 {
		fmt.Fprintf(&b, " after %s queued", fmtMS(t.QueueMS))
	}
	fmt.Fprintf(&b, " · %d tool calls · %s tokens", len(t.ToolCalls), fmtTokens(t.Usage.Total()))
	return b.String()
}

// ticks returns the offsets of the marks of a span: at most about n of them, at a round
// step.
func ticks(span time.Duration, n int) []time.Duration {
	if span <= 0 {
		return []time.Duration{0}
	}
	steps := []time.Duration{}
	for _, unit := range []time.Duration{time.Millisecond, time.Second, time.Minute, time.Hour} {
		for _, k := range []time.Duration{1, 2, 5, 10, 15, 20, 30} {
			steps = append(steps, k*unit)
		}
	}
	step := steps[len(steps)-1]
	for _, s := range steps {
		if span/s <= time.Duration(n) {
			step = s
			break
		}
	}
	var out []time.Duration
	for at := time.Duration(0); at <= span; at += step {
		out = append(out, at)
	}
	return out
}

// fmtMS is a duration for people: 840 ms, 1.2 s, 3 m 05 s, 2 h 10 m.
func fmtMS(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d < time.Second:
		return fmt.Sprintf("%d ms", ms)
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
	case d < time.Hour:
		return fmt.Sprintf("%d m %02d s", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%d h %02d m", int(d.Hours()), int(d.Minutes())%60)
}

// fmtTokens groups the digits of n: 1,234,567.
func fmtTokens(n int64) string {
	s := strconv.FormatInt(n, 10)
	if n < 0 {
		return s
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func fmtUSD(v float64) string {
	if v != 0 && v < 0.01 {
		return "$" + strconv.FormatFloat(v, 'f', 4, 64)
	}
	return "$" + strconv.FormatFloat(v, 'f', 2, 64)
}
