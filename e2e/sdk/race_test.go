//go:build race

package sdk

// raceEnabled: the suite runs a stoke built with -race, as the tests themselves are.
const raceEnabled = true
