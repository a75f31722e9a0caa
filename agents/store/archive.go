package store

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/stoke-cli/stoke/agents/internal/fsx"
)

// ErrBadArchive: a file given to Import is not a session archive stoke accepts.
var ErrBadArchive = errors.New("bad session archive")

// Limits of an archive Import accepts.
const (
	// MaxArchiveBytes bounds the total size of the files an archive holds (1 GiB).
	MaxArchiveBytes = 1 << 30
	// maxArchiveEntries bounds the number of entries (two files per agent).
	maxArchiveEntries = 20_001
	// maxInfoBytes bounds session.json.
	maxInfoBytes = 1 << 20
)

// Export writes session st as a gzip-compressed tar archive to w: session.json,
// session.jsonl and agents/ (every task's transcript and sidecar), named relative to the
// session directory, regular files and directories only. The lock file, worktrees and
// anything else stay out. session.json is written from st.Info (as Find or List read it:
// rebuilt when the file is unreadable). Export only reads the session and takes no lock:
// the archive holds what a run still writing the session has written so far.
//
// redact, when not nil, is applied to every line of every file (a secret never spans
// lines: the files are JSON and JSONL): a session may hold a secret that the run that
// wrote it did not know as one.
func Export(w io.Writer, st Stored, redact func(string) string) error {
	s, info := st.Session, st.Info
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	now := time.Now().UTC().Truncate(time.Second)
	data, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	data = append(data, '\n')
	if redact != nil {
		data = []byte(redact(string(data)))
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: infoFile, Mode: 0o600, Size: int64(len(data)), ModTime: now}); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if _, err := tw.Write(data); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if err := addFile(tw, filepath.Join(s.dir, parentTranscript), parentTranscript, redact); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("export: %w", err)
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: agentsDir + "/", Mode: 0o700, ModTime: now}); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	entries, err := os.ReadDir(filepath.Join(s.dir, agentsDir))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("export: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || !(taskFile(name, transcriptSuffix) || taskFile(name, sidecarSuffix)) {
			continue
		}
		if err := addFile(tw, filepath.Join(s.dir, agentsDir, name), agentsDir+"/"+name, redact); err != nil {
			return fmt.Errorf("export: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if err := gz.Close(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// ExportFile writes the archive of st (Export) to the file at path, mode 0600. It
// appears there only once complete, and an export killed half way leaves no debris:
// the archive is written unnamed and linked in at the end where the system allows
// (O_TMPFILE), else into a temporary file beside path (".NAME.tmp-PID-RANDOM") that is
// renamed at the end, and that the next export to path removes if its writer is gone.
func ExportFile(path string, st Stored, redact func(string) string) error {
	out, err := fsx.CreateOutput(path, 0o600)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if err := Export(out, st, redact); err != nil {
		out.Abort()
		return err
	}
	if err := out.Commit(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// addFile writes the regular file at src into the archive as name, each line through
// redact when it is not nil. The size is the file's as it is opened: a transcript that
// grows meanwhile is cut there.
func addFile(tw *tar.Writer, src, name string, redact func(string) string) error {
	f, err := fsx.OpenRegular(src)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	size := st.Size()
	if redact != nil {
		// The header comes first: a pass to learn the redacted size, then the copy.
		if size, err = copyLines(io.Discard, io.LimitReader(f, st.Size()), redact); err != nil {
			return err
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
	}
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o600, Size: size, ModTime: st.ModTime().UTC().Truncate(time.Second)}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if redact == nil {
		_, err = io.CopyN(tw, f, size)
		return err
	}
	_, err = copyLines(tw, io.LimitReader(f, st.Size()), redact)
	return err
}

// copyLines copies r to w line by line through redact and returns the bytes written.
func copyLines(w io.Writer, r io.Reader, redact func(string) string) (int64, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var n int64
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			m, werr := io.WriteString(w, redact(line))
			n += int64(m)
			if werr != nil {
				return n, werr
			}
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// ImportOptions say where an archive is unpacked.
type ImportOptions struct {
	// Home is $STOKE_HOME; CWD is the working directory the session is bound to.
	Home, CWD string
	// Sidecar rewrites each sidecar for the new place (the agents package binds its agents
	// to CWD); from is the session as the archive holds it. An error leaves the sidecar out.
	Sidecar func(from Info, name string, data []byte) ([]byte, error)
	// MaxBytes bounds the total size of the files (0: MaxArchiveBytes).
	MaxBytes int64
}

// Import unpacks a session archive (as Export writes it) under o.Home and binds it to
// o.CWD: it is stored in CWD's project, session.json and the parent transcript's meta
// record name CWD, and each sidecar goes through o.Sidecar. The archive is checked whole
// before anything is written; an entry outside the layout, a path that leaves the
// session, a link or special file, a duplicate, or more than the size limit is refused
// with ErrBadArchive, as is a session id already stored under o.Home (ErrExists). r is
// read twice (it is rewound between the check and the unpacking). warnings name the
// sidecars left out.
func Import(r io.ReadSeeker, o ImportOptions) (_ Stored, warnings []string, err error) {
	if o.MaxBytes <= 0 {
		o.MaxBytes = MaxArchiveBytes
	}
	from, err := checkArchive(r, o.MaxBytes)
	if err != nil {
		return Stored{}, nil, err
	}
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return Stored{}, nil, fmt.Errorf("import: %w", err)
	}
	info := from
	info.CWD = filepath.Clean(o.CWD)
	info.UpdatedAt = time.Now().UTC()
	s, err := stage(o.Home, o.CWD, info.SessionID, func(tmp string) error {
		return unpack(r, tmp, info, from, o, &warnings)
	})
	if err != nil {
		return Stored{}, nil, err
	}
	return Stored{Session: s, Info: info}, warnings, nil
}

// entryName returns the name of an archive entry relative to the session (a leading
// "./" dropped), or why it is refused.
func entryName(hdr *tar.Header) (string, error) {
	name := strings.TrimPrefix(hdr.Name, "./")
	name = strings.TrimSuffix(name, "/")
	switch {
	case name == "" || name == ".":
		if hdr.Typeflag == tar.TypeDir {
			return ".", nil
		}
		return "", fmt.Errorf("entry %q has no name", hdr.Name)
	case strings.Contains(hdr.Name, `\`) || path.IsAbs(hdr.Name) || path.Clean(name) != name || name == ".." || strings.HasPrefix(name, "../"):
		return "", fmt.Errorf("entry %q: its path leaves the session directory", hdr.Name)
	}
	switch hdr.Typeflag {
	case tar.TypeReg:
	case tar.TypeDir:
		if name != agentsDir {
			return "", fmt.Errorf("unexpected directory %q: a session archive holds session.json, session.jsonl and agents/", hdr.Name)
		}
		return name, nil
	case tar.TypeSymlink, tar.TypeLink:
		return "", fmt.Errorf("entry %q is a link", hdr.Name)
	default:
		return "", fmt.Errorf("entry %q is not a regular file", hdr.Name)
	}
	dir, file := path.Split(name)
	switch {
	case dir == "" && (file == infoFile || file == parentTranscript):
	case dir == agentsDir+"/" && (taskFile(file, transcriptSuffix) || taskFile(file, sidecarSuffix)):
	default:
		return "", fmt.Errorf("unexpected entry %q: a session archive holds session.json, session.jsonl and agents/<task-id>.jsonl|.meta.json", hdr.Name)
	}
	return name, nil
}

// checkArchive reads the whole archive without writing anything and returns its
// session.json.
func checkArchive(r io.Reader, maxBytes int64) (Info, error) {
	bad := func(format string, args ...any) (Info, error) {
		return Info{}, fmt.Errorf("%w: %s", ErrBadArchive, fmt.Sprintf(format, args...))
	}
	gz, err := gzip.NewReader(r)
	if err != nil {
		return bad("not a gzip-compressed tar archive (%v)", err)
	}
	defer gz.Close()
	tr := tar.NewReader(gz)
	seen := map[string]bool{}
	var total int64
	var info *Info
	for n := 0; ; n++ {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return bad("unreadable archive: %v", err)
		}
		if n >= maxArchiveEntries {
			return bad("more than %d entries", maxArchiveEntries)
		}
		name, err := entryName(hdr)
		if err != nil {
			return bad("%v", err)
		}
		if seen[name] && name != "." && name != agentsDir {
			return bad("entry %q appears twice", hdr.Name)
		}
		seen[name] = true
		if hdr.Size < 0 || hdr.Size > maxBytes-total {
			return bad("its files are larger than the limit of %d bytes", maxBytes)
		}
		total += hdr.Size
		if name == infoFile {
			if hdr.Size > maxInfoBytes {
				return bad("%s is larger than %d bytes", infoFile, maxInfoBytes)
			}
			data, err := io.ReadAll(tr)
			if err != nil {
				return bad("unreadable archive: %v", err)
			}
			var i Info
			if err := json.Unmarshal(data, &i); err != nil {
				return bad("%s: %v", infoFile, err)
			}
			if i.SessionID, err = ParseSessionID(i.SessionID); err != nil {
				return bad("%s: %v", infoFile, err)
			}
			info = &i
			continue
		}
		if _, err := io.Copy(io.Discard, tr); err != nil {
			return bad("unreadable archive: %v", err)
		}
	}
	if info == nil {
		return bad("no %s: not a stoke session archive", infoFile)
	}
	return *info, nil
}

// unpack writes the archive's files into tmp (the checked archive, read again): the
// parent transcript with a meta record for info, sidecars through o.Sidecar, session.json
// last.
func unpack(r io.Reader, tmp string, info, from Info, o ImportOptions, warnings *[]string) error {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	defer gz.Close()
	tr := tar.NewReader(gz)
	wroteParent := false
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("import: %w", err)
		}
		name, err := entryName(hdr)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrBadArchive, err) // the archive changed since it was checked
		}
		dst := filepath.Join(tmp, filepath.FromSlash(name))
		body := io.LimitReader(tr, hdr.Size)
		switch {
		case hdr.Typeflag == tar.TypeDir || name == infoFile:
			continue
		case name == parentTranscript:
			err = writeParent(dst, body, info)
			wroteParent = true
		case strings.HasSuffix(name, sidecarSuffix):
			var data []byte
			if data, err = io.ReadAll(body); err != nil {
				break
			}
			if o.Sidecar != nil {
				if data, err = o.Sidecar(from, strings.TrimSuffix(path.Base(name), sidecarSuffix), data); err != nil {
					*warnings = append(*warnings, fmt.Sprintf("sidecar %s left out: %v", path.Base(name), err))
					err = nil
					continue
				}
			}
			err = writeFile(dst, strings.NewReader(string(data)))
		default:
			err = writeFile(dst, body)
		}
		if err != nil {
			return fmt.Errorf("import %s: %w", name, err)
		}
	}
	if !wroteParent {
		if err := writeParent(filepath.Join(tmp, parentTranscript), nil, info); err != nil {
			return fmt.Errorf("import: %w", err)
		}
	}
	return writeInfo(tmp, info)
}
