package cmd

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"

	"github.com/spf13/pflag"

	"github.com/stoke-cli/stoke/agents"
	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/cassette"
	"github.com/stoke-cli/stoke/headless"
)

// Record and replay (docs/record-replay.md): --record FILE wraps the configured provider
// and writes every model call to a cassette; --replay FILE answers every call from one,
// with no provider at all. The flags are per run: flags and STOKE_* variables only.

// addRecordFlags declares --record, --replay, --replay-mode and --replay-timing.
func addRecordFlags(f *pflag.FlagSet) {
	f.String("record", "", "write every model call of the run to the cassette `FILE` (docs/record-replay.md)")
	f.String("replay", "", "answer every model call from the cassette `FILE`, with no provider and no network")
	f.String("replay-mode", cassette.ModeStrict, "strict: a request that differs from its recording fails the run | lenient: answer it anyway and warn")
	f.String("replay-timing", cassette.TimingZero, "zero: answer at once | real: take as long as the recorded answers took")
}

// recordOptions are the record and replay flags of one run.
type recordOptions struct {
	record, replay, mode, timing string
	// from says where each given value came from ("--replay", "STOKE_REPLAY").
	from map[string]string
}

// readRecordOptions reads the flags, else their STOKE_* variables, and checks them.
// Every error is a usage error.
func readRecordOptions(flags *pflag.FlagSet, lookupEnv func(string) (string, bool), cwd string) (recordOptions, error) {
	o := recordOptions{from: map[string]string{}}
	for _, k := range []struct {
		key string
		dst *string
	}{{"record", &o.record}, {"replay", &o.replay}, {"replay-mode", &o.mode}, {"replay-timing", &o.timing}} {
		f := flags.Lookup(k.key)
		*k.dst = f.Value.String()
		if f.Changed {
			o.from[k.key] = "--" + k.key
		} else if v, ok := lookupEnv(envName(k.key)); ok && v != "" {
			*k.dst, o.from[k.key] = v, envName(k.key)
		}
	}
	switch {
	case o.record != "" && o.replay != "":
		return o, usageErrorf("--record and --replay cannot be used together: record with a provider, then replay the cassette")
	case !slices.Contains([]string{cassette.ModeStrict, cassette.ModeLenient}, o.mode):
		return o, usageErrorf("invalid --replay-mode %q%s: want one of %s, %s", o.mode, o.note("replay-mode"), cassette.ModeStrict, cassette.ModeLenient)
	case !slices.Contains([]string{cassette.TimingZero, cassette.TimingReal}, o.timing):
		return o, usageErrorf("invalid --replay-timing %q%s: want one of %s, %s", o.timing, o.note("replay-timing"), cassette.TimingZero, cassette.TimingReal)
	case o.replay == "" && (o.from["replay-mode"] != "" || o.from["replay-timing"] != ""):
		return o, usageErrorf("--replay-mode and --replay-timing need --replay FILE")
	}
	for _, p := range []*string{&o.record, &o.replay} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(cwd, *p)
		}
	}
	return o, nil
}

// note says where a value came from, when it was not its flag: " (from STOKE_REPLAY_MODE)".
func (o recordOptions) note(key string) string {
	if src := o.from[key]; src != "" && src != "--"+key {
		return " (from " + src + ")"
	}
	return ""
}

// cassetteRun is the recording or the replay of one run; nil when neither.
type cassetteRun struct {
	opts    recordOptions
	cfg     *Config
	cwd     string
	version string
	secrets []string
	logger  *slog.Logger
	replay  *cassette.Replayer
}

// openModel returns the run's model: the replayed cassette with --replay, else the
// configured provider that provider builds (which --record wraps when the run starts, in
// cassetteRun.run).
func openModel(flags *pflag.FlagSet, deps *Deps, cfg *Config, cwd string, logger *slog.Logger, provider func() (llm.Model, error)) (llm.Model, *cassetteRun, error) {
	o, err := readRecordOptions(flags, deps.LookupEnv, cwd)
	if err != nil {
		return nil, nil, err
	}
	if o.record == "" && o.replay == "" {
		m, err := provider()
		return m, nil, err
	}
	// The cassette holds none of the values the run redacts from tool results.
	_, redacted := cfg.redactedValues(deps.LookupEnv, deps.environ())
	c := &cassetteRun{opts: o, cfg: cfg, cwd: cwd, version: deps.Version, secrets: redacted, logger: logger}
	if o.replay == "" {
		m, err := provider()
		return m, c, err
	}
	if c.replay, err = cassette.Open(o.replay, cassette.ReplayConfig{
		Mode: o.mode, Timing: o.timing, Model: cfg.Model, CWD: cwd, Secrets: c.secrets, Logger: logger,
	}); err != nil {
		return nil, nil, err
	}
	return c.replay, c, nil
}

// run runs opts through runF, recording or replaying: task ids come from the cassette's
// seed; a strict replay that fails ends the run with its error, whichever agent made the
// call; the recording is closed (renamed into place) when the run is over.
func (c *cassetteRun) run(ctx context.Context, opts headless.Options, runF RunFunc) error {
	if c == nil {
		return runF(ctx, opts)
	}
	if c.replay != nil {
		defer c.replay.Close()
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		// Set here, before any call: the replayer calls it on the first strict failure.
		c.replay.OnFail(cancel)
		opts.Model = c.replay
		opts.NewTaskID = taskIDs(c.replay.NewTaskID)
		err := runF(ctx, opts)
		if u := c.replay.Unplayed(); len(u) > 0 && err == nil {
			c.logger.Warn("replay: the run made fewer model calls than the recording", "never_made", len(u), "first", u[0])
		}
		return err
	}
	rec, err := cassette.Record(opts.Model, cassette.RecordConfig{
		Path: c.opts.record, Provider: c.cfg.Provider, Version: c.version, CWD: c.cwd, Secrets: c.secrets,
	})
	if err != nil {
		return err
	}
	opts.Model, opts.NewTaskID = rec, taskIDs(rec.NewTaskID)
	err = runF(ctx, opts)
	if cerr := rec.Close(); cerr != nil {
		c.logger.Error("the recording could not be completed", "cassette", c.opts.record, "err", cerr)
		return errors.Join(err, cerr)
	}
	c.logger.Info("recorded", "cassette", c.opts.record, "calls", rec.Calls())
	return err
}

// taskIDs adapts a cassette's task-id source to the registry's.
func taskIDs(newID func(toolUseID string) string) func(agents.LaunchRequest) agents.TaskID {
	return func(req agents.LaunchRequest) agents.TaskID {
		id, err := agents.ParseTaskID(newID(req.ToolUseID))
		if err != nil { // cannot happen: derived ids have the form; never build a path from a bad one
			return agents.NewTaskID()
		}
		return id
	}
}
