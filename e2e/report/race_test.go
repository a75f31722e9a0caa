//go:build race

package report

// raceEnabled: the reports are drawn by a stoke built with -race, as the tests themselves are.
const raceEnabled = true
