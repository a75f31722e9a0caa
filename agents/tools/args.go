package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"unicode/utf8"
)

// decodeArgs decodes a call's arguments into v. The Set has validated them against the
// schema already, but an Approver may have replaced them, so the tools check again.
func decodeArgs(call Call, v any) error {
	in := call.Input
	if len(bytes.TrimSpace(in)) == 0 {
		in = json.RawMessage(`{}`)
	}
	if err := json.Unmarshal(in, v); err != nil {
		return fmt.Errorf("invalid arguments for %s: %s", call.Name, oneLine(err.Error()))
	}
	return nil
}

// missing returns the error Result for a required argument that is absent or empty.
func missing(tool, arg string) Result {
	return Errorf("invalid arguments for %s: %s is required", tool, arg)
}

// fileError turns an error of a file operation into the Result the model sees.
func fileError(tool, path string, err error) Result {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Errorf("%s: %s does not exist", tool, path)
	case errors.Is(err, fs.ErrPermission):
		return Errorf("%s: %s: permission denied", tool, path)
	}
	return Errorf("%s: %s: %v", tool, path, unwrapPath(err))
}

// sniffLen is how much of a file is looked at to tell binary from text, as git does.
const sniffLen = 8000

// isBinary reports whether data, the start of a file, looks binary: it holds a NUL byte.
func isBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), sniffLen)], 0) >= 0
}

// cutRunes returns at most n bytes of s, cut at a rune boundary, and whether it cut.
func cutRunes(s []byte, n int) ([]byte, bool) {
	if len(s) <= n {
		return s, false
	}
	i := n
	for i > 0 && i > n-utf8.UTFMax && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i], true
}

// trimPartialRune drops an incomplete UTF-8 sequence from the end of b.
func trimPartialRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			break
		}
	}
	return b
}

// validText makes s valid UTF-8, so that the JSON it travels in round-trips.
func validText(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// numbered appends line n in the format of cat -n.
func numbered(b *strings.Builder, n int, line string) {
	fmt.Fprintf(b, "%6d\t%s\n", n, line)
}
