package tools

import "errors"

// Errors of the workspace. Tools turn them into error Results the model sees; callers of
// NewWorkspace, ParseMode and Resolve match them with errors.Is.
var (
	// ErrUnknownMode: ParseMode was given a value that is not an approval mode.
	ErrUnknownMode = errors.New("unknown approval mode")
	// ErrOutsideWorkspace: a path leads outside the workspace root, lexically (.., an
	// absolute path elsewhere) or through a symbolic link.
	ErrOutsideWorkspace = errors.New("outside the workspace")
	// ErrDanglingSymlink: a path goes through a symbolic link whose target does not exist.
	ErrDanglingSymlink = errors.New("symbolic link to nothing")

	// errCapped stops a walk that has found enough.
	errCapped = errors.New("result cap reached")
	// errTooLarge: a file is larger than grep searches.
	errTooLarge = errors.New("file too large to search")
)
