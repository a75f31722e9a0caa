package store

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/stoke-cli/stoke/agents/llm"
)

// decodeLine decodes one transcript line into rec. It is what json.Unmarshal(line, rec)
// does, without reflection: revival reads every line of a transcript, and a
// 10,000-message history is decoded in a few milliseconds instead of tens.
//
// The fast path accepts only the shapes a Transcript writes (an object whose keys are
// spelled exactly, each once; strings in valid UTF-8; integer turns). Anything else — a
// key differing only in case, a duplicate key, a \u escape or invalid UTF-8 in a string, a
// value of an unexpected type, malformed JSON — falls back to json.Unmarshal, so a line
// decodes to exactly what encoding/json gives, or fails as it fails (FuzzDecodeLine).
func decodeLine(line []byte, rec *Record) error {
	d := lineDecoder{data: line}
	var r Record
	if d.record(&r) && d.end() {
		*rec = r
		return nil
	}
	*rec = Record{}
	return json.Unmarshal(line, rec)
}

// lineDecoder is a strict JSON scanner over one line; every method reports false when the
// input is not what the fast path takes (the caller then falls back to encoding/json).
type lineDecoder struct {
	data []byte
	pos  int
}

func (d *lineDecoder) ws() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// end reports whether only white space is left.
func (d *lineDecoder) end() bool {
	d.ws()
	return d.pos == len(d.data)
}

// consume skips white space and the byte c.
func (d *lineDecoder) consume(c byte) bool {
	d.ws()
	if d.pos < len(d.data) && d.data[d.pos] == c {
		d.pos++
		return true
	}
	return false
}

// peek skips white space and returns the next byte (0 at the end).
func (d *lineDecoder) peek() byte {
	d.ws()
	if d.pos < len(d.data) {
		return d.data[d.pos]
	}
	return 0
}

// null consumes a null literal if one comes next.
func (d *lineDecoder) null() bool {
	if d.peek() == 'n' && bytes.HasPrefix(d.data[d.pos:], []byte("null")) {
		d.pos += 4
		return true
	}
	return false
}

// object decodes an object, calling field for each key; field decodes the value and
// reports false to give up. Keys must be distinct and must not match a known key other
// than exactly (known reports whether a key is one field handles).
func (d *lineDecoder) object(known []string, field func(i int) bool) bool {
	if !d.consume('{') {
		return false
	}
	if d.consume('}') {
		return true
	}
	var seen uint64
	for {
		key, ok := d.key()
		if !ok || !d.consume(':') {
			return false
		}
		i := indexKey(known, key)
		switch {
		case i >= 0:
			if seen&(1<<i) != 0 {
				return false // a duplicate: encoding/json's merge rules apply
			}
			seen |= 1 << i
			if !field(i) {
				return false
			}
		case foldsToKnown(known, key):
			return false // encoding/json matches keys case-insensitively
		default:
			if !d.skip() {
				return false
			}
		}
		if d.consume(',') {
			continue
		}
		return d.consume('}')
	}
}

func indexKey(known []string, key []byte) int {
	for i, k := range known {
		if k == string(key) {
			return i
		}
	}
	return -1
}

func foldsToKnown(known []string, key []byte) bool {
	for _, k := range known {
		if bytes.EqualFold([]byte(k), key) {
			return true
		}
	}
	return false
}

// key reads an object key: a string without escapes.
func (d *lineDecoder) key() ([]byte, bool) {
	raw, ok := d.rawString()
	if !ok || bytes.IndexByte(raw, '\\') >= 0 {
		return nil, false
	}
	return raw, true
}

// rawString reads a string and returns its bytes between the quotes, escapes untouched.
// It rejects control characters and invalid UTF-8.
func (d *lineDecoder) rawString() ([]byte, bool) {
	if !d.consume('"') {
		return nil, false
	}
	start := d.pos
	ascii := true
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		switch {
		case c == '"':
			raw := d.data[start:d.pos]
			d.pos++
			if !ascii && !utf8.Valid(raw) {
				return nil, false
			}
			return raw, true
		case c == '\\':
			if !d.escape() {
				return nil, false
			}
		case c < 0x20:
			return nil, false
		default:
			if c >= utf8.RuneSelf {
				ascii = false
			}
			d.pos++
		}
	}
	return nil, false
}

// escape steps over one escape sequence (d.pos at its backslash), checking it.
func (d *lineDecoder) escape() bool {
	if d.pos+1 >= len(d.data) {
		return false
	}
	switch d.data[d.pos+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		d.pos += 2
		return true
	case 'u':
		if d.pos+6 > len(d.data) {
			return false
		}
		for _, h := range d.data[d.pos+2 : d.pos+6] {
			if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
				return false
			}
		}
		d.pos += 6
		return true
	}
	return false
}

// str decodes a string value (or null, which leaves *dst unchanged as encoding/json does).
func (d *lineDecoder) str(dst *string) bool {
	if d.null() {
		return true
	}
	raw, ok := d.rawString()
	if !ok {
		return false
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		*dst = intern(raw)
		return true
	}
	s, ok := unescape(raw)
	*dst = s
	return ok
}

// intern returns raw as a string, without allocating for the values every record repeats
// (record and block types, roles, turn statuses).
func intern(raw []byte) string {
	switch string(raw) {
	case RecordMessage:
		return RecordMessage
	case string(llm.RoleUser):
		return string(llm.RoleUser)
	case string(llm.RoleAssistant):
		return string(llm.RoleAssistant)
	case llm.BlockText:
		return llm.BlockText
	case llm.BlockToolUse:
		return llm.BlockToolUse
	case llm.BlockToolResult:
		return llm.BlockToolResult
	case RecordTurn:
		return RecordTurn
	case RecordMeta:
		return RecordMeta
	}
	return string(raw)
}

// unescape resolves the escapes a Transcript writes; a \u escape gives up (surrogates
// and their replacement are encoding/json's to decide).
func unescape(raw []byte) (string, bool) {
	var b strings.Builder
	b.Grow(len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i == len(raw) {
			return "", false
		}
		switch raw[i] {
		case '"', '\\', '/':
			b.WriteByte(raw[i])
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		default:
			return "", false
		}
	}
	return b.String(), true
}

// integer decodes an int (or null): digits only, as encoding/json takes into an int.
func (d *lineDecoder) integer(dst *int) bool {
	if d.null() {
		return true
	}
	start := d.pos
	if d.pos < len(d.data) && d.data[d.pos] == '-' {
		d.pos++
	}
	digits := d.pos
	for d.pos < len(d.data) && d.data[d.pos] >= '0' && d.data[d.pos] <= '9' {
		d.pos++
	}
	n := d.pos - digits
	if n == 0 || n > 18 || (n > 1 && d.data[digits] == '0') {
		return false
	}
	if d.pos < len(d.data) {
		switch d.data[d.pos] {
		case '.', 'e', 'E':
			return false
		}
	}
	v, err := strconv.Atoi(string(d.data[start:d.pos]))
	*dst = v
	return err == nil
}

// boolean decodes true, false or null.
func (d *lineDecoder) boolean(dst *bool) bool {
	if d.null() {
		return true
	}
	rest := d.data[d.pos:]
	switch {
	case bytes.HasPrefix(rest, []byte("true")):
		*dst, d.pos = true, d.pos+4
	case bytes.HasPrefix(rest, []byte("false")):
		*dst, d.pos = false, d.pos+5
	default:
		return false
	}
	return true
}

// raw returns the bytes of the next value, checked to be JSON.
func (d *lineDecoder) raw() ([]byte, bool) {
	d.ws()
	start := d.pos
	if !d.skip() {
		return nil, false
	}
	return d.data[start:d.pos], true
}

// skip steps over one value, checking its syntax.
func (d *lineDecoder) skip() bool {
	switch c := d.peek(); {
	case c == '{':
		d.pos++
		if d.consume('}') {
			return true
		}
		for {
			if _, ok := d.rawString(); !ok || !d.consume(':') || !d.skip() {
				return false
			}
			if d.consume(',') {
				continue
			}
			return d.consume('}')
		}
	case c == '[':
		d.pos++
		if d.consume(']') {
			return true
		}
		for {
			if !d.skip() {
				return false
			}
			if d.consume(',') {
				continue
			}
			return d.consume(']')
		}
	case c == '"':
		_, ok := d.rawString()
		return ok
	case c == 't':
		return d.literal("true")
	case c == 'f':
		return d.literal("false")
	case c == 'n':
		return d.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number()
	}
	return false
}

func (d *lineDecoder) literal(s string) bool {
	if !bytes.HasPrefix(d.data[d.pos:], []byte(s)) {
		return false
	}
	d.pos += len(s)
	return true
}

// number steps over a JSON number.
func (d *lineDecoder) number() bool {
	digits := func() int {
		n := 0
		for d.pos < len(d.data) && d.data[d.pos] >= '0' && d.data[d.pos] <= '9' {
			d.pos++
			n++
		}
		return n
	}
	if d.data[d.pos] == '-' {
		d.pos++
	}
	first := d.pos
	n := digits()
	if n == 0 || (n > 1 && d.data[first] == '0') {
		return false
	}
	if d.pos < len(d.data) && d.data[d.pos] == '.' {
		d.pos++
		if digits() == 0 {
			return false
		}
	}
	if d.pos < len(d.data) && (d.data[d.pos] == 'e' || d.data[d.pos] == 'E') {
		d.pos++
		if d.pos < len(d.data) && (d.data[d.pos] == '+' || d.data[d.pos] == '-') {
			d.pos++
		}
		if digits() == 0 {
			return false
		}
	}
	return true
}

// record decodes a Record object.
func (d *lineDecoder) record(r *Record) bool {
	keys := [...]string{"type", "ts", "task_id", "subagent_type", "system", "turn", "message", "status", "summary", "row",
		"session_id", "cwd", "model", "start", "usage", "calls", "continuation", "queued"}
	return d.object(keys[:], func(i int) bool {
		switch keys[i] {
		case "type":
			return d.str(&r.Type)
		case "ts":
			return d.time(&r.Time)
		case "task_id":
			return d.str(&r.TaskID)
		case "subagent_type":
			return d.str(&r.SubagentType)
		case "system":
			return d.str(&r.System)
		case "session_id":
			return d.str(&r.SessionID)
		case "cwd":
			return d.str(&r.CWD)
		case "model":
			return d.str(&r.Model)
		case "start":
			return d.time(&r.Start)
		case "usage":
			if d.null() {
				r.Usage = nil
				return true
			}
			r.Usage = new(llm.Usage)
			return d.usage(r.Usage)
		case "calls":
			return d.calls(&r.Calls)
		case "continuation":
			return d.str(&r.Continuation)
		case "queued":
			return d.time(&r.Queued)
		case "turn":
			return d.integer(&r.Turn)
		case "message":
			if d.null() {
				r.Message = nil
				return true
			}
			r.Message = new(llm.Message)
			return d.message(r.Message)
		case "status":
			return d.str(&r.Status)
		case "summary":
			return d.str(&r.Summary)
		default: // row
			raw, ok := d.raw()
			if ok {
				r.Row = append(json.RawMessage(nil), raw...)
			}
			return ok
		}
	})
}

func (d *lineDecoder) message(m *llm.Message) bool {
	keys := [...]string{"role", "content"}
	return d.object(keys[:], func(i int) bool {
		if i == 0 { // role
			var role string
			ok := d.str(&role)
			m.Role = llm.Role(role)
			return ok
		}
		return d.blocks(&m.Content)
	})
}

// blocks decodes a content array (null leaves it nil).
func (d *lineDecoder) blocks(dst *[]llm.Block) bool {
	if d.null() {
		*dst = nil
		return true
	}
	if !d.consume('[') {
		return false
	}
	out := make([]llm.Block, 0, 2)
	if d.consume(']') {
		*dst = out
		return true
	}
	for {
		var b llm.Block
		if !d.null() && !d.block(&b) {
			return false
		}
		out = append(out, b)
		if d.consume(',') {
			continue
		}
		if !d.consume(']') {
			return false
		}
		*dst = out
		return true
	}
}

func (d *lineDecoder) block(b *llm.Block) bool {
	keys := [...]string{"type", "text", "id", "name", "input", "tool_use_id", "content", "is_error"}
	return d.object(keys[:], func(i int) bool {
		switch keys[i] {
		case "type":
			return d.str(&b.Type)
		case "text":
			return d.str(&b.Text)
		case "id":
			return d.str(&b.ID)
		case "name":
			return d.str(&b.Name)
		case "input":
			raw, ok := d.raw()
			if ok {
				b.Input = append(json.RawMessage(nil), raw...)
			}
			return ok
		case "tool_use_id":
			return d.str(&b.ToolUseID)
		case "content":
			return d.str(&b.Content)
		default: // is_error
			return d.boolean(&b.IsError)
		}
	})
}

// time decodes a time.Time as encoding/json does (null leaves it unchanged).
func (d *lineDecoder) time(dst *time.Time) bool {
	raw, ok := d.raw()
	return ok && dst.UnmarshalJSON(raw) == nil
}

// int64 decodes an integer into an int64 (or null).
func (d *lineDecoder) int64(dst *int64) bool {
	v := int(*dst)
	if !d.integer(&v) {
		return false
	}
	*dst = int64(v)
	return true
}

func (d *lineDecoder) usage(u *llm.Usage) bool {
	keys := [...]string{"input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"}
	return d.object(keys[:], func(i int) bool {
		switch i {
		case 0:
			return d.int64(&u.InputTokens)
		case 1:
			return d.int64(&u.OutputTokens)
		case 2:
			return d.int64(&u.CacheCreationInputTokens)
		default:
			return d.int64(&u.CacheReadInputTokens)
		}
	})
}

// calls decodes an array of CallTime (null leaves it nil).
func (d *lineDecoder) calls(dst *[]CallTime) bool {
	if d.null() {
		*dst = nil
		return true
	}
	if !d.consume('[') {
		return false
	}
	out := []CallTime{}
	if d.consume(']') {
		*dst = out
		return true
	}
	for {
		var c CallTime
		if !d.null() && !d.call(&c) {
			return false
		}
		out = append(out, c)
		if d.consume(',') {
			continue
		}
		if !d.consume(']') {
			return false
		}
		*dst = out
		return true
	}
}

func (d *lineDecoder) call(c *CallTime) bool {
	keys := [...]string{"id", "start", "duration_ms"}
	return d.object(keys[:], func(i int) bool {
		switch i {
		case 0:
			return d.str(&c.ID)
		case 1:
			return d.time(&c.Start)
		default:
			return d.int64(&c.DurationMS)
		}
	})
}
