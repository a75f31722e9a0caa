//go:build race

package acp

// raceEnabled: the suite runs a stoke built with -race, as the tests themselves are.
const raceEnabled = true
