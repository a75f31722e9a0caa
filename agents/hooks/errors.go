package hooks

import "errors"

// errTimeout is the cause of a hook's context when its own timeout expires.
var errTimeout = errors.New("hook timed out")
