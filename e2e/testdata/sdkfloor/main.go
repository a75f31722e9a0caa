// Command sdkfloor is BenchmarkProcess's second baseline: the hello-world program with the
// two official provider SDKs linked and initialised, as stoke links them, and nothing else.
// Their package initialisation runs at every start of any program that links them, so
// this is the floor a stoke run cannot go below while it keeps the official SDKs.
package main

import (
	"fmt"

	_ "github.com/anthropics/anthropic-sdk-go/v2"
	_ "github.com/openai/openai-go/v3"
)

func main() { fmt.Println("hello") }
