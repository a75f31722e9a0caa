//go:build !unix

package llm

// openFileLimit is a limit on open files where the platform has none to read.
func openFileLimit() int { return 512 }
