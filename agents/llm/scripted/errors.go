package scripted

import "errors"

// ErrNoRule is wrapped by Generate when no rule of the scenario matches a request.
// The message names the agent, its step and the start of the latest user text.
var ErrNoRule = errors.New("no scenario rule matches")
