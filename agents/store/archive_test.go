package store

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExportImport(t *testing.T) {
	t.Parallel()
	home, cwd := t.TempDir(), "/work/repo"
	src, info := sampleSession(t, home, cwd)
	var archive bytes.Buffer
	if err := Export(&archive, Stored{Session: src, Info: info}, nil); err != nil {
		t.Fatal(err)
	}
	names := tarNames(t, archive.Bytes())
	want := "session.json session.jsonl agents/ agents/a0123456789abcdef.jsonl agents/a0123456789abcdef.meta.json"
	if strings.Join(names, " ") != want {
		t.Fatalf("archive holds %v, want %s", names, want)
	}

	home2, cwd2 := t.TempDir(), "/ci/checkout"
	var fromSeen Info
	st, warnings, err := Import(bytes.NewReader(archive.Bytes()), ImportOptions{Home: home2, CWD: cwd2,
		Sidecar: func(from Info, name string, data []byte) ([]byte, error) {
			fromSeen = from
			return bytes.ReplaceAll(data, []byte("}"), []byte(`,"bound":true}`)), nil
		}})
	if err != nil || len(warnings) != 0 {
		t.Fatalf("Import: %v %v", err, warnings)
	}
	if fromSeen.CWD != cwd || st.Info.CWD != cwd2 || st.Info.SessionID != lockID || st.String() != New(home2, cwd2, lockID).String() {
		t.Fatalf("imported %+v (from %+v)", st.Info, fromSeen)
	}
	got := files(t, st.String())
	orig := files(t, src.String())
	if got["agents/a0123456789abcdef.jsonl"] != orig["agents/a0123456789abcdef.jsonl"] || !strings.Contains(got["agents/a0123456789abcdef.meta.json"], `"bound":true`) {
		t.Errorf("imported files: %v", got)
	}
	if !strings.Contains(got["session.jsonl"], `"cwd":"`+cwd2+`"`) {
		t.Errorf("the parent's meta record is not bound: %s", got["session.jsonl"])
	}
	if found, err := Latest(home2, cwd2); err != nil || found.Info.SessionID != lockID {
		t.Errorf("Latest in the new home: %+v, %v", found.Info, err)
	}
	// Again: the id is taken.
	if _, _, err := Import(bytes.NewReader(archive.Bytes()), ImportOptions{Home: home2, CWD: "/x"}); !errors.Is(err, ErrExists) {
		t.Errorf("second import: %v", err)
	}
}

// Export redacts every file line by line, and the archive still imports: each entry's
// size is the redacted size.
func TestExportRedacts(t *testing.T) {
	t.Parallel()
	home, cwd := t.TempDir(), "/work/repo"
	src, info := sampleSession(t, home, cwd)
	redact := strings.NewReplacer("NONCE-1", "[REDACTED]", "m1", "[REDACTED]").Replace
	var archive bytes.Buffer
	if err := Export(&archive, Stored{Session: src, Info: info}, redact); err != nil {
		t.Fatal(err)
	}
	st, _, err := Import(bytes.NewReader(archive.Bytes()), ImportOptions{Home: t.TempDir(), CWD: cwd})
	if err != nil {
		t.Fatal(err)
	}
	got := files(t, st.String())
	for _, name := range []string{"session.json", "session.jsonl", "agents/a0123456789abcdef.jsonl"} {
		if strings.Contains(got[name], "NONCE-1") || !strings.Contains(got[name], "[REDACTED]") {
			t.Errorf("%s is not redacted: %s", name, got[name])
		}
	}
	if tr := got["agents/a0123456789abcdef.jsonl"]; !strings.Contains(tr, `"Remember [REDACTED]"`) {
		t.Errorf("task transcript: %s", tr)
	}
}

// tarNames lists the entries of a tar.gz.
func tarNames(t *testing.T, data []byte) []string {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var out []string
	for {
		h, err := tr.Next()
		if err != nil {
			return out
		}
		out = append(out, h.Name)
	}
}

// archiveOf builds a tar.gz from headers and contents.
func archiveOf(t testing.TB, entries ...any) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for i := 0; i < len(entries); i += 2 {
		h := entries[i].(*tar.Header)
		body := entries[i+1].(string)
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	_ = tw.Close()
	_ = gz.Close()
	return buf.Bytes()
}

func TestImportRefusesBadArchives(t *testing.T) {
	t.Parallel()
	info := `{"session_id":"` + lockID + `","cwd":"/w"}`
	reg := func(name string) *tar.Header { return &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o600} }
	tests := []struct {
		name    string
		archive []byte
		max     int64
		want    string
	}{
		{"traversal", archiveOf(t, reg("session.json"), info, reg("agents/../../x.jsonl"), "x"), 0, "leaves the session directory"},
		{"dot dot", archiveOf(t, reg("session.json"), info, reg("../x"), "x"), 0, "leaves the session directory"},
		{"absolute", archiveOf(t, reg("/session.json"), info), 0, "leaves the session directory"},
		{"backslash", archiveOf(t, reg(`agents\..\x.jsonl`), "x"), 0, "leaves the session directory"},
		{"symlink", archiveOf(t, reg("session.json"), info, &tar.Header{Typeflag: tar.TypeSymlink, Name: "session.jsonl", Linkname: "/etc/passwd"}, ""), 0, "is a link"},
		{"hard link", archiveOf(t, reg("session.json"), info, &tar.Header{Typeflag: tar.TypeLink, Name: "session.jsonl", Linkname: "session.json"}, ""), 0, "is a link"},
		{"device", archiveOf(t, &tar.Header{Typeflag: tar.TypeChar, Name: "session.jsonl"}, ""), 0, "not a regular file"},
		{"layout", archiveOf(t, reg("session.json"), info, reg("notes.txt"), "x"), 0, "unexpected entry"},
		{"bad task file", archiveOf(t, reg("session.json"), info, reg("agents/x.y.jsonl"), "x"), 0, "unexpected entry"},
		{"other dir", archiveOf(t, reg("session.json"), info, &tar.Header{Typeflag: tar.TypeDir, Name: "worktrees/"}, ""), 0, "unexpected directory"},
		{"duplicate", archiveOf(t, reg("session.json"), info, reg("session.json"), info), 0, "appears twice"},
		{"oversize", archiveOf(t, reg("session.json"), info, reg("session.jsonl"), strings.Repeat("x", 200)), 100, "larger than the limit of 100 bytes"},
		{"no info", archiveOf(t, reg("session.jsonl"), "x"), 0, "no session.json"},
		{"bad info", archiveOf(t, reg("session.json"), "{"), 0, "session.json"},
		{"bad id", archiveOf(t, reg("session.json"), `{"session_id":"../../x"}`), 0, "not a session id"},
		{"not gzip", []byte("plain text"), 0, "not a gzip-compressed tar archive"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			home := filepath.Join(t.TempDir(), "home")
			_, _, err := Import(bytes.NewReader(tc.archive), ImportOptions{Home: home, CWD: "/w", MaxBytes: tc.max})
			if !errors.Is(err, ErrBadArchive) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if _, err := os.Stat(home); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a refused archive wrote into the home: %v", err)
			}
		})
	}
}

// FuzzImport feeds Import arbitrary archives: it never panics, and an archive it accepts
// becomes exactly one session directory of the layout under the home.
// FuzzImport imports arbitrary archives: an archive is refused having written nothing,
// or imported writing only regular files inside its session directory. The fuzzer
// mutates the tar stream (the target compresses it: mutated gzip bytes would fail the
// checksum before the archive is read at all); an input that is already gzip is taken as
// it is. Each input imports into a fresh home on a tmpfs where there is one (/dev/shm):
// Import syncs every file it writes, and on a disk those fsyncs made one input cost about
// 27 ms, seventeen times the rest, so that a 60-second run got through a few inputs.
func FuzzImport(f *testing.F) {
	info := `{"session_id":"` + lockID + `","cwd":"/w"}`
	reg := func(name string) *tar.Header { return &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o600} }
	tarOf := func(entries ...any) []byte {
		gz := archiveOf(f, entries...)
		r, err := gzip.NewReader(bytes.NewReader(gz))
		if err != nil {
			f.Fatal(err)
		}
		data, err := io.ReadAll(r)
		if err != nil {
			f.Fatal(err)
		}
		return data
	}
	sidecar := `{"version":1,"task_id":"a1","parent_session_id":"` + lockID + `","status":"completed","transcript":"agents/a1.jsonl"}`
	f.Add(tarOf(reg("session.json"), info, reg("session.jsonl"), "{}\n", reg("agents/a1.jsonl"), "{}\n", reg("agents/a1.meta.json"), sidecar))
	f.Add(tarOf(&tar.Header{Typeflag: tar.TypeDir, Name: "agents/", Mode: 0o700}, "", reg("session.json"), info, reg("./session.jsonl"), "{}\n"))
	f.Add(tarOf(reg("session.json"), info, reg("../x"), "x"))
	f.Add(tarOf(reg("session.json"), info, &tar.Header{Typeflag: tar.TypeSymlink, Name: "session.jsonl", Linkname: "/etc/passwd"}, ""))
	f.Add(tarOf(reg("session.json"), info, reg("session.json"), info))
	f.Add(archiveOf(f, reg("session.json"), info, reg("session.jsonl"), "{}\n"))
	f.Add([]byte("plain"))
	base := os.TempDir()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		base = "/dev/shm"
	}
	homes, err := os.MkdirTemp(base, "stoke-fuzz-import-")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { os.RemoveAll(homes) })
	f.Fuzz(func(t *testing.T, data []byte) {
		if !bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
			var buf bytes.Buffer
			gz, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
			_, _ = gz.Write(data)
			_ = gz.Close()
			data = buf.Bytes()
		}
		home, err := os.MkdirTemp(homes, "")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(home)
		st, _, err := Import(bytes.NewReader(data), ImportOptions{Home: home, CWD: "/w", MaxBytes: 1 << 20})
		if err != nil {
			if entries, _ := os.ReadDir(home); len(entries) != 0 {
				t.Fatalf("a refused archive wrote %v", entries)
			}
			return
		}
		err = filepath.WalkDir(home, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && !d.Type().IsRegular() {
				t.Fatalf("import made something other than a regular file: %s (%v)", p, d.Type())
			}
			if !d.IsDir() && !strings.HasPrefix(p, st.String()+string(filepath.Separator)) {
				t.Fatalf("import wrote %s outside %s", p, st.String())
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.ReadInfo(); err != nil {
			t.Fatalf("an imported session has no readable session.json: %v", err)
		}
	})
}
