package e2e

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestReleaseSnapshot opens the archives of a goreleaser snapshot (make release-check
// builds one into dist/ and names it in RELEASE_DIST): one archive per target of
// .goreleaser.yaml, each holding the stoke binary built for that target (its executable
// header says so), LICENSE, README.md and docs/*.md and nothing else; checksums.txt
// lists each with its SHA-256; the binary for this machine runs and reports the module
// and, from a main work tree, the commit the snapshot was built from.
func TestReleaseSnapshot(t *testing.T) {
	dist := os.Getenv("RELEASE_DIST")
	if dist == "" {
		t.Skip("RELEASE_DIST names no goreleaser snapshot (make release-check builds one)")
	}
	var meta struct {
		ProjectName string `json:"project_name"`
		Version     string `json:"version"`
	}
	readJSON(t, filepath.Join(dist, "metadata.json"), &meta)
	if meta.ProjectName != "stoke" || meta.Version == "" {
		t.Fatalf("metadata.json: %+v", meta)
	}
	sums := readChecksums(t, filepath.Join(dist, "checksums.txt"))
	docs, err := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	if err != nil || len(docs) == 0 {
		t.Fatalf("docs/*.md: %v", err)
	}
	wantFiles := []string{"LICENSE", "README.md"}
	for _, d := range docs {
		wantFiles = append(wantFiles, "docs/"+filepath.Base(d))
	}

	targets := releaseTargets(t)
	var archives []string
	for _, target := range targets {
		goos, goarch, _ := strings.Cut(target, "/")
		t.Run(target, func(t *testing.T) {
			ext, bin := "tar.gz", "stoke"
			if goos == "windows" {
				ext, bin = "zip", "stoke.exe"
			}
			name := fmt.Sprintf("stoke_%s_%s_%s.%s", meta.Version, goos, goarch, ext)
			archives = append(archives, name)
			data, err := os.ReadFile(filepath.Join(dist, name))
			if err != nil {
				t.Fatalf("no archive for %s: %v", target, err)
			}
			if sum := sha256.Sum256(data); sums[name] != hex.EncodeToString(sum[:]) {
				t.Errorf("checksums.txt says %q for %s, the file's SHA-256 is %x", sums[name], name, sum)
			}
			files := archiveFiles(t, data, ext)
			var names []string
			for n := range files {
				names = append(names, n)
			}
			slices.Sort(names)
			want := append([]string{bin}, wantFiles...)
			slices.Sort(want)
			if !slices.Equal(names, want) {
				t.Errorf("%s holds %q, want %q", name, names, want)
			}
			if err := checkExecutable(files[bin].data, goos, goarch); err != nil {
				t.Errorf("%s: %s: %v", name, bin, err)
			}
			if ext == "tar.gz" && files[bin].mode&0o111 == 0 {
				t.Errorf("%s: %s is not executable (mode %o)", name, bin, files[bin].mode)
			}
			if goos == runtime.GOOS && goarch == runtime.GOARCH {
				checkSnapshotBinary(t, files[bin].data)
			}
		})
	}
	var listed []string
	for name := range sums {
		listed = append(listed, name)
	}
	slices.Sort(listed)
	slices.Sort(archives)
	if !slices.Equal(listed, archives) {
		t.Errorf("checksums.txt lists %q, the archives are %q", listed, archives)
	}
}

// releaseTargets are the goos/goarch pairs of .goreleaser.yaml's build.
func releaseTargets(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Builds []struct {
			GOOS   []string `yaml:"goos"`
			GOARCH []string `yaml:"goarch"`
		} `yaml:"builds"`
	}
	if err := yaml.Unmarshal(data, &cfg); err != nil || len(cfg.Builds) != 1 {
		t.Fatalf(".goreleaser.yaml: %v (%d builds, want 1)", err, len(cfg.Builds))
	}
	var out []string
	for _, goos := range cfg.Builds[0].GOOS {
		for _, goarch := range cfg.Builds[0].GOARCH {
			out = append(out, goos+"/"+goarch)
		}
	}
	return out
}

type archived struct {
	data []byte
	mode os.FileMode
}

// archiveFiles returns the regular files of a tar.gz or zip archive by name.
func archiveFiles(t *testing.T, data []byte, ext string) map[string]archived {
	t.Helper()
	files := map[string]archived{}
	if ext == "zip" {
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatalf("zip: %v", err)
		}
		for _, f := range zr.File {
			if f.FileInfo().IsDir() {
				continue
			}
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Fatal(err)
			}
			files[f.Name] = archived{b, f.Mode()}
		}
		return files
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("gzip: %v", err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatalf("tar: %v", err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = archived{b, h.FileInfo().Mode()}
	}
}

// checkExecutable says whether data is an executable for goos/goarch, from its header.
func checkExecutable(data []byte, goos, goarch string) error {
	r := bytes.NewReader(data)
	var got string
	switch goos {
	case "linux":
		f, err := elf.NewFile(r)
		if err != nil {
			return err
		}
		got = map[elf.Machine]string{elf.EM_X86_64: "amd64", elf.EM_AARCH64: "arm64"}[f.Machine]
	case "darwin":
		f, err := macho.NewFile(r)
		if err != nil {
			return err
		}
		got = map[macho.Cpu]string{macho.CpuAmd64: "amd64", macho.CpuArm64: "arm64"}[f.Cpu]
	case "windows":
		f, err := pe.NewFile(r)
		if err != nil {
			return err
		}
		got = map[uint16]string{pe.IMAGE_FILE_MACHINE_AMD64: "amd64", pe.IMAGE_FILE_MACHINE_ARM64: "arm64"}[f.Machine]
	default:
		return fmt.Errorf("no header check for %s", goos)
	}
	if got != goarch {
		return fmt.Errorf("built for %q, want %s", got, goarch)
	}
	return nil
}

// checkSnapshotBinary runs the binary built for this machine: `stoke version --json`
// reports the module, and the checkout's commit when the go command could stamp it (the
// snapshot's metadata.json says "none" for a checkout without a remote).
func checkSnapshotBinary(t *testing.T, data []byte) {
	t.Helper()
	head, err := exec.Command("git", "-C", "..", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("git rev-parse HEAD: %v", err)
	}
	commit := strings.TrimSpace(string(head))
	path := filepath.Join(t.TempDir(), "stoke"+exeSuffix())
	if err := os.WriteFile(path, data, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(path, "version", "--json").Output()
	if err != nil {
		t.Fatalf("stoke version --json: %v", err)
	}
	var info struct{ Version, Module, Revision string }
	if err := json.Unmarshal(out, &info); err != nil {
		t.Fatalf("stoke version --json printed %q: %v", out, err)
	}
	if info.Module != "github.com/stoke-cli/stoke" || info.Version == "" {
		t.Errorf("version %+v", info)
	}
	switch {
	case info.Revision == commit:
	case info.Revision == "" && !mainWorkTree():
		t.Logf("no VCS stamp: %s is not a repository's main work tree (a clone stamps the commit)", filepath.Dir(mustAbs(t, "..")))
	default:
		t.Errorf("revision %q, want the snapshot's commit %s", info.Revision, commit)
	}
}

// mainWorkTree reports whether the repository root is a main work tree (.git a
// directory), where the go command stamps VCS information.
func mainWorkTree() bool {
	fi, err := os.Stat(filepath.Join("..", ".git"))
	return err == nil && fi.IsDir()
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// readChecksums parses a checksums.txt: "<sha256>  <name>" per line.
func readChecksums(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sums := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("checksums.txt: line %q", sc.Text())
		}
		sums[name] = sum
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return sums
}
