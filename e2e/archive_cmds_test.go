package e2e

// tarball OUT ENTRY...
//
//	Writes a gzip-compressed tar archive to OUT (relative to the current directory) with
//	the entries in order, to feed `stoke sessions import` archives it must refuse. An
//	ENTRY is one of:
//	  NAME=FILE      a regular file NAME holding FILE's content (a file of the script)
//	  NAME/          a directory
//	  NAME->TARGET   a symbolic link
//	  NAME:size=N    a regular file whose header claims N bytes; the archive ends after
//	                 the header (Import must refuse it before reading them)
//
//	  tarball evil.tar.gz session.json=info.json ../escape.txt=info.json

import (
	"archive/tar"
	"compress/gzip"
	"os"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

func cmdTarball(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: tarball OUT ENTRY...")
	}
	f, err := os.Create(ts.MkAbs(args[0]))
	ts.Check(err)
	defer f.Close()
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	for _, e := range args[1:] {
		switch {
		case strings.Contains(e, "->"):
			name, target, _ := strings.Cut(e, "->")
			ts.Check(tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777}))
		case strings.HasSuffix(e, "/"):
			ts.Check(tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: e, Mode: 0o700}))
		case strings.Contains(e, ":size="):
			name, size, _ := strings.Cut(e, ":size=")
			n, err := strconv.ParseInt(size, 10, 64)
			ts.Check(err)
			ts.Check(tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o600, Size: n}))
			ts.Check(gz.Close()) // the claimed bytes never come
			return
		default:
			name, file, ok := strings.Cut(e, "=")
			if !ok {
				ts.Fatalf("tarball: entry %q: want NAME=FILE, NAME/, NAME->TARGET or NAME:size=N", e)
			}
			data := []byte(ts.ReadFile(file))
			ts.Check(tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o600, Size: int64(len(data))}))
			_, err := tw.Write(data)
			ts.Check(err)
		}
	}
	ts.Check(tw.Close())
	ts.Check(gz.Close())
}
