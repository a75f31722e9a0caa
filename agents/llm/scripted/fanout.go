package scripted

import (
	"fmt"
	"strings"
	"time"
)

// FanOut describes the load scenario of the benchmarks and load tests: the parent launches
// Agents background agents (foreground ones with Foreground) in one reply ("job 0" …
// "job N-1"); agent i answers "done job i" after a delay of (i mod 10)+1 tenths of
// Spread, so the agents finish over Spread; the parent answers every later call with
// "Noted.".
type FanOut struct {
	Agents     int
	Spread     time.Duration
	Foreground bool
}

// YAML returns the scenario file.
func (f FanOut) YAML() []byte {
	var b strings.Builder
	b.WriteString("name: fan-out\nrules:\n")
	b.WriteString("  - agent: parent\n    when: {step: 1}\n    reply:\n      tool_calls:\n")
	for i := range f.Agents {
		fmt.Fprintf(&b, "        - name: task\n          input: {description: \"job %d\", prompt: \"job %d: report done\", run_in_background: %v}\n", i, i, !f.Foreground)
	}
	b.WriteString("  - agent: parent\n    reply: {text: \"Noted.\"}\n")
	for d := range 10 {
		fmt.Fprintf(&b, "  - agent: general-purpose\n    when: {last_user_matches: '^job [0-9]*%d:'}\n    reply: {text: \"done {{ match `job [0-9]+` }}\", delay: %s}\n",
			d, f.Spread*time.Duration(d+1)/10)
	}
	return []byte(b.String())
}
