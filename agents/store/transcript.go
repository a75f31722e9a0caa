package store

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stoke-cli/stoke/agents/internal/fsx"
	"github.com/stoke-cli/stoke/agents/llm"
)

// Transcript record types.
const (
	RecordMeta    = "meta"    // first line: who the agent is
	RecordMessage = "message" // one chat message, in the order it was added
	RecordTurn    = "turn"    // a turn boundary: its end status and summary
)

// Record is one line of a transcript (JSONL, append-only).
type Record struct {
	Type string    `json:"type"`
	Time time.Time `json:"ts"`
	// meta: a task's transcript names the task; the parent's names its session
	TaskID       string `json:"task_id,omitempty"`
	SubagentType string `json:"subagent_type,omitempty"`
	System       string `json:"system,omitempty"`
	SessionID    string `json:"session_id,omitempty"`
	CWD          string `json:"cwd,omitempty"`
	Model        string `json:"model,omitempty"`
	// message and turn
	Turn    int          `json:"turn,omitempty"`
	Message *llm.Message `json:"message,omitempty"`
	// turn
	Status  string `json:"status,omitempty"`
	Summary string `json:"summary,omitempty"`
	// Row is the task's sidecar as the turn left it (agents owns its schema): the durable
	// copy a sidecar is rebuilt from when a crash of the machine left it unreadable.
	Row json.RawMessage `json:"row,omitempty"`

	// What a run records of how a message or a turn came about, for reports (docs/report.md).
	// All optional: transcripts written before them lack them, and nothing that revives a
	// chat reads them. Model (above) is, on an assistant message, the model that answered.
	//
	// Start: an assistant message, when its model call began; a turn, when it began to run.
	Start time.Time `json:"start,omitzero"`
	// Usage: an assistant message, the usage its model call reported.
	Usage *llm.Usage `json:"usage,omitempty"`
	// Calls: a message of tool results, when each call ran.
	Calls []CallTime `json:"calls,omitempty"`
	// Continuation: a turn, how it ran (fresh, resident or revived: streamjson.Continuation).
	Continuation string `json:"continuation,omitempty"`
	// Queued: a turn that waited for a slot, when it was scheduled (it ran from Start).
	Queued time.Time `json:"queued,omitzero"`
}

// CallTime is when one tool call ran.
type CallTime struct {
	ID         string    `json:"id"` // the tool_use id
	Start      time.Time `json:"start"`
	DurationMS int64     `json:"duration_ms"`
}

// MessageInfo is what a message record says of how the message came about (Record's
// Start, Model, Usage and Calls); the zero value says nothing.
type MessageInfo struct {
	Start time.Time
	Model string
	Usage *llm.Usage
	Calls []CallTime
}

// Transcript appends records to one JSONL file. Each record is one write of one whole
// line; Sync flushes to disk at turn boundaries. The file is opened for each write (and
// each sync) and closed again, so a transcript holds no descriptor between writes:
// thousands of agents keep as many transcripts without running out of files. Safe for
// concurrent use.
type Transcript struct {
	path   string
	files  *fsx.Handles  // bounds the files open at once (nil: no bound)
	fsyncs *atomic.Int64 // counts the syncs (nil: not counted)
	now    func() time.Time
	// failures hears of a failed write or sync (nil: no one does): its Session's.
	failures *writeFailures

	mu     sync.Mutex
	turn   int
	err    error
	dirty  bool // written since the last sync
	closed bool
}

// OpenTranscript opens (creating, mode 0600, and its directory 0700) the transcript at path
// for appending.
func OpenTranscript(path string, now func() time.Time) (*Transcript, error) {
	return openTranscript(path, now, nil, nil)
}

// openTranscript opens the transcript at path, its files bounded by files; changed is told
// when the file is created (its directory has a new entry to sync).
func openTranscript(path string, now func() time.Time, files *fsx.Handles, changed func()) (*Transcript, error) {
	if now == nil {
		now = time.Now
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create transcript dir: %w", err)
	}
	err := files.Do(func() error {
		if err := trimTornTail(path); err != nil {
			return err
		}
		f, err := fsx.OpenRegularFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, os.ErrExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("open transcript: %w", fileError("write", path, err))
		}
		if changed != nil {
			changed()
		}
		return f.Close()
	})
	if err != nil {
		return nil, err
	}
	return &Transcript{path: path, files: files, now: now}, nil
}

// trimTornTail cuts a torn last line (a write cut by a crash) off an existing transcript,
// so that the next record starts on a line of its own. The torn record was never complete,
// so nothing that was acknowledged is lost.
func trimTornTail(path string) error {
	f, err := fsx.OpenRegularFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open transcript: %w", fileError("write", path, err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return err
	}
	const chunk = 64 << 10
	buf := make([]byte, chunk)
	end := st.Size()
	for off := end; off > 0; {
		n := int64(chunk)
		if off < n {
			n = off
		}
		off -= n
		if _, err := f.ReadAt(buf[:n], off); err != nil {
			return fmt.Errorf("read transcript tail: %w", err)
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			keep := off + int64(i) + 1
			if keep == end {
				return nil
			}
			return truncateSync(f, keep)
		}
	}
	return truncateSync(f, 0)
}

func truncateSync(f *os.File, size int64) error {
	if err := f.Truncate(size); err != nil {
		return fmt.Errorf("trim torn transcript line: %w", err)
	}
	return f.Sync()
}

// empty reports whether nothing has been written to the file yet.
func (t *Transcript) empty() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	st, err := os.Stat(t.path)
	return err == nil && st.Size() == 0
}

// SetTurn sets the turn number stamped on the following message records.
func (t *Transcript) SetTurn(n int) {
	t.mu.Lock()
	t.turn = n
	t.mu.Unlock()
}

// Write appends one record.
func (t *Transcript) Write(rec Record) error {
	if rec.Time.IsZero() {
		rec.Time = t.now().UTC()
	}
	line, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encode transcript record: %w", err)
	}
	line = append(line, '\n')
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil {
		return t.err
	}
	if t.closed {
		return errClosed
	}
	err = t.files.Do(func() error {
		f, err := fsx.OpenRegularFile(t.path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return err
		}
		_, err = f.Write(line)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	})
	if err != nil {
		// A write that may have left part of a line is fatal to the transcript; the
		// next open trims the torn line.
		t.err = fmt.Errorf("write transcript: %w", t.failed(err))
		return t.err
	}
	t.dirty = true
	return nil
}

var errClosed = errors.New("transcript closed")

// failed makes err, a failed write or sync of the transcript, a *FileError, and tells
// the transcript's Session of it.
func (t *Transcript) failed(err error) error {
	if t.failures == nil {
		return fileError("write", t.path, err)
	}
	return t.failures.failed(t.path, err)
}

// Append implements ChatStore.
func (t *Transcript) Append(m llm.Message) error {
	t.mu.Lock()
	turn := t.turn
	t.mu.Unlock()
	return t.Write(Record{Type: RecordMessage, Turn: turn, Message: &m})
}

// AppendInfo is Append with what info says of how m came about.
func (t *Transcript) AppendInfo(m llm.Message, info MessageInfo) error {
	t.mu.Lock()
	turn := t.turn
	t.mu.Unlock()
	return t.Write(Record{Type: RecordMessage, Turn: turn, Message: &m,
		Start: info.Start.UTC(), Model: info.Model, Usage: info.Usage, Calls: info.Calls})
}

// Sync implements ChatStore: it flushes what was written since the last sync to stable
// storage (nothing to do when nothing was).
func (t *Transcript) Sync() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.syncLocked()
}

func (t *Transcript) syncLocked() error {
	if t.err != nil {
		return t.err
	}
	if !t.dirty {
		return nil
	}
	err := t.files.Do(func() error {
		f, err := fsx.OpenRegularFile(t.path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return err
		}
		err = f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("sync transcript: %w", t.failed(err))
	}
	if t.fsyncs != nil {
		t.fsyncs.Add(1)
	}
	t.dirty = false
	return nil
}

// Close syncs what is not synced yet; later writes fail. Idempotent.
func (t *Transcript) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	err := t.syncLocked()
	t.closed = true
	return err
}

// Loaded is what a transcript file holds.
type Loaded struct {
	Meta Record
	// LastRow is the Row of the last record that carries one (nil when none does).
	LastRow json.RawMessage
	// Messages is the chat, rebuilt with AppendMessage exactly as the runtime built it.
	Messages []llm.Message
	// Turns is the number of the last turn with a turn record; LastStatus and LastSummary are
	// that record's status and summary.
	Turns       int
	LastStatus  string
	LastSummary string
	// Warnings name lines that were skipped (a torn last line, a corrupt line).
	Warnings []string
}

// ReadTranscript reads a transcript (LoadTranscript without a context).
func ReadTranscript(path string) (*Loaded, error) {
	return LoadTranscript(context.Background(), path)
}

// LoadTranscript reads a transcript. A torn or corrupt line is skipped with a warning and
// never fails the read; a file that cannot be read fails it with a *FileError (a missing
// one with an error wrapping os.ErrNotExist). The file is read line by line, never
// opened in a way that can block (fsx.OpenRegular), and the read stops with ctx's cause
// once ctx is done, however large the file.
func LoadTranscript(ctx context.Context, path string) (*Loaded, error) {
	f, err := fsx.OpenRegular(path)
	if err != nil {
		return nil, fileError("read", path, err)
	}
	defer f.Close()
	var hint int
	if fi, err := f.Stat(); err == nil {
		hint = int(min(fi.Size()/minMessageLine, 1<<20))
	}
	l, err := decodeTranscript(ctx, f, hint)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("read transcript %s: %w", path, err)
		}
		return nil, fileError("read", path, err)
	}
	return l, nil
}

// DecodeTranscript reads transcript records from r (see LoadTranscript). Its lines are
// decoded one at a time, without reflection (decodeLine).
func DecodeTranscript(r io.Reader) (*Loaded, error) {
	l, err := decodeTranscript(context.Background(), r, 0)
	if err != nil {
		return nil, fmt.Errorf("read transcript: %w", err)
	}
	return l, nil
}

// minMessageLine is about the shortest line a message record takes: a file of n bytes
// holds at most about n/minMessageLine messages.
const minMessageLine = 128

// decodeTranscript decodes the lines of r until its end (decodeRecords); the chat is
// allocated for hint messages at first (0: none), so that a long one is not copied as
// it grows.
func decodeTranscript(ctx context.Context, r io.Reader, hint int) (*Loaded, error) {
	out := &Loaded{}
	if hint > 0 {
		out.Messages = make([]llm.Message, 0, hint)
	}
	warnings, err := decodeRecords(ctx, r, out.apply)
	if err != nil {
		return nil, err
	}
	out.Warnings = warnings
	return out, nil
}

// ReadRecords reads every record of a transcript, in the order written (for reports,
// which want each record's times). A torn or corrupt line is skipped with a warning and
// never fails the read; only an unreadable file is an error. The file is opened as
// LoadTranscript opens it (fsx.OpenRegular: never blocking, regular files only).
func ReadRecords(path string) (recs []Record, warnings []string, err error) {
	f, err := fsx.OpenRegular(path)
	if err != nil {
		return nil, nil, fmt.Errorf("open transcript: %w", fileError("read", path, err))
	}
	defer f.Close()
	warnings, err = decodeRecords(context.Background(), f, func(rec Record) { recs = append(recs, rec) })
	if err != nil {
		return nil, nil, fileError("read", path, err)
	}
	return recs, warnings, nil
}

// decodeRecords calls apply with each record of r, in order, until r's end, and returns a
// warning for each line it skipped; it checks ctx every ctxEvery lines and stops with
// ctx's cause once ctx is done.
func decodeRecords(ctx context.Context, r io.Reader, apply func(Record)) (warnings []string, err error) {
	const ctxEvery = 256
	br := bufio.NewReaderSize(r, 256<<10)
	var (
		long []byte // a line longer than br's buffer, gathered
		rec  Record // one for every line: apply takes a copy
		a    arena  // the messages and blocks of the records, allocated in chunks
	)
	for n := 1; ; n++ {
		if n%ctxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, context.Cause(ctx)
			}
		}
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				if err := ctx.Err(); err != nil {
					return nil, context.Cause(ctx)
				}
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		torn := errors.Is(err, io.EOF)
		if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 {
			if derr := decodeLineIn(trimmed, &rec, &a); derr != nil {
				what := "corrupt line"
				if torn {
					what = "torn last line"
				}
				warnings = append(warnings, fmt.Sprintf("transcript line %d: %s skipped", n, what))
			} else {
				apply(rec)
			}
		}
		if torn {
			return warnings, nil
		}
		if cap(long) > 1<<20 {
			long = nil // do not keep a huge line's buffer for the short ones that follow
		}
	}
}

func (l *Loaded) apply(rec Record) {
	if rec.Row != nil {
		l.LastRow = rec.Row
	}
	switch rec.Type {
	case RecordMeta:
		l.Meta = rec
	case RecordMessage:
		if rec.Message != nil && (rec.Message.Role == llm.RoleUser || rec.Message.Role == llm.RoleAssistant) {
			l.Messages = AppendMessage(l.Messages, *rec.Message)
		}
	case RecordTurn:
		l.Turns, l.LastStatus, l.LastSummary = rec.Turn, rec.Status, rec.Summary
	}
}

// AppendMessage appends m to msgs, merging it into the last message when both have the same
// role. The runtime and transcript revival both build chats with it, so a revived chat is
// the chat the resident runtime had.
func AppendMessage(msgs []llm.Message, m llm.Message) []llm.Message {
	if n := len(msgs); n > 0 && msgs[n-1].Role == m.Role {
		last := msgs[n-1]
		content := make([]llm.Block, 0, len(last.Content)+len(m.Content))
		content = append(append(content, last.Content...), m.Content...)
		msgs[n-1] = llm.Message{Role: m.Role, Content: content}
		return msgs
	}
	return append(msgs, m)
}

// Probe is what a transcript's first records say, read without decoding the whole file.
type Probe struct {
	// Owner is the task id of the meta record (the first line); empty without one.
	Owner string
	// HasMeta: the first line is a meta record.
	HasMeta bool
	// Messages: the transcript holds at least one chat message.
	Messages bool
}

// ProbeTranscript reads a transcript's lines until it has seen its meta record and one
// chat message (corrupt lines are skipped): whether there is a history to revive.
func ProbeTranscript(path string) (Probe, error) {
	f, err := fsx.OpenRegular(path)
	if err != nil {
		return Probe{}, fileError("read", path, err)
	}
	defer f.Close()
	var p Probe
	br := bufio.NewReaderSize(f, 64<<10)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var rec Record
			if json.Unmarshal(line, &rec) == nil {
				switch {
				case n == 1 && rec.Type == RecordMeta:
					p.Owner, p.HasMeta = rec.TaskID, true
				case rec.Type == RecordMessage && rec.Message != nil &&
					(rec.Message.Role == llm.RoleUser || rec.Message.Role == llm.RoleAssistant) && len(rec.Message.Content) > 0:
					p.Messages = true
					return p, nil
				}
			}
		}
		if err == io.EOF {
			return p, nil
		}
		if err != nil {
			return p, fmt.Errorf("read transcript: %w", err)
		}
	}
}

// firstRecord decodes a transcript's first line.
func firstRecord(path string) (Record, error) {
	f, err := fsx.OpenRegular(path)
	if err != nil {
		return Record{}, fileError("read", path, err)
	}
	defer f.Close()
	line, err := bufio.NewReaderSize(f, 64<<10).ReadBytes('\n')
	if len(line) == 0 && err != nil {
		return Record{}, fmt.Errorf("empty transcript: %w", err)
	}
	var rec Record
	if err := json.Unmarshal(line, &rec); err != nil {
		return Record{}, fmt.Errorf("transcript's first line: %w", err)
	}
	return rec, nil
}
