package headless

import (
	"sync"

	"github.com/stoke-cli/stoke/agents"
	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/streamjson"
)

// mailbox holds the <task-notification> messages waiting for the parent. Push is called by
// the registry's turn goroutines; the parent drains it between steps (mid-turn) or takes
// it as a new turn when idle.
type mailbox struct {
	agents.NopLifecycle

	mu      sync.Mutex
	pending []llm.Message
	// ready has a token while pending is not empty, or once a turn settled since the loop
	// last looked.
	ready chan struct{}
	emit  func(streamjson.Event)
}

func newMailbox(emit func(streamjson.Event)) *mailbox {
	return &mailbox{ready: make(chan struct{}, 1), emit: emit}
}

// Push queues m for the parent.
func (mb *mailbox) Push(m llm.Message) {
	mb.mu.Lock()
	mb.pending = append(mb.pending, m)
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

// take returns every pending message (nil when none) and emits each as a user line.
func (mb *mailbox) take() []llm.Message {
	mb.mu.Lock()
	out := mb.pending
	mb.pending = nil
	mb.mu.Unlock()
	for _, m := range out {
		u := streamjson.NewUser(m.Content)
		u.Origin = &streamjson.Origin{Kind: "task-notification"}
		mb.emit(u)
	}
	return out
}

func (mb *mailbox) empty() bool {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	return len(mb.pending) == 0
}

// Drain implements agents.Inbox: notifications that arrive mid-turn are read at the next step.
func (mb *mailbox) Drain() []llm.Message { return mb.take() }

// Settle implements agents.Inbox: a notification that arrived as the parent finished is
// read in the same turn.
func (mb *mailbox) Settle(string) []llm.Message { return mb.take() }
