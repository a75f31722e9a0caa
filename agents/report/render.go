package report

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Format is a rendering of a Report.
type Format string

// The formats.
const (
	FormatHTML     Format = "html"
	FormatMarkdown Format = "markdown"
	FormatJSON     Format = "json"
)

// Formats returns the formats, the default first.
func Formats() []Format { return []Format{FormatHTML, FormatMarkdown, FormatJSON} }

// ErrFormat: a format that is not one of Formats.
var ErrFormat = errors.New("unknown report format")

// ParseFormat returns the format named s ("md" is markdown).
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(s)); f {
	case FormatHTML, FormatMarkdown, FormatJSON:
		return f, nil
	case "md":
		return FormatMarkdown, nil
	}
	return "", fmt.Errorf("%w %q: want html, markdown or json", ErrFormat, s)
}

// Ext is the file name extension of f.
func (f Format) Ext() string {
	if f == FormatMarkdown {
		return ".md"
	}
	return "." + string(f)
}

// Render writes r to w in format f.
func Render(w io.Writer, r *Report, f Format) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	var err error
	switch f {
	case FormatHTML:
		err = HTML(bw, r)
	case FormatMarkdown:
		err = Markdown(bw, r)
	case FormatJSON:
		enc := json.NewEncoder(bw)
		enc.SetIndent("", " ")
		err = enc.Encode(r)
	default:
		err = fmt.Errorf("%w %q", ErrFormat, f)
	}
	if err != nil {
		return err
	}
	return bw.Flush()
}

// WriteFile writes r to the file at path in format f: into a temporary file beside it,
// renamed over it once complete, so that a failed write never leaves half a report. The
// file is the user's alone (0600), as the session it is drawn from.
func WriteFile(path string, r *Report, f Format) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	defer os.Remove(tmp.Name())
	err = Render(tmp, r, f)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}
