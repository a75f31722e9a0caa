package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/stoke-cli/stoke/agents/internal/fsx"
)

// The layout of a session directory. Nothing outside this package spells these names.
const (
	infoFile         = "session.json"  // the session's own small sidecar (Info)
	parentTranscript = "session.jsonl" // the parent's transcript
	agentsDir        = "agents"        // each task's transcript and sidecar
	transcriptSuffix = ".jsonl"
	sidecarSuffix    = ".meta.json"
	worktreesDir     = "worktrees" // isolated agents' git worktrees
)

// maxKeyLen bounds a project key: file names are limited to 255 bytes on most file
// systems, and a key stays well below that.
const maxKeyLen = 200

// ProjectKey turns a working directory into one path element: every character other than
// a letter, a digit, '.', '_' or '-' becomes '-' (as Claude Code names its project dirs).
// A key that would be longer than 200 bytes keeps its first 183 bytes, then '-' and 16 hex
// digits of the SHA-256 of the cleaned path: stable, and distinct for distinct paths.
func ProjectKey(cwd string) string {
	cwd = filepath.Clean(cwd)
	var b strings.Builder
	for _, r := range cwd {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	key := b.String()
	if len(key) <= maxKeyLen {
		return key
	}
	sum := sha256.Sum256([]byte(cwd))
	return key[:maxKeyLen-17] + "-" + hex.EncodeToString(sum[:8])
}

// Info is session.json, the session's own small sidecar.
type Info struct {
	SessionID string    `json:"session_id"`
	CWD       string    `json:"cwd"`
	Model     string    `json:"model"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// ForkedFrom is the session this one was forked from (--fork-session).
	ForkedFrom string `json:"forked_from,omitempty"`
	// Traceparent is the W3C traceparent of the root span of the session's last traced
	// run (stoke.run), which the root of the run that resumes it links to.
	Traceparent string `json:"traceparent,omitempty"`
}

// ErrUnknownSession: no stored session has that id.
var ErrUnknownSession = errors.New("unknown session")

// ErrBadName: a task id handed to the store is not a safe file name.
var ErrBadName = errors.New("not a safe file name")

// ParseSessionID checks that s is a UUID before any path is built from it.
func ParseSessionID(s string) (string, error) {
	u, err := uuid.Parse(s)
	if err != nil || u.String() != strings.ToLower(s) {
		return "", fmt.Errorf("%w: %q is not a session id (a UUID)", ErrUnknownSession, s)
	}
	return u.String(), nil
}

// Session is one session directory: $STOKE_HOME/projects/<cwd-key>/<session-id>. It owns
// the layout of the directory and every write into it. A Session is a path, a bound on the
// files its writes hold open at once (MaxOpenFiles), and the syncers of its directories:
// its methods are safe for concurrent use, and two Sessions of one directory are
// interchangeable.
//
// What is durable when (synced to stable storage; a crash of the process loses nothing
// written, whatever was synced):
//   - a transcript, up to its last Sync (each turn boundary);
//   - a sidecar's content, with the transcript record of the same turn boundary (Row)
//     that it is rebuilt from if a crash of the machine left it unreadable, and its name
//     with SyncSidecars (each turn boundary);
//   - the parent transcript's name and session.json's with Sync (each parent turn);
//     session.json's content never (WriteInfo: it is rebuilt from the parent's transcript).
type Session struct {
	dir     string
	files   *fsx.Handles
	top     *fsx.DirSync // the session directory
	sidecar *fsx.DirSync // agents/
	fsyncs  *atomic.Int64
	// infoNamed: a WriteInfo of this Session has created session.json's name, which
	// the next Sync makes durable; a replacement after it changes no name that must be.
	infoNamed atomic.Bool
	// failures holds the first failed write of the session's state (OnWriteFailure).
	failures *writeFailures
}

// MaxOpenFiles bounds the files a Session's writes hold open at once, however many agents
// write: transcripts are opened per write, sidecars per replacement.
const MaxOpenFiles = 32

// New returns the session directory of session id (already checked with ParseSessionID)
// of working directory cwd under home. Nothing is created until something is written.
func New(home, cwd, id string) *Session {
	return At(filepath.Join(home, "projects", ProjectKey(cwd), id))
}

// At returns the session stored in directory dir (tests, benchmarks, tools that were given
// a directory).
func At(dir string) *Session {
	n := new(atomic.Int64)
	return &Session{dir: dir, files: fsx.NewHandles(MaxOpenFiles), fsyncs: n, failures: &writeFailures{},
		top: fsx.NewDirSync(dir, n), sidecar: fsx.NewDirSync(filepath.Join(dir, agentsDir), n)}
}

// Fsyncs counts the fsyncs this Session's writes have made so far (for measurements and
// the tests that bound them).
func (s *Session) Fsyncs() int64 { return s.fsyncs.Load() }

// String is the session directory, for messages.
func (s *Session) String() string { return s.dir }

// Exists reports whether the session has been recorded (its session.json exists).
func (s *Session) Exists() bool {
	_, err := os.Stat(filepath.Join(s.dir, infoFile))
	return err == nil
}

// WriteInfo writes session.json atomically (0600; the directory 0700), and syncs nothing:
// everything it holds but ForkedFrom is in the parent's transcript too (its meta record),
// which each turn boundary syncs, and LoadInfo rebuilds it from there when a crash of the
// machine left it missing or unreadable (a fork's ForkedFrom is then lost). Its name
// becomes durable with the next Sync after the first write (a replacement needs none).
func (s *Session) WriteInfo(info Info) error {
	data, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return fmt.Errorf("encode session info: %w", err)
	}
	path := filepath.Join(s.dir, infoFile)
	err = s.files.Do(func() error {
		return fsx.ReplaceFile(path, append(data, '\n'), 0o600, fsx.Unsynced)
	})
	if err != nil {
		return fmt.Errorf("write session info: %w", s.failures.failed(path, err))
	}
	// The first write names the file, and the next Sync makes the name durable. A later
	// one replaces its content, which needs no directory sync: a crash of the machine
	// leaves the earlier session.json or this one, and either holds the session.
	if !s.infoNamed.Swap(true) {
		s.top.Changed()
	}
	return nil
}

// Sync makes the names in the session directory durable (session.json, the parent's
// transcript, agents/): one fsync of the directory when they changed since the last,
// none otherwise.
func (s *Session) Sync() error { return s.failures.failed(s.dir, s.top.Sync()) }

// ReadInfo reads session.json.
func (s *Session) ReadInfo() (Info, error) {
	path := filepath.Join(s.dir, infoFile)
	data, err := fsx.ReadRegular(path)
	if err != nil {
		return Info{}, fmt.Errorf("read session info: %w", fileError("read", path, err))
	}
	var info Info
	if err := json.Unmarshal(data, &info); err != nil {
		return Info{}, fmt.Errorf("decode session info %s: %w", s.dir, err)
	}
	return info, nil
}

// LoadInfo returns the session's Info. When session.json is missing or unreadable but the
// parent's transcript is there, the Info is rebuilt from the transcript and warning says
// so: the id is the directory's name; the working directory, model and creation time come
// from the transcript's meta record (or, for a transcript without one, the working
// directory is cwdHint when its project key names the directory's parent), the update
// time is the transcript's modification time. LoadInfo writes nothing: a run that
// resumes the session writes session.json anew.
func (s *Session) LoadInfo(cwdHint string) (info Info, warning string, err error) {
	info, err = s.ReadInfo()
	if err == nil {
		return info, "", nil
	}
	rebuilt, rerr := s.rebuildInfo(cwdHint)
	if rerr != nil {
		if errors.Is(err, os.ErrNotExist) && errors.Is(rerr, os.ErrNotExist) {
			return Info{}, "", fmt.Errorf("%w: %s holds no session", ErrUnknownSession, s.dir)
		}
		return Info{}, "", err
	}
	return rebuilt, fmt.Sprintf("%s: %v; rebuilt from %s", infoFile, err, parentTranscript), nil
}

// rebuildInfo makes the Info of the session from its parent transcript.
func (s *Session) rebuildInfo(cwdHint string) (Info, error) {
	id, err := ParseSessionID(filepath.Base(s.dir))
	if err != nil {
		return Info{}, err
	}
	path := s.ParentTranscript()
	st, err := os.Stat(path)
	if err != nil {
		return Info{}, err
	}
	first, _ := firstRecord(path) // a corrupt first line leaves the meta's facts unknown
	info := Info{SessionID: id, CreatedAt: first.Time, UpdatedAt: st.ModTime().UTC()}
	if first.Type == RecordMeta {
		info.CWD, info.Model = first.CWD, first.Model
	}
	if info.CWD == "" && cwdHint != "" && ProjectKey(cwdHint) == filepath.Base(filepath.Dir(s.dir)) {
		info.CWD = filepath.Clean(cwdHint)
	}
	if info.CreatedAt.IsZero() {
		info.CreatedAt = info.UpdatedAt
	}
	return info, nil
}

// ParentTranscript is the path of the parent's transcript.
func (s *Session) ParentTranscript() string { return filepath.Join(s.dir, parentTranscript) }

// TaskTranscript is the path of task id's transcript. The id must be a safe name (the
// agents package checks task ids before they reach the store).
func (s *Session) TaskTranscript(id string) string {
	return filepath.Join(s.dir, agentsDir, id+transcriptSuffix)
}

// ForeignTaskTranscript reports whether path, an absolute transcript path that a
// sidecar from another machine holds (sidecars once stored them absolute), names task
// id's own transcript in the directory of session sessionID there; if so it returns the
// path of that transcript relative to a session directory, where an archive brings it.
func ForeignTaskTranscript(path, sessionID, id string) (string, bool) {
	own := filepath.Join(agentsDir, id+transcriptSuffix)
	if !filepath.IsAbs(path) || filepath.Base(filepath.Dir(filepath.Dir(path))) != sessionID ||
		!strings.HasSuffix(path, string(filepath.Separator)+own) {
		return "", false
	}
	return own, true
}

// OpenTranscript opens the transcript at path for appending (see the package function).
// The path must lie inside the session directory (Confine).
// Its writes are bounded by MaxOpenFiles with the session's others.
func (s *Session) OpenTranscript(path string, now func() time.Time) (*Transcript, error) {
	if err := s.Confine(path); err != nil {
		return nil, err
	}
	changed := s.top.Changed
	if filepath.Dir(path) == filepath.Join(s.dir, agentsDir) {
		changed = s.sidecar.Changed
	}
	tr, err := openTranscript(path, now, s.files, changed)
	if err != nil {
		return nil, s.failures.failed(path, err)
	}
	tr.fsyncs, tr.failures = s.fsyncs, s.failures
	return tr, nil
}

// ReadTranscript reads the transcript at path (LoadTranscript without a context).
func (s *Session) ReadTranscript(path string) (*Loaded, error) {
	return s.LoadTranscript(context.Background(), path)
}

// LoadTranscript reads the transcript at path (see the package function), stopping when
// ctx is done. The path must lie inside the session directory (Confine).
func (s *Session) LoadTranscript(ctx context.Context, path string) (*Loaded, error) {
	if err := s.Confine(path); err != nil {
		return nil, err
	}
	var l *Loaded
	err := s.files.Do(func() (err error) {
		l, err = LoadTranscript(ctx, path)
		return err
	})
	return l, err
}

// ReadRecords reads every record of the transcript at path (see the package function).
// The path must lie inside the session directory (Confine).
func (s *Session) ReadRecords(path string) (recs []Record, warnings []string, err error) {
	if err := s.Confine(path); err != nil {
		return nil, nil, err
	}
	err = s.files.Do(func() (err error) {
		recs, warnings, err = ReadRecords(path)
		return err
	})
	return recs, warnings, err
}

// OpenParent opens the parent's transcript for appending. A new transcript starts with a
// meta record naming the session, its working directory and model, from which
// session.json can be rebuilt (LoadInfo).
func (s *Session) OpenParent(info Info, now func() time.Time) (*Transcript, error) {
	tr, err := s.OpenTranscript(s.ParentTranscript(), now)
	if err != nil {
		return nil, err
	}
	if tr.empty() {
		meta := Record{Type: RecordMeta, SessionID: info.SessionID, CWD: info.CWD, Model: info.Model}
		if err := tr.Write(meta); err != nil {
			tr.Close()
			return nil, err
		}
	}
	return tr, nil
}

// ErrOutside: a path stored in a session (a sidecar's transcript) does not lie inside
// that session's directory, or is a symbolic link (an *OutsideError says which).
var ErrOutside = errors.New("outside the session directory")

// OutsideError is the error of a path that Confine refuses.
type OutsideError struct {
	Path, Dir string
	Symlink   bool // the path is a symbolic link (else it lies outside Dir)
}

func (e *OutsideError) Error() string {
	if e.Symlink {
		return e.Path + " is a symbolic link"
	}
	return e.Path + " lies outside " + e.Dir
}

// Is makes errors.Is(err, ErrOutside) hold.
func (e *OutsideError) Is(target error) bool { return target == ErrOutside }

// Confine checks that path lies inside the session directory, lexically, and is not a
// symbolic link: a session's files never reach another session's or anything else.
func (s *Session) Confine(path string) error {
	if !filepath.IsAbs(path) {
		path = filepath.Join(s.dir, path)
	}
	path = filepath.Clean(path)
	rel, err := filepath.Rel(s.dir, path)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return &OutsideError{Path: path, Dir: s.dir}
	}
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return &OutsideError{Path: path, Dir: s.dir, Symlink: true}
	}
	return nil
}

// sidecarPath is the path of task id's sidecar, once id is checked.
func (s *Session) sidecarPath(id string) (string, error) {
	if !safeName(id) {
		return "", fmt.Errorf("%w: %q", ErrBadName, id)
	}
	return filepath.Join(s.dir, agentsDir, id+sidecarSuffix), nil
}

// WriteSidecar replaces task id's sidecar with data atomically (a temporary file renamed
// over it), mode 0600, without syncing: the caller has made the same row durable in the
// task's transcript (Record.Row) and makes the new name durable with SyncSidecars, so a
// turn boundary costs two fsyncs, the transcript's and the directory's.
func (s *Session) WriteSidecar(id string, data []byte) error {
	path, err := s.sidecarPath(id)
	if err != nil {
		return fmt.Errorf("write sidecar: %w", err)
	}
	err = s.files.Do(func() error { return fsx.ReplaceFile(path, data, 0o600, fsx.Unsynced) })
	if err != nil {
		return fmt.Errorf("write sidecar %s: %w", id, s.failures.failed(path, err))
	}
	s.sidecar.Changed()
	return nil
}

// SyncSidecars makes the names of the sidecars (and transcripts) written since the last
// call durable: one fsync of agents/, shared by the tasks that call it at once.
func (s *Session) SyncSidecars() error {
	return s.failures.failed(filepath.Join(s.dir, agentsDir), s.sidecar.Sync())
}

// ReadSidecar returns the content of task id's sidecar.
func (s *Session) ReadSidecar(id string) ([]byte, error) {
	path, err := s.sidecarPath(id)
	if err != nil {
		return nil, fmt.Errorf("read sidecar: %w", err)
	}
	var data []byte
	err = s.files.Do(func() (err error) {
		data, err = fsx.ReadRegular(path)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read sidecar: %w", fileError("read", path, err))
	}
	return data, nil
}

// SidecarNames returns the names the sidecars of the session are stored under, sorted:
// each is a task id if the file was written by stoke (callers check), else whatever stands
// before the suffix.
func (s *Session) SidecarNames() ([]string, error) {
	paths, err := filepath.Glob(filepath.Join(s.dir, agentsDir, "*"+sidecarSuffix))
	if err != nil {
		return nil, fmt.Errorf("list sidecars: %w", err)
	}
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		out = append(out, strings.TrimSuffix(filepath.Base(p), sidecarSuffix))
	}
	sort.Strings(out)
	return out, nil
}

// Rel returns path relative to the session directory when it lies inside it (so that a
// session directory stays self-contained), else path unchanged.
func (s *Session) Rel(path string) string {
	if rel, err := filepath.Rel(s.dir, path); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return rel
	}
	return path
}

// Abs resolves a path stored relative to the session directory.
func (s *Session) Abs(path string) string {
	if path == "" || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(s.dir, path)
}

// WorktreeDir creates (0700) and returns the directory isolated agents' worktrees are made in.
func (s *Session) WorktreeDir() (string, error) {
	return makeDir(filepath.Join(s.dir, worktreesDir))
}

// TempWorktreeDir creates and returns the directory for isolated agents' worktrees of a run
// that stores nothing.
func TempWorktreeDir() (string, error) {
	return makeDir(filepath.Join(os.TempDir(), "stoke-worktrees"))
}

func makeDir(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create worktree dir: %w", err)
	}
	return dir, nil
}

// safeName reports whether name can be a file name in the session directory: letters,
// digits, '-' and '_', at most 64 of them.
func safeName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for _, r := range name {
		if (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') && r != '-' && r != '_' {
			return false
		}
	}
	return true
}

// Stored is a session found under a home: its directory and its session.json.
type Stored struct {
	*Session
	Info Info
	// Warning, when set, says that session.json was unreadable and Info was rebuilt from
	// the parent's transcript (LoadInfo).
	Warning string
}

// In reports whether the session belongs to working directory cwd: its Info names cwd,
// or names none (rebuilt from an old transcript) and it is stored under cwd's project.
func (st Stored) In(cwd string) bool {
	if st.Info.CWD != "" {
		return filepath.Clean(st.Info.CWD) == filepath.Clean(cwd)
	}
	return filepath.Base(filepath.Dir(st.dir)) == ProjectKey(cwd)
}

// List returns every stored session under home, newest first. Directories that hold no
// readable session are skipped.
func List(home string) ([]Stored, error) {
	dirs, err := filepath.Glob(filepath.Join(home, "projects", "*", "*"))
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	out := make([]Stored, 0, len(dirs))
	for _, dir := range dirs {
		if _, err := ParseSessionID(filepath.Base(dir)); err != nil {
			continue
		}
		s := At(dir)
		info, warning, err := s.LoadInfo("")
		if err != nil {
			continue
		}
		out = append(out, Stored{Session: s, Info: info, Warning: warning})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Info.UpdatedAt.After(out[j].Info.UpdatedAt) })
	return out, nil
}

// Find returns the stored session id, looked up in cwd's project first.
func Find(home, cwd, id string) (Stored, error) {
	id, err := ParseSessionID(id)
	if err != nil {
		return Stored{}, err
	}
	dirs := []string{New(home, cwd, id).dir}
	others, _ := filepath.Glob(filepath.Join(home, "projects", "*", id))
	for _, d := range others {
		if d != dirs[0] {
			dirs = append(dirs, d)
		}
	}
	var firstErr error
	for _, dir := range dirs {
		s := At(dir)
		info, warning, err := s.LoadInfo(cwd)
		if err == nil {
			return Stored{Session: s, Info: info, Warning: warning}, nil
		}
		if firstErr == nil && !errors.Is(err, ErrUnknownSession) && !errors.Is(err, os.ErrNotExist) {
			firstErr = err
		}
	}
	if firstErr != nil {
		return Stored{}, firstErr
	}
	return Stored{}, fmt.Errorf("%w: no stored session %s under %s", ErrUnknownSession, id, home)
}

// Latest returns the most recently updated session of cwd.
func Latest(home, cwd string) (Stored, error) {
	all, err := List(home)
	if err != nil {
		return Stored{}, err
	}
	for _, s := range all {
		if s.In(cwd) {
			return s, nil
		}
	}
	return Stored{}, fmt.Errorf("%w: no stored session for %s", ErrUnknownSession, cwd)
}

// Taken reports whether a session of that id is stored anywhere under home.
func Taken(home, id string) bool {
	dirs, _ := filepath.Glob(filepath.Join(home, "projects", "*", id))
	for _, d := range dirs {
		if _, _, err := At(d).LoadInfo(""); err == nil {
			return true
		}
	}
	return false
}
