package cassette

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/stoke-cli/stoke/agents/llm"
)

// A request's fingerprint is a hash of its normalised model, system prompt, tools and
// messages (llm.Request.Agent is the key, not part of it). Normalising masks what
// legitimately differs between a recording and its replay: the volatile patterns (the
// durations stoke writes into task notifications), the workspace root (a CI checkout is
// not the developer's), and the values of secrets.
//
// The hash is built from one hash per message, chained, so that an agent whose history
// grows by a message or two per call costs a message or two to fingerprint: the messages
// its previous request shared are recognised (most of their strings are the very same
// memory, which Go compares at once) and their hashes reused.

// fingerprintVersion is mixed into every fingerprint; change it when the normal form does.
const fingerprintVersion = "stoke-cassette/1"

// DefaultVolatile are the patterns a new recording masks before fingerprinting.
func DefaultVolatile() []string { return []string{`<duration_ms>\d+</duration_ms>`} }

// normaliser masks one request's strings.
type normaliser struct {
	volatile []*regexp.Regexp
	replacer *strings.Replacer // secrets and the workspace root; nil: none
}

// cwdMark stands for the workspace root in normalised requests.
const cwdMark = "<cwd>"

// Redacted replaces a secret's value in a cassette.
const Redacted = "[REDACTED]"

func newNormaliser(volatile []string, cwd string, secrets []string) (*normaliser, error) {
	n := &normaliser{}
	for _, v := range volatile {
		re, err := regexp.Compile(v)
		if err != nil {
			return nil, fmt.Errorf("volatile pattern %q: %w", v, err)
		}
		n.volatile = append(n.volatile, re)
	}
	var pairs []string
	for _, s := range secrets {
		if len(s) >= minSecret {
			pairs = append(pairs, s, Redacted)
		}
	}
	if len(cwd) > 1 {
		pairs = append(pairs, cwd, cwdMark)
	}
	if len(pairs) > 0 {
		n.replacer = strings.NewReplacer(pairs...)
	}
	return n, nil
}

// minSecret is the shortest value treated as a secret: replacing a one- or two-letter
// "key" everywhere would mangle the cassette, and could not hide anything.
const minSecret = 4

func (n *normaliser) apply(s string) string {
	if n.replacer != nil {
		s = n.replacer.Replace(s)
	}
	for _, re := range n.volatile {
		if re.MatchString(s) {
			s = re.ReplaceAllLiteralString(s, "<volatile>")
		}
	}
	return s
}

type digest = [sha256.Size]byte

// fieldHash is the hash of one normalised string.
func (n *normaliser) fieldHash(s string) digest { return sha256.Sum256([]byte(n.apply(s))) }

// short is the form of a hash kept in outlines.
func short(d digest) string { return hex.EncodeToString(d[:6]) }

// blockOutline describes a block with its fields in clear (type, ids, names) or hashed
// (text, input, content): enough to name the first field that differs, without keeping
// what the model was sent.
func (n *normaliser) blockOutline(b llm.Block) (outline string, h digest) {
	var fields []string
	switch b.Type {
	case llm.BlockText:
		fh := n.fieldHash(b.Text)
		fields = []string{b.Type, short(fh)}
		h = sha256.Sum256(append([]byte("text\x00"), fh[:]...))
	case llm.BlockToolUse:
		fh := n.fieldHash(canonicalJSON(b.Input))
		fields = []string{b.Type, inClear(b.ID), inClear(b.Name), short(fh)}
		h = sha256.Sum256([]byte("tool_use\x00" + b.ID + "\x00" + b.Name + "\x00" + string(fh[:])))
	case llm.BlockToolResult:
		fh := n.fieldHash(b.Content)
		fields = []string{b.Type, inClear(b.ToolUseID), short(fh)}
		if b.IsError {
			fields = append(fields, "error")
		}
		h = sha256.Sum256([]byte("tool_result\x00" + b.ToolUseID + "\x00" + string(fh[:]) + "\x00" + strconv.FormatBool(b.IsError)))
	default:
		raw, _ := json.Marshal(b)
		fh := n.fieldHash(string(raw))
		fields = []string{inClear(b.Type), short(fh)}
		h = sha256.Sum256(append([]byte("block\x00"), fh[:]...))
	}
	return strings.Join(fields, " "), h
}

// inClear keeps an id or a name readable in an outline, unless it would break the outline
// (it holds a space, or is empty).
func inClear(s string) string {
	if s == "" || strings.ContainsAny(s, " \t\r\n") {
		return "#" + short(sha256.Sum256([]byte(s)))
	}
	return s
}

// canonicalJSON is the normal form of tool-call arguments: object keys sorted, insignificant
// spacing and escapes gone. Arguments that are not JSON are kept as they are.
func canonicalJSON(raw json.RawMessage) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return "{}"
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return string(raw)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return string(raw)
	}
	return string(out)
}

// msgOutline is one message of an outlined request.
type msgOutline struct {
	Role   string
	Blocks []string
}

// reqOutline is a request as the cassette keeps it: hashes and names, in request order.
type reqOutline struct {
	Model    string
	System   string
	Tools    []string
	Messages []msgOutline
}

// hasher fingerprints the successive requests of one agent, reusing the work done for
// the messages its previous request shared. It is not safe for concurrent use.
type hasher struct {
	n *normaliser

	msgs     []llm.Message // the previous request's messages (content copied)
	outlines []msgOutline
	chain    []digest // chain[i]: the hash of messages[0..i]

	system     string
	systemHash digest
	systemSet  bool

	tools       []llm.ToolSpec
	toolsHash   digest
	toolOutline []string
	toolsSet    bool
}

func newHasher(n *normaliser) *hasher { return &hasher{n: n} }

// add fingerprints req. keep is how many leading messages req shares with the previous
// request given to add.
func (h *hasher) add(req *llm.Request) (fp string, keep int) {
	keep = 0
	for keep < len(h.msgs) && keep < len(req.Messages) && sameMessage(&h.msgs[keep], &req.Messages[keep]) {
		keep++
	}
	h.msgs, h.outlines, h.chain = h.msgs[:keep], h.outlines[:keep], h.chain[:keep]
	for _, m := range req.Messages[keep:] {
		o := msgOutline{Role: string(m.Role), Blocks: make([]string, len(m.Content))}
		mh := sha256.New()
		mh.Write([]byte(m.Role))
		for j, b := range m.Content {
			var bh digest
			o.Blocks[j], bh = h.n.blockOutline(b)
			mh.Write([]byte{0})
			mh.Write(bh[:])
		}
		var prev digest
		if len(h.chain) > 0 {
			prev = h.chain[len(h.chain)-1]
		}
		var d digest
		mh.Sum(d[:0])
		h.chain = append(h.chain, sha256.Sum256(append(prev[:], d[:]...)))
		h.outlines = append(h.outlines, o)
		h.msgs = append(h.msgs, llm.Message{Role: m.Role, Content: append([]llm.Block(nil), m.Content...)})
	}
	if !h.systemSet || h.system != req.System {
		h.system, h.systemHash, h.systemSet = req.System, h.n.fieldHash(req.System), true
	}
	if !h.toolsSet || !sameTools(h.tools, req.Tools) {
		h.setTools(req.Tools)
	}
	var last digest
	if len(h.chain) > 0 {
		last = h.chain[len(h.chain)-1]
	}
	sum := sha256.New()
	for _, part := range [][]byte{[]byte(fingerprintVersion), []byte(req.Model), h.systemHash[:], h.toolsHash[:], last[:]} {
		sum.Write(part)
		sum.Write([]byte{0})
	}
	return "sha256:" + hex.EncodeToString(sum.Sum(nil)), keep
}

func (h *hasher) setTools(tools []llm.ToolSpec) {
	h.tools, h.toolsSet = tools, true
	h.toolOutline = make([]string, len(tools))
	sum := sha256.New()
	for i, t := range tools {
		th := h.n.fieldHash(t.Name + "\x00" + t.Description + "\x00" + canonicalJSON(t.Parameters))
		h.toolOutline[i] = inClear(t.Name) + " " + short(th)
		sum.Write(th[:])
	}
	sum.Sum(h.toolsHash[:0])
}

// outline is the latest request given to add, outlined.
func (h *hasher) outline(model string) reqOutline {
	return reqOutline{Model: model, System: short(h.systemHash), Tools: h.toolOutline, Messages: h.outlines}
}

func sameMessage(a, b *llm.Message) bool {
	if a.Role != b.Role || len(a.Content) != len(b.Content) {
		return false
	}
	for i := range a.Content {
		x, y := &a.Content[i], &b.Content[i]
		if x.Type != y.Type || x.Text != y.Text || x.ID != y.ID || x.Name != y.Name ||
			x.ToolUseID != y.ToolUseID || x.Content != y.Content || x.IsError != y.IsError || !bytes.Equal(x.Input, y.Input) {
			return false
		}
	}
	return true
}

func sameTools(a, b []llm.ToolSpec) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Description != b[i].Description || !bytes.Equal(a[i].Parameters, b[i].Parameters) {
			return false
		}
	}
	return true
}

// firstDifference names the first field where now differs from rec, or "" when the
// outlines agree.
func firstDifference(rec, now reqOutline) string {
	if rec.Model != now.Model {
		return fmt.Sprintf("model (recorded %q, now %q)", rec.Model, now.Model)
	}
	if rec.System != now.System {
		return "system"
	}
	for i := 0; i < len(rec.Tools) && i < len(now.Tools); i++ {
		if rec.Tools[i] != now.Tools[i] {
			rn, nn := firstWord(rec.Tools[i]), firstWord(now.Tools[i])
			if rn != nn {
				return fmt.Sprintf("tools[%d].name (recorded %q, now %q)", i, rn, nn)
			}
			return fmt.Sprintf("tools[%d] (%s): description or parameters", i, nn)
		}
	}
	if len(rec.Tools) != len(now.Tools) {
		return fmt.Sprintf("tools (recorded %d, now %d)", len(rec.Tools), len(now.Tools))
	}
	for i := 0; i < len(rec.Messages) && i < len(now.Messages); i++ {
		rm, nm := rec.Messages[i], now.Messages[i]
		if rm.Role != nm.Role {
			return fmt.Sprintf("messages[%d].role (recorded %s, now %s)", i, rm.Role, nm.Role)
		}
		for j := 0; j < len(rm.Blocks) && j < len(nm.Blocks); j++ {
			if f := blockDifference(rm.Blocks[j], nm.Blocks[j]); f != "" {
				return fmt.Sprintf("messages[%d].content[%d]%s", i, j, f)
			}
		}
		if len(rm.Blocks) != len(nm.Blocks) {
			return fmt.Sprintf("messages[%d].content (recorded %d blocks, now %d)", i, len(rm.Blocks), len(nm.Blocks))
		}
	}
	if len(rec.Messages) != len(now.Messages) {
		return fmt.Sprintf("messages (recorded %d, now %d)", len(rec.Messages), len(now.Messages))
	}
	return ""
}

// blockFields names the fields of each block type's outline, in order.
func blockFields() map[string][]string {
	return map[string][]string{
		llm.BlockText:       {"type", "text"},
		llm.BlockToolUse:    {"type", "id", "name", "input"},
		llm.BlockToolResult: {"type", "tool_use_id", "content", "is_error"},
	}
}

// blockDifference compares two block outlines: "" when equal, else ".field" and, for
// fields kept in clear, both values.
func blockDifference(rec, now string) string {
	if rec == now {
		return ""
	}
	rf, nf := strings.Fields(rec), strings.Fields(now)
	if len(rf) == 0 || len(nf) == 0 || rf[0] != nf[0] {
		return fmt.Sprintf(".type (recorded %s, now %s)", firstWord(rec), firstWord(now))
	}
	names := blockFields()[rf[0]]
	for k := 1; k < max(len(rf), len(nf)); k++ {
		var a, b string
		if k < len(rf) {
			a = rf[k]
		}
		if k < len(nf) {
			b = nf[k]
		}
		if a == b {
			continue
		}
		name := "content"
		if k < len(names) {
			name = names[k]
		}
		switch name {
		case "id", "name", "tool_use_id":
			return fmt.Sprintf(".%s (recorded %s, now %s)", name, a, b)
		}
		return "." + name
	}
	return ""
}

func firstWord(s string) string {
	w, _, _ := strings.Cut(s, " ")
	return w
}
