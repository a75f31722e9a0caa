package cassette

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/scripted"
)

// Version is the cassette format this package writes and reads.
const Version = 1

// File is a cassette. It is a scripted scenario (name, model, rules: see
// scenarios/README.md) with one rule per model call, in the order the answers ended, and
// two additions the scripted provider ignores: the cassette header and each rule's call.
type File struct {
	Name     string  `yaml:"name,omitempty"`
	Model    string  `yaml:"model,omitempty"`
	Cassette Header  `yaml:"cassette"`
	Rules    []Entry `yaml:"rules"`
}

// Header describes the recording.
type Header struct {
	Version    int    `yaml:"version"`
	Provider   string `yaml:"provider,omitempty"`
	Stoke      string `yaml:"stoke,omitempty"`
	RecordedAt string `yaml:"recorded_at,omitempty"`
	// Seed (hex) and each launch's key give the run's task ids, when recorded and when
	// replayed.
	Seed string `yaml:"seed"`
	// Volatile are the regular expressions masked before requests are fingerprinted.
	Volatile []string `yaml:"volatile,omitempty"`
}

// Entry is one recorded model call: a scripted rule (agent, when.step, once, a literal
// reply) and the call's metadata.
type Entry struct {
	Agent string `yaml:"agent"`
	When  struct {
		Step int `yaml:"step"`
	} `yaml:"when,flow"`
	Once  bool  `yaml:"once"`
	Call  Call  `yaml:"call"`
	Reply Reply `yaml:"reply"`
}

// Call is what the cassette knows of a call besides its answer.
type Call struct {
	// Task is the launch of the subagent that made the call ("parent/1.2": the parent's
	// call 1, tool call 2), or "id/<task-id>" for a task the run restored; empty for the
	// parent. With Entry.Agent it is the agent's identity.
	Task string `yaml:"task,omitempty"`
	// Index counts the agent's calls, from 1.
	Index int `yaml:"index"`
	// Seq numbers the run's requests in the order they were sent, from 1.
	Seq int `yaml:"seq"`
	// After is how many requests the run had sent when this answer ended; Ended lists
	// the calls (by Seq) whose turns ended since the previous answer. A strict replay
	// answers in the recorded order and waits for both.
	After int   `yaml:"after"`
	Ended []int `yaml:"ended,omitempty,flow"`
	// Fingerprint is the hash of the normalised request.
	Fingerprint string `yaml:"fingerprint"`
	// Model, System and Tools outline the request (System and Tools only when they
	// changed since the agent's previous call); Keep is how many messages it shares with
	// that call, and Messages outlines the rest. Outlines hold hashes and names, never
	// what the model was sent.
	Model    string     `yaml:"model,omitempty"`
	System   string     `yaml:"system,omitempty"`
	Tools    *[]string  `yaml:"tools,omitempty,flow"`
	Keep     int        `yaml:"keep,omitempty"`
	Messages []MsgLines `yaml:"messages,omitempty"`
	// Duration is the time the answer took.
	Duration time.Duration `yaml:"duration,omitempty"`
	// MessageID and ResponseModel are the provider's message id and model.
	MessageID     string `yaml:"message_id,omitempty"`
	ResponseModel string `yaml:"response_model,omitempty"`
	// ErrorProvider is set when the call failed with an *llm.ProviderError.
	ErrorProvider string `yaml:"error_provider,omitempty"`
	// Cancelled: the call ended because its context did (the replay waits for the same).
	Cancelled bool `yaml:"cancelled,omitempty"`
}

// MsgLines outlines one message: its role and one line per block.
type MsgLines struct {
	Role   string
	Blocks []string
}

// MarshalYAML writes {role: [block, ...]}.
func (m MsgLines) MarshalYAML() (any, error) {
	seq := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
	for _, b := range m.Blocks {
		seq.Content = append(seq.Content, strNode(b))
	}
	return &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{strNode(m.Role), seq}}, nil
}

// UnmarshalYAML reads {role: [block, ...]}.
func (m *MsgLines) UnmarshalYAML(n *yaml.Node) error {
	var v map[string][]string
	if err := n.Decode(&v); err != nil {
		return err
	}
	if len(v) != 1 {
		return fmt.Errorf("line %d: a message outline is {role: [blocks]}", n.Line)
	}
	for role, blocks := range v {
		m.Role, m.Blocks = role, blocks
	}
	return nil
}

// Reply is the recorded answer, in the keys of the scripted provider's replies.
type Reply struct {
	Literal     bool            `yaml:"literal"`
	Text        string          `yaml:"text,omitempty"`
	ToolCalls   []ToolCall      `yaml:"tool_calls,omitempty"`
	Usage       *scripted.Usage `yaml:"usage,omitempty"`
	StopReason  string          `yaml:"stop_reason,omitempty"`
	Error       string          `yaml:"error,omitempty"`
	ErrorStatus int             `yaml:"error_status,omitempty"`
}

// ToolCall is one recorded tool call; Input holds the arguments in the order the model
// wrote them.
type ToolCall struct {
	ID    string    `yaml:"id,omitempty"`
	Name  string    `yaml:"name"`
	Input yaml.Node `yaml:"input"`
}

// identity names an agent of the run: Agent is "parent" or the subagent type, Task its
// launch (Call.Task).
type identity struct{ agent, task string }

func (id identity) String() string {
	if id.task == "" {
		return id.agent
	}
	return id.agent + "@" + id.task
}

func (e *Entry) identity() identity { return identity{e.Agent, e.Call.Task} }

// endMarker starts the comment that ends a finished recording. A cassette without it is
// the prefix a recording left when its process died (FILE.partial).
const endMarker = "# end of recording"

// Load reads a cassette. For a partial one (no end marker: a recording whose process
// died), the entries written completely are kept and partial is true. Errors wrap
// llm.ErrBadConfig and name the file.
func Load(path string) (f *File, partial bool, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, false, fmt.Errorf("%w: read cassette: %w", llm.ErrBadConfig, err)
	}
	return Parse(path, data)
}

// Parse decodes and checks a cassette; name is used in errors.
func Parse(name string, data []byte) (*File, bool, error) {
	partial := !bytes.Contains(data, []byte("\n"+endMarker))
	if partial {
		// Every entry ends with an empty line (lines inside entries are indented), so
		// an entry cut short is the text after the last one, or after "rules:".
		end := bytes.LastIndex(data, []byte("\n\n")) + 2
		if start := bytes.Index(data, []byte("\nrules:\n")) + len("\nrules:\n"); start > end {
			end = start
		}
		if end > 1 && end <= len(data) {
			data = data[:end]
		}
	}
	f, err := decode(data)
	if err != nil {
		return nil, false, fmt.Errorf("%w: cassette %s: %w", llm.ErrBadConfig, name, err)
	}
	if err := f.check(); err != nil {
		return nil, false, fmt.Errorf("%w: cassette %s: %w", llm.ErrBadConfig, name, err)
	}
	return f, partial, nil
}

func decode(data []byte) (*File, error) {
	var f File
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty file")
		}
		var te *yaml.TypeError
		if errors.As(err, &te) {
			return nil, fmt.Errorf("%s", te.Errors[0])
		}
		return nil, err
	}
	return &f, nil
}

// check validates what a replay relies on.
func (f *File) check() error {
	h := f.Cassette
	if h.Version != Version {
		return fmt.Errorf("cassette.version %d: this stoke reads version %d (re-record it)", h.Version, Version)
	}
	if seed, err := hex.DecodeString(h.Seed); err != nil || len(seed) < 8 {
		return errors.New("cassette.seed: want at least 16 hex digits")
	}
	if _, err := newNormaliser(h.Volatile, "", nil); err != nil {
		return fmt.Errorf("cassette.volatile: %w", err)
	}
	seen := make(map[identity]map[int]bool)
	seqs := make(map[int]bool)
	for i := range f.Rules {
		e := &f.Rules[i]
		bad := func(format string, args ...any) error {
			return fmt.Errorf("rules[%d] (agent %s, call %d): %s", i, e.identity(), e.Call.Index, fmt.Sprintf(format, args...))
		}
		switch {
		case e.Agent == "":
			return bad("no agent")
		case e.Call.Index < 1:
			return bad("call.index must be 1 or more")
		case e.Call.Seq < 1 || seqs[e.Call.Seq]:
			return bad("call.seq must be unique and 1 or more")
		case e.Call.Fingerprint == "":
			return bad("no call.fingerprint")
		}
		seqs[e.Call.Seq] = true
		id := e.identity()
		if seen[id] == nil {
			seen[id] = make(map[int]bool)
		}
		if seen[id][e.Call.Index] {
			return bad("recorded twice")
		}
		seen[id][e.Call.Index] = true
		for j, tc := range e.Reply.ToolCalls {
			if tc.Name == "" {
				return bad("reply.tool_calls[%d]: no name", j)
			}
			if _, err := nodeToJSON(&e.Reply.ToolCalls[j].Input); err != nil {
				return bad("reply.tool_calls[%d].input: %v", j, err)
			}
		}
	}
	return nil
}

// encodeYAML writes v with a two-space indent.
func encodeYAML(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// encodeEntry is e as an item of the top-level rules sequence, ending with an empty line.
func encodeEntry(e *Entry) ([]byte, error) {
	data, err := encodeYAML([]*Entry{e})
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	for line := range bytes.Lines(data) {
		b.WriteString("  ")
		b.Write(line)
	}
	b.WriteByte('\n') // the empty line that ends an entry
	return b.Bytes(), nil
}
