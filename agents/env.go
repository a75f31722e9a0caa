package agents

// taskEnv is what the controllers of one registry share. NewRegistry sets it and nothing
// changes it afterwards; its funcs are safe for concurrent use.
type taskEnv struct {
	cfg *RegistryConfig
	// lifecycle hears of every turn: the command hooks, then RegistryConfig.Lifecycle.
	lifecycle Lifecycle
	// head names what the working directory has checked out (RegistryConfig.Head).
	head func() string
	// settled is called by a turn's goroutine once the turn's outcome is recorded and its
	// notification delivered (the registry prunes its settled rows).
	settled func()
}
