// Package progress reports a run's progress on stderr, fed from its event stream.
//
// Three modes (--progress): auto draws one live status line when stderr is a terminal —
// agents running, queued and done, the parent's turn, tokens, cost and elapsed time —
// redrawn in place and erased at the end, and writes nothing when stderr is not a
// terminal; plain writes one line per agent start, finish and failure, and a heartbeat
// every 10 seconds, for CI logs; off writes nothing. stdout is never touched: it belongs
// to the event stream.
package progress

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/price"
	"github.com/stoke-cli/stoke/streamjson"
)

// Modes of --progress.
const (
	ModeAuto  = "auto"
	ModePlain = "plain"
	ModeOff   = "off"
)

// Modes lists the valid --progress values.
func Modes() []string { return []string{ModeAuto, ModePlain, ModeOff} }

// DefaultHeartbeat is how often plain mode says the run is alive.
const DefaultHeartbeat = 10 * time.Second

// refresh is how often the live line is redrawn when nothing happens (the clock moves).
const refresh = time.Second

// Config configures a Reporter.
type Config struct {
	// Mode is ModeAuto, ModePlain or ModeOff.
	Mode string
	// Out is stderr.
	Out io.Writer
	// Terminal reports whether Out is a terminal; auto draws only then.
	Terminal bool
	// Width returns the terminal's width in columns (0 when unknown); the live line is
	// cut to fit, so that it never wraps. Nil means 80.
	Width func() int
	// Prices estimate the cost from the assistant events' usage.
	Prices price.Table
	// Heartbeat is plain mode's period (DefaultHeartbeat when 0).
	Heartbeat time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Reporter follows a run's events and reports them. Its methods are safe for concurrent
// use. Start it after New and Stop it once at the end of the run.
type Reporter struct {
	cfg  Config
	live bool // draw the status line
	on   bool // report anything

	mu      sync.Mutex
	start   time.Time
	agents  map[string]*agent   // by task id
	pending map[string]struct{} // task tool calls of the parent not yet started (queued)
	turns   int                 // parent model calls
	tokens  int64
	cost    float64
	drawn   bool // the live line is on screen
	stopped bool

	stop chan struct{}
	done chan struct{}
}

type agent struct {
	kind    string // subagent type
	running bool
	settled int // turns that ended
}

// New returns a reporter; with nothing to report (off, or auto without a terminal) every
// method is a cheap no-op.
func New(cfg Config) *Reporter {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.Width == nil {
		cfg.Width = func() int { return 80 }
	}
	r := &Reporter{cfg: cfg, agents: map[string]*agent{}, pending: map[string]struct{}{}}
	switch cfg.Mode {
	case ModePlain:
		r.on = cfg.Out != nil
	case ModeAuto, "":
		r.on, r.live = cfg.Out != nil && cfg.Terminal, cfg.Out != nil && cfg.Terminal
	}
	return r
}

// Start starts the clock and the goroutine that redraws the live line or writes the
// heartbeat; Stop ends it.
func (r *Reporter) Start() {
	r.mu.Lock()
	r.start = r.cfg.Now()
	r.mu.Unlock()
	if !r.on {
		return
	}
	r.stop, r.done = make(chan struct{}), make(chan struct{})
	period := refresh
	if !r.live {
		period = r.cfg.Heartbeat
	}
	go r.tick(period)
}

func (r *Reporter) tick(period time.Duration) {
	defer close(r.done)
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
			r.mu.Lock()
			if r.live {
				r.draw()
			} else {
				r.printf("progress: %s", r.status())
			}
			r.mu.Unlock()
		}
	}
}

// Stop ends the goroutine and erases the live line. Later events are ignored.
func (r *Reporter) Stop() {
	if r.stop != nil {
		close(r.stop)
		<-r.done
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.erase()
	r.stopped = true
}

// Observe takes one event of the run (headless.Options.Observe).
func (r *Reporter) Observe(ev streamjson.Event) {
	if !r.on {
		return
	}
	var cost float64
	if a, ok := ev.(*streamjson.Assistant); ok {
		// Outside the lock: pricing may log a warning, which goes through Writer.
		cost = r.cfg.Prices.Cost(a.Message.Model, llm.Usage(a.Message.Usage))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return
	}
	changed := true
	switch e := ev.(type) {
	case *streamjson.Assistant:
		r.tokens += llm.Usage(e.Message.Usage).Total()
		r.cost += cost
		if e.TaskID == "" && e.ParentToolUseID == nil {
			r.turns++
			for _, b := range e.Message.Content {
				if b.Type == "tool_use" && b.Name == "task" && !collects(b.Input) {
					r.pending[b.ID] = struct{}{}
				}
			}
		}
	case *streamjson.User:
		if e.TaskID != "" || e.ParentToolUseID != nil {
			changed = false
			break
		}
		for _, b := range e.Message.Content {
			if _, ok := r.pending[b.ToolUseID]; ok && b.Type == "tool_result" && b.IsError {
				delete(r.pending, b.ToolUseID) // the launch was refused
			}
		}
	case *streamjson.TaskStarted:
		delete(r.pending, e.ToolUseID)
		a := r.agents[e.TaskID]
		if a == nil {
			a = &agent{kind: e.SubagentType}
			r.agents[e.TaskID] = a
		}
		a.running = true
		if !r.live {
			mode := "foreground"
			if e.IsBackgrounded {
				mode = "background"
			}
			r.printf("agent started: %s %s (turn %d, %s, %s): %s", e.SubagentType, e.TaskID, e.Turn, e.Continuation, mode, oneLine(e.Description, 80))
		}
	case *streamjson.TaskNotification:
		a := r.agents[e.TaskID]
		if a == nil {
			a = &agent{}
			r.agents[e.TaskID] = a
		}
		a.running = false
		a.settled++
		if !r.live {
			line := fmt.Sprintf("agent %s: %s %s (turn %d, %s, %d tokens, %d tool uses)", e.Status, a.kind, e.TaskID, e.Turn,
				time.Duration(e.Usage.DurationMS)*time.Millisecond, e.Usage.TotalTokens, e.Usage.ToolUses)
			if e.Status != streamjson.StatusCompleted {
				reason := e.Reason
				if reason == "" {
					reason = oneLine(e.Summary, 120)
				}
				if reason != "" {
					line += ": " + reason
				}
			}
			r.printf("%s", line)
		}
	default:
		changed = false
	}
	if changed && r.live {
		r.draw()
	}
}

// collects reports whether a task call's input names a task_id (a collect, not a launch).
func collects(input json.RawMessage) bool {
	var in struct {
		TaskID string `json:"task_id"`
	}
	return json.Unmarshal(input, &in) == nil && in.TaskID != ""
}

// status is the one-line summary. r.mu is held.
func (r *Reporter) status() string {
	running, done := 0, 0
	for _, a := range r.agents {
		if a.running {
			running++
		} else {
			done++
		}
	}
	elapsed := r.cfg.Now().Sub(r.start).Truncate(time.Second)
	return fmt.Sprintf("agents %d running, %d queued, %d done · turn %d · %s tokens · $%.4f · %s",
		running, len(r.pending), done, r.turns, compact(r.tokens), r.cost, elapsed)
}

// draw writes the live line over the previous one. r.mu is held.
func (r *Reporter) draw() {
	if r.stopped {
		return
	}
	line := "stoke: " + r.status()
	if w := r.cfg.Width(); w > 1 && len([]rune(line)) > w-1 {
		line = string([]rune(line)[:w-1]) // never wrap: \r returns to this row only
	}
	fmt.Fprintf(r.cfg.Out, "\r\x1b[K%s", line)
	r.drawn = true
}

// erase clears the live line. r.mu is held.
func (r *Reporter) erase() {
	if r.drawn {
		fmt.Fprint(r.cfg.Out, "\r\x1b[K")
		r.drawn = false
	}
}

// printf writes one plain line. r.mu is held.
func (r *Reporter) printf(format string, args ...any) {
	fmt.Fprintf(r.cfg.Out, "stoke: "+format+"\n", args...)
}

// Writer returns a writer for other stderr output (the logger): each write first erases
// the live line, then redraws it below, so that log lines and the status line never mix.
// Without a live line it is Out itself.
func (r *Reporter) Writer() io.Writer { return r.Wrap(r.cfg.Out) }

// Wrap returns w (stdout, when it shows on the same terminal) wrapped like Writer: the
// live line is erased before each write and redrawn after it.
func (r *Reporter) Wrap(w io.Writer) io.Writer {
	if !r.live {
		return w
	}
	return writerFunc(func(p []byte) (int, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		wasDrawn := r.drawn
		r.erase()
		n, err := w.Write(p)
		if wasDrawn && !r.stopped {
			r.draw()
		}
		return n, err
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// compact writes a token count as 950, 12.3k, 4.5M.
func compact(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprint(n)
	case n < 1_000_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	default:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	}
}

// oneLine folds s onto one line of at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
