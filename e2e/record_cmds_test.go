package e2e

// Commands for the record/replay scripts (documented with the others in cmds_test.go).
//
// mockanthropic [-key K] SCENARIO_FILE
//
//	Like mockllm, with an Anthropic Messages server (agents/llm/anthropic/anthropictest):
//	sets $MOCK_URL to its base URL. It runs until mockstop or the end of the script.
//
// mockstop
//
//	Closes the running mock servers (mockllm's and mockanthropic's): a later request to
//	$MOCK_URL fails to connect.
//
// normstream FILE OUT
//
//	Writes FILE (a stream-JSON run, or "stdout") normalised for comparison with another
//	run of the same work (streamjsontest.Normalize: uuids, session ids, timestamps and
//	durations masked, lines grouped by agent) to OUT, for cmp.
//
//	  normstream recorded.jsonl a.jsonl
//	  normstream stdout b.jsonl
//	  cmp a.jsonl b.jsonl

import (
	"flag"
	"os"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/stoke-cli/stoke/agents/llm/anthropic/anthropictest"
	"github.com/stoke-cli/stoke/agents/llm/scripted"
	"github.com/stoke-cli/stoke/streamjson/streamjsontest"
)

func cmdMockAnthropic(ts *testscript.TestScript, neg bool, args []string) {
	const usage = "mockanthropic [-key K] SCENARIO_FILE"
	if neg {
		ts.Fatalf("unsupported: ! mockanthropic")
	}
	var opts []anthropictest.Option
	rest := parseFlags(ts, usage, args, func(fs *flag.FlagSet) {
		fs.Func("key", "required API key", func(s string) error {
			opts = append(opts, anthropictest.WithAPIKey(s))
			return nil
		})
	})
	if len(rest) != 1 {
		ts.Fatalf("usage: %s", usage)
	}
	model, err := scripted.Open(ts.MkAbs(rest[0]))
	ts.Check(err)
	st := mockOf(ts)
	if st.anthropic != nil {
		st.anthropic.Close()
	}
	st.anthropic = anthropictest.New(model, opts...)
	ts.Defer(st.anthropic.Close)
	ts.Setenv("MOCK_URL", st.anthropic.URL())
}

func cmdMockStop(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: mockstop")
	}
	st := mockOf(ts)
	if st.srv != nil {
		st.srv.Close()
	}
	if st.anthropic != nil {
		st.anthropic.Close()
	}
}

func cmdNormStream(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: normstream FILE OUT")
	}
	out, err := streamjsontest.Normalize([]byte(ts.ReadFile(args[0])))
	if err != nil {
		ts.Fatalf("normstream %s: %v", args[0], err)
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), out, 0o644))
}
