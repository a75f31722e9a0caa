package agents

import (
	"log/slog"
	"time"

	"github.com/stoke-cli/stoke/agents/catalog"
	"github.com/stoke-cli/stoke/agents/hooks"
	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/runtime"
	"github.com/stoke-cli/stoke/agents/store"
	"github.com/stoke-cli/stoke/agents/tools"
	"github.com/stoke-cli/stoke/agents/trace"
	"github.com/stoke-cli/stoke/agents/worktree"
	"github.com/stoke-cli/stoke/streamjson"
)

// RegistryConfig configures a Registry.
type RegistryConfig struct {
	SessionID string
	// Store keeps the tasks' transcripts, sidecars and worktrees (a *store.Session). Nil:
	// nothing is stored.
	Store TaskStore
	// CWD is the working directory the agents run in (recorded in sidecars).
	CWD       string
	Model     llm.Model
	ModelName string
	Catalog   catalog.Catalog
	// MaxBackground caps running background turns: launches and continuations
	// (DefaultMaxBackground when 0). Over it, they wait in a FIFO queue.
	MaxBackground int
	// MaxQueued bounds that queue (DefaultMaxQueued when 0; NoQueue: no queue at all); a
	// launch or continuation past it fails.
	MaxQueued int
	// MaxForeground caps running foreground launches (DefaultMaxForeground when 0); the
	// others wait their turn, in the order the model wrote the calls.
	MaxForeground int
	// MaxRetained caps settled rows (DefaultMaxRetained when 0): past it, the oldest
	// settled are dropped, never one whose notification the parent has not been handed.
	MaxRetained int
	// BackgroundAgents enables run_in_background.
	BackgroundAgents bool
	// MaxSteps caps model calls per subagent turn (0: none; a run sets DefaultMaxSteps). A
	// SubagentStop hook may make one turn go on at most DefaultMaxStopBlocks times.
	MaxSteps int
	// Emit receives task events and the subagents' own events. Safe for concurrent use.
	Emit func(streamjson.Event)
	// Notify tells the parent that a background turn ended (NotificationsMessage renders
	// it). Safe for concurrent use.
	Notify func(Notification)
	// SubagentTools returns the tool set prepared for a new runtime of def, working in root
	// (a worktree) or, when root is empty, in the session's working directory.
	SubagentTools func(def catalog.Definition, root string) *tools.Set
	// Hooks are the command hooks from settings; a definition's own hooks add to them.
	Hooks hooks.Config
	// HookRunner runs hooks; nil runs none.
	HookRunner *hooks.Runner
	// Lifecycle hears of every subagent turn, after the command hooks (see Lifecycle).
	Lifecycle Lifecycle
	// Tracer records one trace per agent turn; nil records nothing.
	Tracer trace.Tracer
	// NewRuntime constructs runtimes (tests count constructions); nil means NewRuntime.
	NewRuntime func(runtime.Config) *runtime.Runtime
	// Head names what the working directory has checked out (nil: the git HEAD of CWD,
	// worktree.GitHead; nothing without a CWD). A resident runtime made under one head is
	// released when a continuation finds another (a branch switch): the turn revives.
	// Safe for concurrent use.
	Head func() string
	// OnDispose is called once per runtime a task gives up (tests).
	OnDispose func(TaskID)
	NewID     func(LaunchRequest) TaskID // nil: NewTaskID; a replay gives each launch its recorded id
	Now       func() time.Time
	Logger    *slog.Logger
}

// TaskStore keeps the files of a session's tasks; *store.Session implements it. Its
// methods are safe for concurrent use.
type TaskStore interface {
	transcriptStore
	sidecarStore
	// WorktreeDir creates and returns the directory isolated agents' worktrees go in.
	WorktreeDir() (string, error)
}

// transcriptStore is how a controller reaches its task's transcript.
type transcriptStore interface {
	// TaskTranscript is where task id's transcript is kept.
	TaskTranscript(id string) string
	OpenTranscript(path string, now func() time.Time) (*store.Transcript, error)
	ReadTranscript(path string) (*store.Loaded, error)
}

// sidecarStore is where a controller persists its row.
type sidecarStore interface {
	// WriteSidecar replaces task id's sidecar with data, atomically; durable once the same
	// row is synced in the task's transcript and SyncSidecars has returned.
	WriteSidecar(id string, data []byte) error
	// SyncSidecars makes the sidecars written so far durable under their names.
	SyncSidecars() error
	// Rel makes a path inside the session directory relative to it.
	Rel(path string) string
}

// Defaults of a run's agents: this is the one place they are spelled. cmd gives them to
// the flags, headless to the registry and the parent; a zero field of RegistryConfig
// takes its default here.
const (
	// DefaultMaxBackground caps running background turns (--max-background).
	DefaultMaxBackground = 4
	// DefaultMaxQueued bounds the queue of background turns waiting for a slot
	// (--max-queued).
	DefaultMaxQueued = 1000
	// NoQueue is the MaxQueued of no queue (--max-queued 0): a launch or continuation over
	// MaxBackground fails at once, and the task tool asks the model to collect one first.
	NoQueue = -1
	// DefaultMaxForeground caps running foreground launches (--max-foreground).
	DefaultMaxForeground = 8
	// DefaultMaxRetained caps the settled rows a registry keeps, and the completed ones a
	// resumed session brings back.
	DefaultMaxRetained = 100
	// DefaultMaxTurns caps the parent's model calls per prompt (--max-turns), the turns
	// taken to read the notifications that follow it included. A model that keeps calling
	// tools, or launches an agent for every notification, ends with error_max_turns
	// instead of running unbounded.
	DefaultMaxTurns = 100
	// DefaultMaxSteps caps the model calls of one subagent turn in a run
	// (RegistryConfig.MaxSteps), lowered by a definition's MaxTurns.
	DefaultMaxSteps = 200
)

func withRegistryDefaults(cfg RegistryConfig) RegistryConfig {
	if cfg.MaxBackground <= 0 {
		cfg.MaxBackground = DefaultMaxBackground
	}
	if cfg.MaxQueued == 0 || cfg.MaxQueued < NoQueue {
		cfg.MaxQueued = DefaultMaxQueued
	}
	if cfg.MaxForeground <= 0 {
		cfg.MaxForeground = DefaultMaxForeground
	}
	if cfg.MaxRetained <= 0 {
		cfg.MaxRetained = DefaultMaxRetained
	}
	if cfg.Emit == nil {
		cfg.Emit = func(streamjson.Event) {}
	}
	if cfg.Notify == nil {
		cfg.Notify = func(n Notification) { n.Delivered() } // nobody to hand it to
	}
	if cfg.Head == nil {
		cwd := cfg.CWD
		cfg.Head = func() string {
			if cwd == "" {
				return ""
			}
			return worktree.GitHead(cwd)
		}
	}
	if cfg.NewRuntime == nil {
		cfg.NewRuntime = runtime.New
	}
	if cfg.NewID == nil {
		cfg.NewID = func(LaunchRequest) TaskID { return NewTaskID() }
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Catalog == nil {
		cfg.Catalog = catalog.New(catalog.BuiltinDefinitions()...)
	}
	if cfg.ModelName == "" && cfg.Model != nil {
		cfg.ModelName = cfg.Model.Name()
	}
	return cfg
}
