package e2e

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"go.yaml.in/yaml/v3"
)

// goreleaserVersion is the goreleaser that .ci/goreleaser.mod pins: "require ... vX.Y.Z".
var goreleaserVersion = regexp.MustCompile(`(?m)^\s*github\.com/goreleaser/goreleaser/v2 (v\S+)`)

// TestReleaseConfig validates .goreleaser.yaml against the JSON schema of the goreleaser
// version .ci/goreleaser.mod pins, as that goreleaser generated it (`make release-schema`;
// every object in it refuses unknown keys), and checks that every build target is one the
// Go toolchain knows. It stands in CI for `goreleaser check` (make release-check), which
// builds goreleaser from source first: minutes of CPU on a fresh machine.
func TestReleaseConfig(t *testing.T) {
	schema := releaseSchema(t)
	data, err := os.ReadFile(filepath.Join("..", ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := validateYAML(schema, data); err != nil {
		t.Errorf(".goreleaser.yaml: %v", err)
	}
	if err := checkTargets(data, goTargets(t)); err != nil {
		t.Errorf(".goreleaser.yaml: %v", err)
	}
}

// TestReleaseDistIgnored: goreleaser builds with its output directory, dist/, inside
// the checkout. Unless git ignores it, the go command sees an untracked file and stamps
// every release binary as modified: `stoke version` would print 0.2.0+dirty and
// "(modified)" for a clean tagged release.
func TestReleaseDistIgnored(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if err := exec.Command(git, "-C", root, "rev-parse", "--is-inside-work-tree").Run(); err != nil {
		t.Skipf("%s is not a git work tree: %v", root, err)
	}
	data, err := os.ReadFile(filepath.Join(root, ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct{ Dist string }
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	dist := cmp.Or(cfg.Dist, "dist") // goreleaser's default
	artifact := filepath.ToSlash(filepath.Join(dist, "stoke_linux_amd64_v1", "stoke"))
	if out, err := exec.Command(git, "-C", root, "check-ignore", "--no-index", artifact).CombinedOutput(); err != nil {
		t.Errorf("git does not ignore goreleaser's output %s (add /%s/ to .gitignore): %v %s", artifact, dist, err, out)
	}
}

// TestReleaseConfigCheckBites: the schema refuses what goreleaser would refuse.
func TestReleaseConfigCheckBites(t *testing.T) {
	schema := releaseSchema(t)
	data, err := os.ReadFile(filepath.Join("..", ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	targets := goTargets(t)
	tests := []struct{ name, from, to string }{
		{"unknown top-level key", "project_name: stoke", "project_name: stoke\nprojekt: x"},
		{"unknown key in a build", "main: .", "main: .\n    mian: ."},
		{"wrong type", "binary: stoke", "binary: [stoke]"},
		{"version other than 2", "version: 2", "version: 3"},
		{"unknown GOOS", "goos: [linux, darwin, windows]", "goos: [linux, plan10]"},
		{"unknown GOARCH", "goarch: [amd64, arm64]", "goarch: [amd64, arm65]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !bytes.Contains(data, []byte(tt.from)) {
				t.Fatalf(".goreleaser.yaml has no %q to change", tt.from)
			}
			bad := bytes.Replace(data, []byte(tt.from), []byte(tt.to), 1)
			if err := errors.Join(validateYAML(schema, bad), checkTargets(bad, targets)); err == nil {
				t.Errorf("with %q: valid, want an error", tt.to)
			}
		})
	}
}

// goTargets returns the GOOS/GOARCH pairs of `go tool dist list`.
func goTargets(t *testing.T) map[string]bool {
	t.Helper()
	out, err := exec.Command("go", "tool", "dist", "list").Output()
	if err != nil {
		t.Fatalf("go tool dist list: %v", err)
	}
	targets := map[string]bool{}
	for _, f := range strings.Fields(string(out)) {
		targets[f] = true
	}
	return targets
}

// checkTargets says which goos/goarch pairs of the builds in a goreleaser configuration
// are not among targets.
func checkTargets(data []byte, targets map[string]bool) error {
	var cfg struct {
		Builds []struct {
			ID     string   `yaml:"id"`
			GOOS   []string `yaml:"goos"`
			GOARCH []string `yaml:"goarch"`
		} `yaml:"builds"`
	}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return err
	}
	var errs []error
	for _, b := range cfg.Builds {
		for _, goos := range b.GOOS {
			for _, goarch := range b.GOARCH {
				if !targets[goos+"/"+goarch] {
					errs = append(errs, fmt.Errorf("build %s: %s/%s is not a Go target (go tool dist list)", b.ID, goos, goarch))
				}
			}
		}
	}
	return errors.Join(errs...)
}

func releaseSchema(t *testing.T) *jsonschema.Resolved {
	t.Helper()
	mod, err := os.ReadFile(filepath.Join("..", ".ci", "goreleaser.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := goreleaserVersion.FindSubmatch(mod)
	if m == nil {
		t.Fatal(".ci/goreleaser.mod pins no github.com/goreleaser/goreleaser/v2")
	}
	name := filepath.Join("..", ".ci", "goreleaser-"+string(m[1])+".schema.json")
	raw, err := os.ReadFile(name)
	if err != nil {
		t.Fatalf("%v: after a goreleaser upgrade, run make release-schema", err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return r
}

// validateYAML validates a YAML document against schema, as JSON values.
func validateYAML(schema *jsonschema.Resolved, data []byte) error {
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return err
	}
	j, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	var v any
	if err := json.Unmarshal(j, &v); err != nil {
		return err
	}
	if err := schema.Validate(v); err != nil {
		return fmt.Errorf("%s", strings.TrimSpace(err.Error()))
	}
	return nil
}
