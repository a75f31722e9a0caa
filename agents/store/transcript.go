package store

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

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
	// meta
	TaskID       string `json:"task_id,omitempty"`
	SubagentType string `json:"subagent_type,omitempty"`
	System       string `json:"system,omitempty"`
	// message and turn
	Turn    int          `json:"turn,omitempty"`
	Message *llm.Message `json:"message,omitempty"`
	// turn
	Status  string `json:"status,omitempty"`
	Summary string `json:"summary,omitempty"`
}

// Transcript appends records to one JSONL file. Each record is one write of one whole line;
// Sync flushes to disk at turn boundaries. Safe for concurrent use.
type Transcript struct {
	mu   sync.Mutex
	f    *os.File
	path string
	turn int
	now  func() time.Time
	err  error
}

// OpenTranscript opens (creating, mode 0600, and its directory 0700) the transcript at path
// for appending.
func OpenTranscript(path string, now func() time.Time) (*Transcript, error) {
	if now == nil {
		now = time.Now
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create transcript dir: %w", err)
	}
	if err := trimTornTail(path); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open transcript: %w", err)
	}
	return &Transcript{f: f, path: path, now: now}, nil
}

// trimTornTail cuts a torn last line (a write cut by a crash) off an existing transcript,
// so that the next record starts on a line of its own. The torn record was never complete,
// so nothing that was acknowledged is lost.
func trimTornTail(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open transcript: %w", err)
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

// Path is the file's path.
func (t *Transcript) Path() string { return t.path }

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
	if _, err := t.f.Write(line); err != nil {
		t.err = fmt.Errorf("write transcript: %w", err)
		return t.err
	}
	return nil
}

// Append implements ChatStore.
func (t *Transcript) Append(m llm.Message) error {
	t.mu.Lock()
	turn := t.turn
	t.mu.Unlock()
	return t.Write(Record{Type: RecordMessage, Turn: turn, Message: &m})
}

// Sync implements ChatStore: it flushes the file to stable storage.
func (t *Transcript) Sync() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil {
		return t.err
	}
	if err := t.f.Sync(); err != nil {
		return fmt.Errorf("sync transcript: %w", err)
	}
	return nil
}

// Close syncs and closes the file. Idempotent.
func (t *Transcript) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.f == nil {
		return nil
	}
	err := t.f.Sync()
	if cerr := t.f.Close(); err == nil {
		err = cerr
	}
	t.f = nil
	if t.err == nil {
		t.err = errors.New("transcript closed")
	}
	return err
}

// Loaded is what a transcript file holds.
type Loaded struct {
	Meta Record
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

// ReadTranscript reads a transcript. A torn or corrupt line is skipped with a warning and
// never fails the read; only an unreadable file is an error.
func ReadTranscript(path string) (*Loaded, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("open transcript: %w", err)
	}
	return decodeTranscript(data), nil
}

// DecodeTranscript reads transcript records from r (see ReadTranscript). The whole
// input is read at once and its lines decoded without reflection (decodeLine).
func DecodeTranscript(r io.Reader) (*Loaded, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read transcript: %w", err)
	}
	return decodeTranscript(data), nil
}

func decodeTranscript(data []byte) *Loaded {
	out := &Loaded{}
	for n := 1; len(data) > 0; n++ {
		line := data
		torn := true
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data, torn = data[:i], data[i+1:], false
		} else {
			data = nil
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var rec Record
		if err := decodeLine(line, &rec); err != nil {
			what := "corrupt line"
			if torn {
				what = "torn last line"
			}
			out.Warnings = append(out.Warnings, fmt.Sprintf("transcript line %d: %s skipped", n, what))
			continue
		}
		out.apply(rec)
	}
	return out
}

func (l *Loaded) apply(rec Record) {
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

// RepairDangling appends error tool results for tool_use blocks of the last assistant
// message that have no result (a turn cut by a crash or a cancel), so the chat is valid to
// send again.
func RepairDangling(msgs []llm.Message) []llm.Message {
	n := len(msgs)
	if n == 0 || msgs[n-1].Role != llm.RoleAssistant {
		return msgs
	}
	uses := msgs[n-1].ToolUses()
	if len(uses) == 0 {
		return msgs
	}
	res := llm.Message{Role: llm.RoleUser}
	for _, u := range uses {
		res.Content = append(res.Content, llm.Block{Type: llm.BlockToolResult, ToolUseID: u.ID, Content: "interrupted: the tool call did not finish", IsError: true})
	}
	return append(msgs, res)
}

// TranscriptOwner reads the task id of a transcript's meta record (its first line).
func TranscriptOwner(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	line, err := bufio.NewReaderSize(f, 4096).ReadBytes('\n')
	if len(line) == 0 && err != nil {
		return "", fmt.Errorf("empty transcript: %w", err)
	}
	var rec Record
	if err := json.Unmarshal(line, &rec); err != nil || rec.Type != RecordMeta {
		return "", fmt.Errorf("transcript has no meta record")
	}
	return rec.TaskID, nil
}
