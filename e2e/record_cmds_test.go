package e2e

// Commands for the record/replay scripts (documented with the others in cmds_test.go).
//
// mockstop
//
//	Closes every running mockllm server: a later request to $MOCK_URL fails to connect.
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
	"os"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/stoke-cli/stoke/streamjson/streamjsontest"
)

func cmdMockStop(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: mockstop")
	}
	for _, srv := range mockOf(ts).srvs {
		srv.Close()
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
