package agents

import "context"

// A turnRunner says where the turns of tasks run. The registry decides which turn runs and
// when (its caps, one task's turns in order, the lifetime context); the runner runs it.
// Both methods call done exactly once, after the turn has settled.
type turnRunner interface {
	// start runs turn t of c without waiting for it (a background turn).
	start(ctx context.Context, c *controller, t turn, done func())
	// run runs turn t of c and returns once it has settled (a foreground turn).
	run(ctx context.Context, c *controller, t turn, done func())
}

// localRunner runs every turn in this process on the task's Runtime: a background turn on
// a goroutine of its own (stopped through ctx, waited for through done), a foreground turn
// on the caller's goroutine.
type localRunner struct{}

func (localRunner) start(ctx context.Context, c *controller, t turn, done func()) {
	go localRunner{}.run(ctx, c, t, done)
}

func (localRunner) run(ctx context.Context, c *controller, t turn, done func()) {
	defer done()
	c.runTurn(ctx, t)
}
