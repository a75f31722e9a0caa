package report

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stoke-cli/stoke/agents"
	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/price"
	"github.com/stoke-cli/stoke/agents/store"
	"github.com/stoke-cli/stoke/streamjson"
)

const (
	sessionID = "0e9c4b7a-0000-4000-8000-000000000029"
	taskA     = "a0123456789abcdef"
)

var base = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// at is base plus ms milliseconds.
func at(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }

// fixture writes a session: the parent launches task A in the background (a tool call),
// reads its notification, continues it with send_message (resident), and reads the
// second notification; A reads a file that is not there, then answers; its second turn
// waited 2 ms for a slot. rich says whether the session records what a report draws
// (this stoke) or was written before (an older stoke: no model, usage, call times, turn
// starts, continuations, parent turn records).
func fixture(t *testing.T, rich bool, secret string) store.Stored {
	t.Helper()
	home, cwd := t.TempDir(), "/work/project"
	sess := store.New(home, cwd, sessionID)
	info := store.Info{SessionID: sessionID, CWD: cwd, Model: "gpt-4o", CreatedAt: at(0), UpdatedAt: at(102)}
	if err := sess.WriteInfo(info); err != nil {
		t.Fatal(err)
	}
	usage := &llm.Usage{InputTokens: 1000, OutputTokens: 100, CacheReadInputTokens: 500}
	info4 := func(r store.Record) store.Record {
		if !rich {
			r.Start, r.Usage, r.Calls, r.Continuation, r.Queued, r.Model = time.Time{}, nil, nil, "", time.Time{}, ""
		}
		return r
	}
	msg := func(ms int, role llm.Role, blocks ...llm.Block) store.Record {
		return store.Record{Type: store.RecordMessage, Time: at(ms), Message: &llm.Message{Role: role, Content: blocks}}
	}
	reply := func(ms, started int, blocks ...llm.Block) store.Record {
		r := msg(ms, llm.RoleAssistant, blocks...)
		r.Start, r.Usage, r.Model = at(started), usage, "gpt-4o"
		return r
	}
	results := func(ms int, id string, started, dur int, content string, isErr bool) store.Record {
		r := msg(ms, llm.RoleUser, llm.Block{Type: llm.BlockToolResult, ToolUseID: id, Content: content, IsError: isErr})
		r.Calls = []store.CallTime{{ID: id, Start: at(started), DurationMS: int64(dur)}}
		return r
	}
	use := func(id, name, input string) llm.Block {
		return llm.Block{Type: llm.BlockToolUse, ID: id, Name: name, Input: json.RawMessage(input)}
	}
	parentTurn := func(ms, started int) store.Record {
		return store.Record{Type: store.RecordTurn, Time: at(ms), Status: "completed", Start: at(started)}
	}
	note := func(ms, turn int) store.Record {
		return msg(ms, llm.RoleUser, llm.TextBlock(fmt.Sprintf("<task-notification>\n<task-id>%s</task-id>\n<status>completed</status>\n<turn>%d</turn>\n<summary>done</summary>\n</task-notification>", taskA, turn)))
	}
	parent := []store.Record{
		msg(0, llm.RoleUser, llm.TextBlock("go "+secret)),
		reply(10, 1, use("c1", "task", `{"description":"keep","prompt":"<b>hi</b>"}`)),
		results(20, "c1", 11, 9, "task_id: "+taskA+"\nThe agent is running in the background.", false),
		reply(25, 21, llm.TextBlock("waiting")),
		parentTurn(26, 0),
		note(60, 1),
		reply(62, 61, use("c2", "send_message", `{"task_id":"`+taskA+`","message":"again"}`)),
		results(63, "c2", 62, 1, "task_id: "+taskA+"\ncontinued on its resident runtime as turn 2; the reply arrives as a <task-notification>.", false),
		reply(64, 63, llm.TextBlock("ok")),
		parentTurn(65, 60),
		note(100, 2),
		reply(101, 100, llm.TextBlock("final")),
		parentTurn(102, 100),
	}
	tr, err := sess.OpenParent(info, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range parent {
		if !rich && r.Type == store.RecordTurn {
			continue
		}
		if err := tr.Write(info4(r)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	taskTurn := func(ms, n, started int, kind streamjson.Continuation, queued int) store.Record {
		r := store.Record{Type: store.RecordTurn, Time: at(ms), Turn: n, Status: "completed", Start: at(started), Continuation: string(kind)}
		if queued > 0 {
			r.Queued = at(queued)
		}
		return r
	}
	task := []store.Record{
		{Type: store.RecordMeta, TaskID: taskA, SubagentType: "general-purpose"},
		msg(21, llm.RoleUser, llm.TextBlock("<b>hi</b>")),
		reply(30, 22, use("r1", "read_file", `{"file_path":"x"}`)),
		results(40, "r1", 31, 8, "read_file: x does not exist", true),
		reply(45, 41, llm.TextBlock("Stored.")),
		taskTurn(46, 1, 21, streamjson.ContinuationFresh, 0),
		msg(66, llm.RoleUser, llm.TextBlock("again")),
		reply(70, 67, llm.TextBlock("Stored it.")),
		taskTurn(71, 2, 66, streamjson.ContinuationResident, 64),
	}
	path := sess.TaskTranscript(taskA)
	tt, err := sess.OpenTranscript(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range task {
		if r.Type == store.RecordMessage || r.Type == store.RecordTurn {
			r.Turn = max(r.Turn, map[bool]int{true: 1, false: 2}[r.Time.Before(at(50))])
		}
		if err := tt.Write(info4(r)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tt.Close(); err != nil {
		t.Fatal(err)
	}
	row := agents.Row{TaskID: taskA, Description: "keep " + secret, SubagentType: "general-purpose", Prompt: "<b>hi</b>",
		Status: agents.StatusCompleted, Turn: 2, Backgrounded: true, ParentSessionID: sessionID, ToolUseID: "c1",
		CreatedAt: at(20), UpdatedAt: at(71), EndedAt: at(71), Transcript: path, Notified: true}
	data, err := agents.EncodeSidecar(agents.Sidecar{CWD: cwd, Row: row}, sess.Rel)
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.WriteSidecar(string(row.TaskID), data); err != nil {
		t.Fatal(err)
	}
	return store.Stored{Session: sess, Info: info}
}

func load(t *testing.T, found store.Stored, opts Options) *Report {
	t.Helper()
	opts.Prices = price.Default()
	r, err := Load(found, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Warnings) > 0 {
		t.Fatalf("warnings: %v", r.Warnings)
	}
	return r
}

// span is what a test checks of a turn.
type span struct {
	n                   int
	kind, trigger, stat string
	start, end, queued  int
}

func spans(l Lane) []span {
	var out []span
	ms := func(t time.Time) int {
		if t.IsZero() {
			return 0
		}
		return int(t.Sub(base) / time.Millisecond)
	}
	for _, t := range l.Turns {
		out = append(out, span{t.N, t.Continuation, t.Trigger, t.Status, ms(t.Start), ms(t.End), ms(t.Queued)})
	}
	return out
}

// A session that records what a report draws is drawn exactly: the parent's turns by
// its turn records, each task turn's start, queue time and continuation, each tool
// call's time, the notifications on the turns they announce, usage and cost by model.
func TestLoadRecordedSession(t *testing.T) {
	t.Parallel()
	r := load(t, fixture(t, true, ""), Options{})
	if len(r.Lanes) != 2 || r.Lanes[0].ID != ParentLane || r.Lanes[1].ID != taskA {
		t.Fatalf("lanes %+v", r.Lanes)
	}
	wantParent := []span{
		{1, "", TriggerPrompt, "completed", 0, 26, 0},
		{2, "", TriggerNotification, "completed", 60, 65, 0},
		{3, "", TriggerNotification, "completed", 100, 102, 0},
	}
	if got := spans(r.Lanes[0]); !slices.Equal(got, wantParent) {
		t.Errorf("parent turns\n%+v\nwant\n%+v", got, wantParent)
	}
	wantTask := []span{
		{1, "fresh", "", "completed", 21, 46, 0},
		{2, "resident", "", "completed", 66, 71, 64},
	}
	if got := spans(r.Lanes[1]); !slices.Equal(got, wantTask) {
		t.Errorf("task turns\n%+v\nwant\n%+v", got, wantTask)
	}
	t1, t2 := r.Lanes[1].Turns[0], r.Lanes[1].Turns[1]
	if t2.QueueMS != 2 || !t1.Notified.Equal(at(60)) || !t2.Notified.Equal(at(100)) {
		t.Errorf("queue %d ms, notified %v and %v", t2.QueueMS, t1.Notified, t2.Notified)
	}
	if c := t1.ToolCalls; len(c) != 1 || c[0].Name != "read_file" || !c[0].IsError || c[0].DurationMS != 8 || c[0].Estimated || !c[0].Start.Equal(at(31)) {
		t.Errorf("task tool calls %+v", c)
	}
	if c := r.Lanes[0].Turns[0].ToolCalls; len(c) != 1 || c[0].Name != "task" || c[0].DurationMS != 9 || c[0].IsError || !c[0].Answered {
		t.Errorf("parent tool calls %+v", c)
	}
	one := llm.Usage{InputTokens: 1000, OutputTokens: 100, CacheReadInputTokens: 500}
	cost := price.Default().Cost("gpt-4o", one)
	if cost == 0 {
		t.Fatal("gpt-4o has no price")
	}
	if t1.Usage != one.Add(one) || t1.ModelCalls != 2 || !near(t1.CostUSD, 2*cost) || !slices.Equal(t1.Models, []string{"gpt-4o"}) {
		t.Errorf("turn 1: usage %+v, %d calls, cost %v (want %v)", t1.Usage, t1.ModelCalls, t1.CostUSD, 2*cost)
	}
	tot := r.Totals
	if tot.ModelCalls != 8 || tot.Turns != 5 || tot.ToolCalls != 3 || tot.ToolErrors != 1 || tot.Agents != 1 || !near(tot.CostUSD, 8*cost) || tot.Outcome != "completed" {
		t.Errorf("totals %+v", tot)
	}
	if len(r.Notifications) != 2 || r.Notifications[1].ParentTurn != 3 || r.Notifications[0].Turn != 1 {
		t.Errorf("notifications %+v", r.Notifications)
	}
	if a := r.Agents; len(a) != 1 || !a[0].Continuable || a[0].Turns != 2 || a[0].ToolCalls != 1 || a[0].Usage != one.Add(one).Add(one) {
		t.Errorf("agents %+v", a)
	}
	if !r.Start.Equal(at(0)) || !r.End.Equal(at(102)) || r.DurationMS != 102 {
		t.Errorf("bounds %v – %v (%d ms)", r.Start, r.End, r.DurationMS)
	}
	if len(r.Missing) > 0 {
		t.Errorf("missing %v", r.Missing)
	}
}

func near(a, b float64) bool { return a-b < 1e-12 && b-a < 1e-12 }

// A session written before stoke recorded these facts still reports: the parent's turns
// inferred from its messages, the continuation from its send_message results, a tool
// call's duration estimated by its round; and the report says what it estimated.
func TestLoadOlderSession(t *testing.T) {
	t.Parallel()
	r := load(t, fixture(t, false, ""), Options{})
	wantParent := []span{
		{1, "", TriggerPrompt, "completed", 0, 25, 0},
		{2, "", TriggerNotification, "completed", 60, 64, 0},
		{3, "", TriggerNotification, "completed", 100, 101, 0},
	}
	if got := spans(r.Lanes[0]); !slices.Equal(got, wantParent) {
		t.Errorf("parent turns\n%+v\nwant\n%+v", got, wantParent)
	}
	wantTask := []span{
		{1, "fresh", "", "completed", 21, 46, 0},
		{2, "resident", "", "completed", 66, 71, 0},
	}
	if got := spans(r.Lanes[1]); !slices.Equal(got, wantTask) {
		t.Errorf("task turns\n%+v\nwant\n%+v", got, wantTask)
	}
	if c := r.Lanes[1].Turns[0].ToolCalls; len(c) != 1 || !c[0].Estimated || c[0].DurationMS != 10 || !c[0].Start.Equal(at(30)) {
		t.Errorf("task tool calls %+v", c)
	}
	for _, m := range []string{missingUsage, missingToolTimes, missingParentTurns, missingQueue} {
		if !slices.Contains(r.Missing, m) {
			t.Errorf("missing %v, want %q among them", r.Missing, m)
		}
	}
	if r.Totals.ModelCalls != 8 || r.Totals.Usage.Total() != 0 {
		t.Errorf("totals %+v", r.Totals)
	}
}

// Text is redacted before it is cut: a secret cut in two still leaves no part of it.
func TestRedactedBeforeCut(t *testing.T) {
	t.Parallel()
	const secret = "sk-test-0123456789abcdef"
	redact := func(s string) string { return strings.ReplaceAll(s, secret, "[REDACTED]") }
	r := load(t, fixture(t, true, secret), Options{Redact: redact, Limits: Limits{Text: 11}})
	var out bytes.Buffer
	for _, f := range Formats() {
		if err := Render(&out, r, f); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Contains(out.String(), "sk-test") {
		t.Fatal("a part of the secret is in the report")
	}
	if got := r.Lanes[0].Turns[0].Messages[0].Blocks[0]; got.Text != "go [REDACTE…" || !got.Cut {
		t.Errorf("the prompt reads %+v", got)
	}
	if !strings.Contains(r.Agents[0].Description, "[REDACTED]") {
		t.Errorf("description %q", r.Agents[0].Description)
	}
}

// The page shows a model's </script> and HTML as text: it holds one script, its own,
// which the Content-Security-Policy allows by hash, and no element of the session's.
func TestHTMLIsInert(t *testing.T) {
	t.Parallel()
	found := fixture(t, true, `</script><script>alert(1)</script>"><img src=x onerror=alert(2)>`)
	r := load(t, found, Options{})
	var out bytes.Buffer
	if err := HTML(&out, r); err != nil {
		t.Fatal(err)
	}
	page := out.String()
	if n := strings.Count(page, "<script"); n != 1 {
		t.Errorf("%d script elements, want 1", n)
	}
	for _, bad := range []string{"<img", "<b>hi"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q", bad)
		}
	}
	// Every attribute value is quoted (html/template): what is left of a tag once they
	// are dropped are its name and its attributes' names.
	quoted := regexp.MustCompile(`"[^"]*"`)
	for _, tag := range regexp.MustCompile(`<[a-zA-Z][^>]*>`).FindAllString(page, -1) {
		if strings.Contains(quoted.ReplaceAllString(tag, ""), "onerror") {
			t.Errorf("an element with an onerror attribute: %s", tag)
		}
	}
	if !strings.Contains(page, "&lt;/script&gt;&lt;script&gt;alert(1)") {
		t.Error("the session's </script> is not shown as text")
	}
	script := regexp.MustCompile(`(?s)<script>(.*)</script>`).FindStringSubmatch(page)
	sum := sha256.Sum256([]byte(script[1]))
	csp := regexp.MustCompile(`http-equiv="Content-Security-Policy" content="([^"]*)"`).FindStringSubmatch(page)
	if csp == nil || !strings.Contains(html.UnescapeString(csp[1]), "default-src 'none'") || !strings.Contains(html.UnescapeString(csp[1]), "script-src 'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'") {
		t.Errorf("CSP %q does not allow only the page's script", csp)
	}
	for _, want := range []string{`data-continuation="resident"`, `class="bar k-fresh s-completed"`, `id="t-` + taskA + `-2"`, `<code>read_file</code>`, `class="note s-completed"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
}

// The JSON is the model itself: it decodes to the same report.
func TestJSONIsTheModel(t *testing.T) {
	t.Parallel()
	r := load(t, fixture(t, true, ""), Options{})
	var out bytes.Buffer
	if err := Render(&out, r, FormatJSON); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(out.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(r)
	b, _ := json.Marshal(&back)
	if !bytes.Equal(a, b) || back.Version != Version || len(back.Lanes[1].Turns[1].Messages) != 2 {
		t.Errorf("the JSON does not decode to the report:\n%s\n%s", a, b)
	}
}

// The Markdown caps the gantt at mdLanes task lanes and says how many it left out, and
// keeps Mermaid's and Markdown's marks out of what it copies from the session.
func TestMarkdownCapsAndEscapes(t *testing.T) {
	t.Parallel()
	r := &Report{Session: Session{ID: sessionID}, Start: at(0), End: at(1000), DurationMS: 1000}
	r.Lanes = append(r.Lanes, Lane{ID: ParentLane, Kind: KindParent, Label: ParentLane, Turns: []Turn{{N: 1, Trigger: TriggerPrompt, Status: "completed", Start: at(0), End: at(1000)}}})
	for i := range 30 {
		id := fmt.Sprintf("a%016x", i)
		label := fmt.Sprintf("job %d: a|b #c; <d> `e`\nf", i)
		r.Lanes = append(r.Lanes, Lane{ID: id, Kind: KindTask, Label: label, Turns: []Turn{{N: 1, Continuation: "fresh", Status: "failed", Start: at(i), End: at(i)}}})
		r.Agents = append(r.Agents, Agent{TaskID: id, Description: label, Status: "failed"})
	}
	r.Notifications = []Notification{{TaskID: "x:y", Turn: 1, Status: "completed", Time: at(500)}}
	var out bytes.Buffer
	if err := Markdown(&out, r); err != nil {
		t.Fatal(err)
	}
	md := out.String()
	gantt := regexp.MustCompile("(?s)```mermaid\n(.*?)```").FindStringSubmatch(md)
	if gantt == nil {
		t.Fatalf("no mermaid block:\n%s", md)
	}
	if n := strings.Count(gantt[1], "\n    section "); n != 21 {
		t.Errorf("%d sections, want the parent's and 20", n)
	}
	for line := range strings.Lines(gantt[1]) {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " :")
		if strings.ContainsAny(name, ":#;<>`|\"") {
			t.Errorf("a gantt line's name holds Mermaid's marks: %q", line)
		}
	}
	if !strings.Contains(gantt[1], ":crit, ") || !strings.Contains(gantt[1], ":milestone, ") {
		t.Errorf("gantt\n%s", gantt[1])
	}
	if !strings.Contains(md, "draws the parent and 20 of 30 agents") {
		t.Errorf("no note of the lanes left out:\n%s", md)
	}
	if strings.Contains(md, "<d>") || !strings.Contains(md, `job 0: a\|b \#c; &lt;d&gt; \`+"`e\\`"+` f`) {
		t.Errorf("table cell not escaped:\n%s", md)
	}
}

func TestParseFormat(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Format{"html": FormatHTML, "HTML": FormatHTML, "markdown": FormatMarkdown, "md": FormatMarkdown, "json": FormatJSON, "pdf": ""} {
		got, err := ParseFormat(in)
		if got != want || (err != nil) != (want == "") {
			t.Errorf("ParseFormat(%q) = %q, %v", in, got, err)
		}
	}
}

// WriteFile replaces the file whole, and leaves nothing behind when it cannot.
func TestWriteFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := load(t, fixture(t, true, ""), Options{})
	path := filepath.Join(dir, "r.html")
	if err := WriteFile(path, r, FormatHTML); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(filepath.Join(dir, "missing", "r.html"), r, FormatHTML); err == nil {
		t.Error("a report into a missing directory was written")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("the directory holds %v", entries)
	}
}
