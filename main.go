// Command stoke is a headless agent CLI: it runs one model-driven session from a prompt and
// writes Claude-Agent-SDK-compatible stream-JSON events.
package main

import (
	"os"

	"github.com/stoke-cli/stoke/cmd"
)

func main() { os.Exit(cmd.Execute()) }
