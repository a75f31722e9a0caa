package headless

import (
	"io"
	"log/slog"
	"time"

	"github.com/stoke-cli/stoke/agents"
	"github.com/stoke-cli/stoke/agents/hooks"
	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/price"
	"github.com/stoke-cli/stoke/agents/secrets"
	"github.com/stoke-cli/stoke/agents/tools"
	"github.com/stoke-cli/stoke/agents/trace"
	"github.com/stoke-cli/stoke/headless/sdkhost"
	"github.com/stoke-cli/stoke/streamjson"
)

// Output formats.
const (
	OutputText       = "text"
	OutputJSON       = "json"
	OutputStreamJSON = "stream-json"
)

// Input formats.
const (
	InputText       = "text"
	InputStreamJSON = "stream-json"
)

// BackgroundPolicy is --background-on-exit: what becomes of the background agents still
// at work once the parent has nothing left to do.
type BackgroundPolicy string

// The background policies.
const (
	// BackgroundWait: the run waits for them, and the parent reads their notifications.
	BackgroundWait BackgroundPolicy = "wait"
	// BackgroundCancel: they are cancelled, and the run ends once they have settled.
	BackgroundCancel BackgroundPolicy = "cancel"
)

// BackgroundPolicies returns the background policies, the default first.
func BackgroundPolicies() []BackgroundPolicy {
	return []BackgroundPolicy{BackgroundWait, BackgroundCancel}
}

// Options configure one headless run. cmd builds them from flags and configuration; Run
// never changes them (what a resume or an SDK host's initialize request adds lives in
// the run's own state).
type Options struct {
	// Prompt is the first user prompt (from -p or stdin text). Empty with stream-json input.
	Prompt string
	// Stdin is read for stream-json user messages when InputFormat is InputStreamJSON.
	Stdin        io.Reader
	InputFormat  string
	OutputFormat string
	// Stdout receives the event stream (or the final text / result object).
	Stdout io.Writer
	// Logger writes diagnostics to stderr.
	Logger *slog.Logger

	Model llm.Model
	// ModelName is reported in init and assistant events.
	ModelName string
	// Provider names the provider of Model (openai, anthropic, scripted), for the agent
	// files that write their model as provider:model.
	Provider string
	// ModelAliases map the model values of agent files (sonnet, opus, haiku, fast, ...)
	// to model names (the model-aliases settings; catalog.ResolveModel).
	ModelAliases map[string]string
	// MaxTurns caps parent model calls per turn; 0 means no cap (cmd's default is
	// agents.DefaultMaxTurns).
	MaxTurns int
	// Timeout bounds the whole run; 0 means none.
	Timeout time.Duration
	// ApprovalMode is the run's approval mode (default when empty), a ceiling for every
	// agent's.
	ApprovalMode tools.Mode
	// BackgroundOnExit is the background policy (BackgroundWait when empty).
	BackgroundOnExit BackgroundPolicy
	// CWD is the workspace root.
	CWD string
	// SessionID names the session; cmd generates one when the user gave none. It is empty
	// when Resume or Continue is set (the resumed session keeps its id), unless
	// ForkSession is: then it names the fork.
	SessionID string
	// Resume is the id of a stored session to continue (--resume), as the user gave it.
	Resume string
	// Continue resumes the most recent session of CWD (--continue).
	Continue bool
	// ForkSession resumes a copy of the stored session under SessionID (--fork-session);
	// the stored one is only read.
	ForkSession bool
	// WaitForSession is how long to wait for another run that holds the session (one
	// writer per session); 0 fails at once with ErrSessionBusy.
	WaitForSession time.Duration
	// Home is $STOKE_HOME.
	Home string
	// Version is stoke's version, reported in init.
	Version string
	// MaxBackground caps running background agents per parent (0:
	// agents.DefaultMaxBackground).
	MaxBackground int
	// MaxQueued caps background launches waiting for a slot (0: agents.DefaultMaxQueued;
	// agents.NoQueue: none waits, a launch over MaxBackground fails at once).
	MaxQueued int
	// MaxForeground caps foreground agents running at once (0:
	// agents.DefaultMaxForeground).
	MaxForeground int
	// NotifyWindow is how long a background agent's notification may wait for others
	// while background agents are still at work, to be delivered with them in one parent
	// turn (0: DefaultNotifyWindow; negative: delivered as soon as the parent is idle).
	NotifyWindow time.Duration
	// MaxRetained caps settled task rows per parent (0: agents.DefaultMaxRetained).
	MaxRetained int
	// BackgroundAgents turns background agents on (run_in_background in the task schema).
	BackgroundAgents bool
	// Tracer records one trace per agent turn (parent and subagents); nil records nothing.
	Tracer trace.Tracer
	// Hooks are the command hooks from the settings files.
	Hooks hooks.Config
	// Prices turn usage into total_cost_usd; the zero Table prices nothing.
	Prices price.Table
	// Bare skips project settings and the post-restore reminder.
	Bare bool
	// MCP configures the MCP servers (mcp.go).
	MCP MCPOptions
	// TrustProject lets the project's own configuration widen what the run does: the
	// hooks of its agent files (cmd decides it: --trust-project, trusted-projects in the
	// home settings). Agent approval modes are capped by ApprovalMode either way.
	TrustProject bool
	// Report, when set, is the file the run's report (HTML: agents/report) is written to
	// once the run has ended, however it ended (a signal included): --report.
	Report string
	// Secrets keeps credentials out of the shell tool's and the hooks' environment and
	// redacts them from tool results; nil still keeps the provider keys out of both.
	Secrets *secrets.Policy
	// Observe, when set, sees every event of the run as it is emitted, whatever the
	// output format (the progress reporter). It must be safe for concurrent use and
	// must not block.
	Observe func(streamjson.Event)
	// SDK holds the Claude Code options a Claude Agent SDK host passes.
	SDK sdkhost.Options
	// Interactive makes the session a person's, driven turn by turn by an entry point that
	// feeds Serve (the ACP server): the parent takes a turn only for an Input, and each
	// gets its result event; notifications that arrive while the parent is idle are held
	// for the next Input and come before it (their task_notification events are emitted
	// at once, as ever); a turn that reaches --max-turns or whose model fails ends with
	// its result and the session goes on; an Input's Cancel ends its turn alone.
	Interactive bool
	// Sink, when set, receives every event in place of Stdout; with OutputStreamJSON the
	// result events too (Sink, ModelSink).
	Sink Sink
	// Approvals, when set (and no SDK host decides), decides the tool calls the approval
	// mode does not allow by itself instead of refusing them.
	Approvals Approvals
	// Files, when set, is where the file tools of the session's workspace read and write
	// (an editor's buffers; tools.Files).
	Files tools.Files
	// Terminal, when set, is where the shell tool of the session's workspace runs its
	// commands (an editor's terminals; tools.Terminal).
	Terminal tools.Terminal
	// OnDispose is called once per runtime a task gives up (tests:
	// agents.RegistryConfig.OnDispose).
	OnDispose func(agents.TaskID)
	// Lifecycle, when set, hears of the subagents' turns too (after the session's own
	// listeners): an entry point that shows a background turn as settled once its
	// notification waits for the parent (TurnSettled).
	Lifecycle agents.Lifecycle
	// NewTaskID names each launched task; nil gives random ids. A replay (--replay) gives
	// each launch the id it had in the recording.
	NewTaskID func(agents.LaunchRequest) agents.TaskID
}

// knownApprovalMode is the run's approval mode, or the default mode when stoke does not
// know it.
func (o Options) knownApprovalMode() tools.Mode {
	if o.ApprovalMode.Rank() < 0 {
		return tools.ModeDefault
	}
	return o.ApprovalMode
}

// sdkMode reports whether the session speaks the control protocol: stream-json both ways.
func (o Options) sdkMode() bool {
	return o.InputFormat == InputStreamJSON && o.OutputFormat == OutputStreamJSON
}
