package e2e

// Custom testscript commands for the e2e scripts. Flags come before the positional
// arguments. "!" marks the commands that accept negation.
//
// mockllm [-name NAME] [-api openai|anthropic] [-key K] [-fail-first N:STATUS] [-stall-first N]
//         [-cut-after N] [-cut-times K] [-cut-mode close|reset|end] [-fault-agent NAME] [-cached N] SCENARIO_FILE
//
//	Starts a mock model server on loopback, answering from the scripted provider playing
//	SCENARIO_FILE (relative to the current directory, so a scenario inside the txtar
//	archive works): OpenAI-compatible chat completions (agents/llm/openai/openaitest) by
//	default, the Anthropic Messages API (agents/llm/anthropic/anthropictest) with
//	-api anthropic. It runs for the rest of the script and is closed at its end. Sets
//	$MOCK_URL to its base URL (ending in /v1 for openai; the root for anthropic) and
//	$MOCK_ROOT to its root URL (no path). Options:
//	  -name NAME           a second server beside the first: $MOCK_URL_<NAME> and
//	                       $MOCK_ROOT_<NAME> (upper case); mockreqs -name NAME counts its requests
//	  -key K               require the key K (Bearer for openai, x-api-key for anthropic; else 401)
//	  -fail-first N:STATUS answer the first N requests with HTTP STATUS and the API's error body
//	  -stall-first N       leave the first N requests without an answer until the client gives
//	                       up on them (its --request-timeout)
//	  -cut-after N         cut streams after N events (no terminal event)
//	  -cut-times K         cut only the first K streams (default: every one)
//	  -cut-mode M          how: close (default; EOF mid-body), reset (TCP RST), end (the
//	                       body ends cleanly, unfinished)
//	  -fault-agent NAME    inject the faults only into requests of that agent (parent, or
//	                       a subagent type)
//	  -cached N            (openai) report N as usage.prompt_tokens_details.cached_tokens
//	A second mockllm of the same name in the same script closes the first and replaces it.
//
//	  mockllm -fail-first 1:500 scenario.yaml
//	  env OPENAI_API_KEY=sk-test
//	  exec stoke -p hi --provider openai --base-url $MOCK_URL
//
// [!] mockreqs [-name NAME] N
// mockreqs [-name NAME] -dump FILE
//
//	The first form asserts that the mock (the one named NAME) received exactly N requests
//	(any outcome); with "!", any other number. The second writes every request body
//	received so far, one compact JSON object per line, to FILE, for later jsonl checks:
//
//	  mockreqs 2
//	  mockreqs -dump reqs.jsonl
//	  jsonl reqs.jsonl '1.messages.#(role=="tool").content' 'error: unknown tool: frobnicate'
//
// [!] jsonl [-count N] FILE QUERY [WANT]
//
//	Reads FILE (or "stdout"/"stderr" of the last command) as NDJSON — every line must be
//	a JSON value, blank lines are an error — and evaluates the gjson QUERY
//	(https://github.com/tidwall/gjson/blob/master/SYNTAX.md) against the array of its
//	lines. With WANT, the result's string form (strings unquoted, numbers, booleans and
//	objects as JSON) must equal WANT; without, the result must exist. With -count, the
//	result must hold N matches: the length of an array result (as `#(...)#` returns), 1
//	for any other existing value, 0 for none. With -distinct, the result must be an array
//	holding N distinct values (e.g. one task id across turns). "!" inverts the check.
//
//	  jsonl stdout 0.subtype init                                 first line
//	  jsonl stdout '@reverse|0.subtype' success                   last line
//	  jsonl stdout '#(type=="result").result' 'Hello! You said: hi'
//	  jsonl stdout '#(subtype=="task_started")#.turn' '[1,2]'
//	  jsonl -count 2 stdout '#(type=="assistant")#'
//	  jsonl -distinct 1 stdout '#(subtype=="task_started")#.task_id'
//	  jsonl stdout '#' 3                                          number of lines
//	  ! jsonl stdout '#(type=="result").errors'                   no such key
//
// [!] validstream [-multi] FILE
//
//	Runs streamjsontest.Validate (the stoke stream-JSON compatibility checker) over FILE or
//	stdout; -multi allows one result per turn (output of --input-format stream-json).
//	"!" asserts that the stream is invalid.
//
// expandenv FILE...
//
//	Replaces $VAR and ${VAR} in each file with the script's environment, in place: a
//	settings file in the archive can name $MOCK_URL or $WORK.
//
//	  expandenv repo/.stoke/settings.yaml
//
// exitcode N PROGRAM [ARGS...]
//
//	Like exec, but asserts that PROGRAM exits with status exactly N (exec only tells
//	zero from non-zero). stdout and stderr are kept for the commands that follow.
//
//	  exitcode 2 stoke --no-such-flag
//	  stderr -count=1 '^.'            exactly one non-empty line on stderr
//
// mockanthropic, mockstop, normstream: see record_cmds_test.go. tarball: see
// archive_cmds_test.go. netlisten, netgot, waitfile, pidsgone: see sandbox_cmds_test.go.

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/tidwall/gjson"

	"github.com/stoke-cli/stoke/agents/llm/anthropic/anthropictest"
	"github.com/stoke-cli/stoke/agents/llm/llmtest"
	"github.com/stoke-cli/stoke/agents/llm/openai/openaitest"
	"github.com/stoke-cli/stoke/agents/llm/scripted"
	"github.com/stoke-cli/stoke/streamjson/streamjsontest"
)

type scriptCmd = func(ts *testscript.TestScript, neg bool, args []string)

func commands() map[string]scriptCmd {
	return map[string]scriptCmd{
		"mockllm":     cmdMockLLM,
		"mockreqs":    cmdMockReqs,
		"jsonl":       cmdJSONL,
		"validstream": cmdValidStream,
		"expandenv":   cmdExpandEnv,
		"exitcode":    cmdExitCode,
		"mcpserve":    cmdMCPServe, // mcpservers_test.go
		// record_cmds_test.go
		"mockstop":   cmdMockStop,
		"normstream": cmdNormStream,
		"tarball":    cmdTarball, // archive_cmds_test.go
		// sandbox_cmds_test.go
		"netlisten": cmdNetListen,
		"netgot":    cmdNetGot,
		"waitfile":  cmdWaitFile,
		"pidsgone":  cmdPidsGone,
	}
}

// mockKey keys the script's *mockState in testscript's per-script values.
type mockKey struct{}

// mockServer is a running mock model server of either API.
type mockServer interface {
	URL() string
	Requests() [][]byte
	Close()
}

// mockState is the mock servers of one script, by -name ("" for the first).
type mockState struct {
	srvs map[string]mockServer
}

func mockOf(ts *testscript.TestScript) *mockState { return ts.Value(mockKey{}).(*mockState) }

// parseFlags parses a command's flags, failing the script with usage on error.
func parseFlags(ts *testscript.TestScript, usage string, args []string, define func(*flag.FlagSet)) []string {
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	define(fs)
	if err := fs.Parse(args); err != nil {
		ts.Fatalf("%v\nusage: %s", err, usage)
	}
	return fs.Args()
}

func cmdMockLLM(ts *testscript.TestScript, neg bool, args []string) {
	const usage = "mockllm [-name NAME] [-api openai|anthropic] [-key K] [-fail-first N:STATUS] [-stall-first N] [-cut-after N] [-cut-times K] " +
		"[-cut-mode close|reset|end] [-fault-agent NAME] [-cached N] SCENARIO_FILE"
	if neg {
		ts.Fatalf("unsupported: ! mockllm")
	}
	var (
		api, key, name string
		faults         llmtest.Faults
		cached         int64 = -1
	)
	rest := parseFlags(ts, usage, args, func(fs *flag.FlagSet) {
		fs.StringVar(&name, "name", "", "a second server")
		fs.StringVar(&api, "api", "openai", "openai or anthropic")
		fs.StringVar(&key, "key", "", "required API key")
		fs.Func("fail-first", "N:STATUS", func(s string) error {
			n, status, ok := strings.Cut(s, ":")
			if !ok {
				return errors.New("want N:STATUS")
			}
			ni, err1 := strconv.Atoi(n)
			si, err2 := strconv.Atoi(status)
			if err := errors.Join(err1, err2); err != nil || ni < 0 || si < 400 || si > 599 {
				return fmt.Errorf("want N:STATUS with N >= 0 and STATUS 400..599, got %q", s)
			}
			faults.FailFirst, faults.FailStatus = ni, si
			return nil
		})
		positive := func(dst *int) func(string) error {
			return func(s string) error {
				n, err := strconv.Atoi(s)
				if err != nil || n < 1 {
					return fmt.Errorf("want a positive number, got %q", s)
				}
				*dst = n
				return nil
			}
		}
		fs.Func("stall-first", "N requests", positive(&faults.StallFirst))
		fs.Func("cut-after", "N events", positive(&faults.CutAfter))
		fs.Func("cut-times", "K streams", positive(&faults.CutTimes))
		fs.Func("cut-mode", "close|reset|end", func(s string) error {
			modes := map[string]llmtest.CutMode{"close": llmtest.CutClose, "reset": llmtest.CutReset, "end": llmtest.CutEnd}
			m, ok := modes[s]
			if !ok {
				return fmt.Errorf("want close, reset or end, got %q", s)
			}
			faults.Cut = m
			return nil
		})
		fs.StringVar(&faults.Agent, "fault-agent", "", "inject faults only into this agent's requests")
		fs.Func("cached", "N tokens", func(s string) error {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n < 0 {
				return fmt.Errorf("want a token count, got %q", s)
			}
			cached = n
			return nil
		})
	})
	if len(rest) != 1 {
		ts.Fatalf("usage: %s", usage)
	}
	model, err := scripted.Open(ts.MkAbs(rest[0]))
	ts.Check(err)
	var srv mockServer
	switch api {
	case "openai":
		opts := []openaitest.Option{openaitest.WithFaults(faults)}
		if key != "" {
			opts = append(opts, openaitest.WithAPIKey(key))
		}
		if cached >= 0 {
			opts = append(opts, openaitest.WithCachedTokens(cached))
		}
		srv = openaitest.New(model, opts...)
	case "anthropic":
		if cached >= 0 {
			ts.Fatalf("mockllm: -cached is for -api openai")
		}
		opts := []anthropictest.Option{anthropictest.WithFaults(faults)}
		if key != "" {
			opts = append(opts, anthropictest.WithAPIKey(key))
		}
		srv = anthropictest.New(model, opts...)
	default:
		ts.Fatalf("mockllm: -api %q: want openai or anthropic", api)
	}
	st := mockOf(ts)
	if st.srvs == nil {
		st.srvs = map[string]mockServer{}
	}
	if old := st.srvs[name]; old != nil {
		old.Close()
	}
	st.srvs[name] = srv
	ts.Defer(srv.Close)
	suffix := ""
	if name != "" {
		suffix = "_" + strings.ToUpper(name)
	}
	ts.Setenv("MOCK_URL"+suffix, srv.URL())
	ts.Setenv("MOCK_ROOT"+suffix, strings.TrimSuffix(srv.URL(), "/v1"))
}

func cmdMockReqs(ts *testscript.TestScript, neg bool, args []string) {
	const usage = "mockreqs [-name NAME] N | mockreqs [-name NAME] -dump FILE"
	var dump, name string
	rest := parseFlags(ts, usage, args, func(fs *flag.FlagSet) {
		fs.StringVar(&dump, "dump", "", "write the request bodies as JSONL to `FILE`")
		fs.StringVar(&name, "name", "", "the server started with mockllm -name")
	})
	srv := mockOf(ts).srvs[name]
	if srv == nil {
		ts.Fatalf("mockreqs: no mockllm %q running", name)
	}
	reqs := srv.Requests()
	if dump != "" {
		if neg || len(rest) != 0 {
			ts.Fatalf("usage: %s", usage)
		}
		var b bytes.Buffer
		for i, r := range reqs {
			if err := json.Compact(&b, r); err != nil {
				ts.Fatalf("request %d is not JSON: %v", i+1, err)
			}
			b.WriteByte('\n')
		}
		ts.Check(os.WriteFile(ts.MkAbs(dump), b.Bytes(), 0o644))
		return
	}
	if len(rest) != 1 {
		ts.Fatalf("usage: %s", usage)
	}
	want, err := strconv.Atoi(rest[0])
	if err != nil {
		ts.Fatalf("usage: %s", usage)
	}
	switch got := len(reqs); {
	case !neg && got != want:
		ts.Fatalf("mock received %d requests, want %d", got, want)
	case neg && got == want:
		ts.Fatalf("mock received %d requests, want any other number", got)
	}
}

func cmdJSONL(ts *testscript.TestScript, neg bool, args []string) {
	const usage = "jsonl [-count N | -distinct N] FILE QUERY [WANT]"
	count, distinct := -1, -1
	rest := parseFlags(ts, usage, args, func(fs *flag.FlagSet) {
		fs.IntVar(&count, "count", -1, "number of matches")
		fs.IntVar(&distinct, "distinct", -1, "number of distinct values in an array result")
	})
	if len(rest) < 2 || len(rest) > 3 || ((count >= 0 || distinct >= 0) && len(rest) == 3) {
		ts.Fatalf("usage: %s", usage)
	}
	file, query := rest[0], rest[1]
	doc := jsonlArray(ts, file)
	r := gjson.Get(doc, query)
	var ok bool
	var what string
	switch {
	case distinct >= 0:
		seen := map[string]bool{}
		for _, v := range r.Array() {
			seen[v.Raw] = true
		}
		ok = r.IsArray() && len(seen) == distinct
		what = fmt.Sprintf("%d distinct values in %s, want %d", len(seen), r.Raw, distinct)
	case count >= 0:
		got := 0
		switch {
		case r.IsArray():
			got = len(r.Array())
		case r.Exists():
			got = 1
		}
		ok = got == count
		what = fmt.Sprintf("%d matches, want %d", got, count)
	case len(rest) == 3:
		ok = r.String() == rest[2]
		what = fmt.Sprintf("%q, want %q", r.String(), rest[2])
	default:
		ok = r.Exists()
		what = "no result, want one"
		if ok {
			what = "a result: " + r.Raw
		}
	}
	if ok == neg {
		prefix := ""
		if neg {
			prefix = "unexpectedly "
		}
		ts.Fatalf("jsonl %s %s: %sgot %s", file, query, prefix, what)
	}
}

// jsonlArray returns the NDJSON file (or stdout/stderr) as one JSON array of its lines.
func jsonlArray(ts *testscript.TestScript, file string) string {
	text := ts.ReadFile(file)
	var b strings.Builder
	b.WriteByte('[')
	if text != "" {
		for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
			if !gjson.Valid(line) {
				ts.Fatalf("%s:%d: not a JSON line: %q", file, i+1, line)
			}
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(line)
		}
	}
	b.WriteByte(']')
	return b.String()
}

func cmdValidStream(ts *testscript.TestScript, neg bool, args []string) {
	const usage = "validstream [-multi] FILE"
	var multi bool
	rest := parseFlags(ts, usage, args, func(fs *flag.FlagSet) {
		fs.BoolVar(&multi, "multi", false, "allow one result per turn")
	})
	if len(rest) != 1 {
		ts.Fatalf("usage: %s", usage)
	}
	err := streamjsontest.ValidateLines(strings.NewReader(ts.ReadFile(rest[0])), multi)
	switch {
	case err != nil && !neg:
		ts.Fatalf("%s is not a valid stream: %v", rest[0], err)
	case err == nil && neg:
		ts.Fatalf("%s is a valid stream, want an invalid one", rest[0])
	}
}

func cmdExpandEnv(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: expandenv FILE...")
	}
	for _, f := range args {
		ts.Check(os.WriteFile(ts.MkAbs(f), []byte(os.Expand(ts.ReadFile(f), ts.Getenv)), 0o644))
	}
}

func cmdExitCode(ts *testscript.TestScript, neg bool, args []string) {
	const usage = "exitcode N PROGRAM [ARGS...]"
	if neg {
		ts.Fatalf("unsupported: ! exitcode")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: %s", usage)
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("usage: %s", usage)
	}
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		got = exit.ExitCode()
	default:
		ts.Fatalf("run %s: %v", args[1], err)
	}
	if got != want {
		ts.Fatalf("%s exited with status %d, want %d", args[1], got, want)
	}
}
