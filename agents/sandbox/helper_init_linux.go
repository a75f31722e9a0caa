package sandbox

import "os"

// init runs the helper (HelperMain) when this process was started as one, and ends the
// process with it, before the packages the rest of stoke needs are initialised: the
// provider SDKs, the MCP SDK, viper, OpenTelemetry. The Go specification initialises
// packages in the order of their import paths as soon as their own imports are, and this
// package imports only the standard library, Landlock's and x/sys: so a sandboxed
// command starts after a few of stoke's 170 package initialisations, not all of them.
// Started as anything else, it does nothing but compare one argument.
func init() {
	if IsHelper(os.Args) {
		os.Exit(HelperMain())
	}
}
