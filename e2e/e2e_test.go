// Package e2e builds the real stoke binary and runs it as a user would, from the
// testscript files in testdata/script (txtar archives: a script, then the files it needs,
// scenarios included). The custom commands the scripts may use are documented in
// cmds_test.go.
//
//	go test ./e2e                              all scripts
//	go test ./e2e -run TestScripts/openai_cut  one script
//	go test ./e2e -run TestScripts/X -update   rewrite the in-archive files that cmp compares against
//	GOCOVERDIR=/tmp/cov go test ./e2e          keep the binary's coverage counters
//
// To add a script, drop NAME.txtar into testdata/script; it becomes TestScripts/NAME.
// Run stoke with `exec stoke ...` (or `exitcode N stoke ...` to pin the exit status).
// Every script starts in an empty $WORK with this environment (see setup):
//
//	PATH       the directory of the freshly built stoke first
//	STOKE_HOME $WORK-home/.stoke   (session state, beside $WORK: stoke refuses a STOKE_HOME
//	                                inside its working directory; an archive's .stoke/
//	                                at the top of $WORK is moved there before the script)
//	HOME       $WORK/home          (so ~/.stoke/settings.yaml is the script's own)
//	SCENARIOS  the absolute path of the repository's scenarios/ directory
//	GOCOVERDIR where the -cover binary writes its counters
//
// and none of the provider variables (OPENAI_API_KEY, OPENAI_BASE_URL, ANTHROPIC_*,
// STOKE_*): a script sets what it needs with `env`.
package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/stoke-cli/stoke/e2e/internal/testbin"
)

var update = flag.Bool("update", false, "rewrite the files that cmp compares against, inside the txtar archives")

// harness is what TestMain prepares once for every script.
type harness struct {
	binDir    string // holds the stoke binary
	coverDir  string // GOCOVERDIR for the binary
	scenarios string // the repository's scenarios/ directory
}

var h harness // set once by TestMain before any test runs; read-only afterwards

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "stoke-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	if h, err = prepare(tmp); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	return m.Run()
}

// prepare puts the stoke binary (-cover, and -race when the tests run with it) into dir.
func prepare(dir string) (harness, error) {
	scenarios, err := filepath.Abs(filepath.Join("..", "scenarios"))
	if err != nil {
		return harness{}, err
	}
	if _, err := os.Stat(scenarios); err != nil {
		return harness{}, fmt.Errorf("scenarios directory: %w", err)
	}
	// make test builds the binary before go test starts and names it in E2E_STOKE_BINARY.
	if err := testbin.Stoke("E2E_STOKE_BINARY", filepath.Join(dir, "stoke"+exeSuffix()), testbin.Kind{Race: raceEnabled, Cover: true}); err != nil {
		return harness{}, err
	}
	coverDir := os.Getenv("GOCOVERDIR")
	if f := flag.Lookup("test.gocoverdir"); coverDir == "" && f != nil {
		coverDir = f.Value.String()
	}
	if coverDir == "" {
		// A -cover binary without GOCOVERDIR warns on stderr at exit; give it a
		// throwaway directory so stderr holds only what stoke itself writes.
		coverDir = filepath.Join(dir, "cover")
		if err := os.Mkdir(coverDir, 0o755); err != nil {
			return harness{}, err
		}
	}
	return harness{binDir: dir, coverDir: coverDir, scenarios: scenarios}, nil
}

func exeSuffix() string {
	if runtime.GOOS == "windows" {
		return ".exe"
	}
	return ""
}

func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		UpdateScripts:       *update,
		Setup:               setup,
		Condition:           condition,
		Cmds:                commands(),
	})
}

// clearedEnv are the variables a script never inherits: provider settings and keys.
var clearedEnv = []string{
	"OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "STOKE_API_KEY",
}

func setup(env *testscript.Env) error {
	home := filepath.Join(env.WorkDir, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return err
	}
	// testscript starts from a minimal environment, but be explicit: drop provider
	// variables and anything STOKE_* rather than setting them empty (empty is not unset).
	vars := env.Vars[:0]
	for _, kv := range env.Vars {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "STOKE_") || slices.Contains(clearedEnv, name) {
			continue
		}
		vars = append(vars, kv)
	}
	env.Vars = vars
	env.Setenv("PATH", h.binDir+string(os.PathListSeparator)+env.Getenv("PATH"))
	// Beside $WORK, not in it: stoke refuses a STOKE_HOME inside its working directory.
	// The archive's .stoke/ at the top of $WORK is the home's. testscript removes the
	// directory holding every $WORK, this one with them.
	stokeHome := filepath.Join(env.WorkDir+"-home", ".stoke")
	if err := os.MkdirAll(filepath.Dir(stokeHome), 0o700); err != nil {
		return err
	}
	if err := os.Rename(filepath.Join(env.WorkDir, ".stoke"), stokeHome); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	} else if err != nil {
		if err := os.Mkdir(stokeHome, 0o700); err != nil {
			return err
		}
	}
	env.Setenv("STOKE_HOME", stokeHome)
	env.Setenv("HOME", home)
	env.Setenv("SCENARIOS", h.scenarios)
	env.Setenv("GOCOVERDIR", h.coverDir)
	// Fresh nonces for every script: a memory test passes only when the history is there.
	env.Setenv("NONCE", "NONCE-"+randomHex())
	env.Setenv("NONCE_A", "NONCE-A"+randomHex())
	env.Setenv("NONCE_B", "NONCE-B"+randomHex())
	env.Values[mockKey{}] = &mockState{}
	env.Values[netKey{}] = &netState{}
	setupMCP(env) // $MCP_BIN (mcpservers_test.go)
	return nil
}

// randomHex returns 8 random upper-case hex digits.
func randomHex() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return strings.ToUpper(hex.EncodeToString(b[:]))
}
