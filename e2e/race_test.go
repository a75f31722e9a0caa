//go:build race

package e2e

// raceEnabled builds the stoke binary with -race when the e2e tests run with -race.
const raceEnabled = true
