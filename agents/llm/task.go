package llm

import "context"

// taskKey keys the task id in a context.
type taskKey struct{}

// WithTaskID returns ctx marked as the context of a turn of the subagent task id. The
// agent registry marks every subagent turn, so that a model wrapper (the cassette
// recorder) can tell apart parallel agents of one type, whose requests carry the same
// Request.Agent.
func WithTaskID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, taskKey{}, id)
}

// TaskIDFrom returns the task id ctx was marked with, or "" (the parent, or a call made
// outside any task).
func TaskIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(taskKey{}).(string)
	return id
}
