// Package testbin gives the end-to-end suites (e2e, e2e/sdk) the stoke binary they run:
// one that make built before `go test` started, named by an environment variable, or
// else one built here. make builds it first so that a slow build on a busy machine never
// counts against a test's timeout (a TestMain's time counts against go test's own kill
// timer); `go test ./e2e` by hand still works without it.
package testbin

import (
	"debug/buildinfo"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
)

// Kind is how the binary is built.
type Kind struct {
	Race  bool // -race, as the tests themselves are built
	Cover bool // -cover, so that GOCOVERDIR collects the binary's coverage
}

// flags are the go build flags of k.
func (k Kind) flags() []string {
	// -buildvcs=auto: stamp the VCS revision when building from a git checkout, whatever
	// GOFLAGS says (e2e TestVersionRevision).
	f := []string{"-buildvcs=auto"}
	if k.Race {
		f = append(f, "-race")
	}
	if k.Cover {
		f = append(f, "-cover")
	}
	return f
}

// Stoke returns the stoke binary to test: the file the environment variable env names
// when it is set (linked or copied to out, so that it is found by that name), after
// checking that it was built as k says; otherwise stoke built into out.
func Stoke(env, out string, k Kind) error {
	if prebuilt := os.Getenv(env); prebuilt != "" {
		if err := check(prebuilt, k); err != nil {
			return fmt.Errorf("%s=%s: %w", env, prebuilt, err)
		}
		return place(prebuilt, out)
	}
	args := append(append([]string{"build"}, k.flags()...), "-o", out, "github.com/stoke-cli/stoke")
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("build stoke: %w\n%s", err, out)
	}
	return nil
}

// check reads the build settings recorded in the binary at path and compares them with k.
func check(path string, k Kind) error {
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return err
	}
	if info.Path != "github.com/stoke-cli/stoke" {
		return fmt.Errorf("not a stoke binary (main package %s)", info.Path)
	}
	set := func(key string) bool {
		return slices.ContainsFunc(info.Settings, func(s debug.BuildSetting) bool { return s.Key == key && s.Value == "true" })
	}
	if set("-race") != k.Race || set("-cover") != k.Cover {
		return fmt.Errorf("built with -race=%v -cover=%v, want -race=%v -cover=%v (go build %v)", set("-race"), set("-cover"), k.Race, k.Cover, k.flags())
	}
	return nil
}

// place makes out name the file at path: a hard link, or else a copy.
func place(path, out string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	if err := os.Link(abs, out); err == nil {
		return nil
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return err
	}
	return os.WriteFile(out, data, 0o755)
}
