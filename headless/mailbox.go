package headless

import (
	"sync"
	"time"

	"github.com/stoke-cli/stoke/agents"
	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/streamjson"
)

// The coalescing of notifications. While other background agents are still at work, the
// notifications that arrive are held until the oldest of them has waited a window, then
// delivered together, in one user message (agents.NotificationsMessage) of at most
// notifyBatch notifications: 1,000 agents finishing over a few seconds take a handful of
// parent turns, not one each. The window is NotifyWindow (1 s); while agents keep
// finishing it doubles with each delivery, up to notifyWindows windows (each parent turn
// resends the whole history, so under load fewer, fuller turns cost less), and starts
// over once they pause. Once no background agent is running or queued (or about to push
// its notification), whatever is pending is delivered at once.
const (
	DefaultNotifyWindow = time.Second
	notifyWindows       = 8
	notifyBatch         = 1000
)

// mailbox holds the notifications of background turns waiting for the parent. Push is
// called by the registry's turn goroutines; the parent reads them between its steps
// (mid-turn, where reading costs no extra model call), or the run loop takes them as a
// new turn once they are due (due).
type mailbox struct {
	agents.NopLifecycle

	mu      sync.Mutex
	pending []agents.Notification
	since   time.Time     // when the oldest pending notification arrived
	last    time.Time     // the last delivery
	cur     time.Duration // the window now (window, doubled by deliveries under load)
	// ready has a token while pending is not empty, or once a turn settled since the loop
	// last looked.
	ready chan struct{}
	emit  func(streamjson.Event)
	// window is how long a notification may wait for others (0: not at all); active
	// counts the turns running, queued, or whose notification is not yet pushed (an
	// agent that just completed is about to push its own); now is the clock. Set before
	// use.
	window time.Duration
	active func() int
	now    func() time.Time
}

func newMailbox(emit func(streamjson.Event), window time.Duration) *mailbox {
	return &mailbox{ready: make(chan struct{}, 1), emit: emit, window: window, active: func() int { return 0 }, now: time.Now}
}

// Push queues n for the parent.
func (mb *mailbox) Push(n agents.Notification) {
	mb.mu.Lock()
	if len(mb.pending) == 0 {
		mb.since = mb.now()
		if mb.cur == 0 || mb.since.Sub(mb.last) > 2*mb.cur {
			mb.cur = mb.window // the agents paused: start over
		}
	}
	mb.pending = append(mb.pending, n)
	mb.mu.Unlock()
	mb.wake()
}

// wake makes the run loop look again (ready) even with nothing pending: a background turn
// has settled, so the run may be over or idle.
func (mb *mailbox) wake() {
	select {
	case mb.ready <- struct{}{}:
	default:
	}
}

// TurnSettled implements agents.Lifecycle: the registry has recorded a background turn as
// settled (after its notification was pushed), which the run loop must see even when the
// parent has already read the notification mid-turn.
func (mb *mailbox) TurnSettled(agents.TurnInfo, agents.Row) { mb.wake() }

// due reports how long the pending notifications should still wait for others: 0 when
// they are due now (or none is pending).
func (mb *mailbox) due() time.Duration {
	mb.mu.Lock()
	n, since, window := len(mb.pending), mb.since, mb.cur
	mb.mu.Unlock()
	if n == 0 || n >= notifyBatch || window <= 0 {
		return 0
	}
	wait := window - mb.now().Sub(since)
	if wait <= 0 || mb.active() == 0 {
		return 0
	}
	return wait
}

// take returns the pending notifications (at most notifyBatch, oldest first) as one user
// message, which it emits as a user line; false when none is pending.
func (mb *mailbox) take() (llm.Message, bool) {
	busy := mb.active() > 0
	mb.mu.Lock()
	k := min(len(mb.pending), notifyBatch)
	batch := mb.pending[:k:k]
	mb.pending = mb.pending[k:]
	rest := len(mb.pending)
	if k > 0 {
		mb.last = mb.now()
		if busy {
			mb.cur = min(2*mb.cur, notifyWindows*mb.window)
		}
	}
	if rest == 0 {
		mb.pending = nil
	} else {
		mb.since = mb.now() // the rest are due after a window of their own
	}
	mb.mu.Unlock()
	if k == 0 {
		return llm.Message{}, false
	}
	if rest > 0 {
		mb.wake()
	}
	for _, n := range batch {
		n.Delivered() // the parent has it: the registry may prune its row
	}
	m := agents.NotificationsMessage(batch)
	u := streamjson.NewUser(m.Content)
	u.Origin = &streamjson.Origin{Kind: "task-notification"}
	mb.emit(u)
	return m, true
}

func (mb *mailbox) empty() bool {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	return len(mb.pending) == 0
}

// Drain implements runtime.Inbox: notifications that arrive mid-turn are read at the next
// step, which the parent takes anyway.
func (mb *mailbox) Drain() []llm.Message {
	if m, ok := mb.take(); ok {
		return []llm.Message{m}
	}
	return nil
}

// Settle implements runtime.Inbox: notifications pending as the parent finishes are read
// in the same turn when they are due; else the turn ends and the run loop takes them
// once they are.
func (mb *mailbox) Settle(string) []llm.Message {
	if mb.due() > 0 {
		return nil
	}
	return mb.Drain()
}
