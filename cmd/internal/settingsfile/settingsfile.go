// Package settingsfile reads a stoke settings file (YAML): which keys it sets, and
// whether each value is of its key's kind. What the keys mean, where a file may set
// them and how the layers combine is package cmd's; this package is apart so that its
// reader of untrusted bytes (a checkout's .stoke/settings.yaml) is fuzzed without
// building the rest of stoke.
package settingsfile

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Kind is the type of a configuration value.
type Kind int

const (
	String Kind = iota
	Int
	Bool
	Duration
	// Map is a structured settings-file value (prices, hooks): no flag, no environment
	// variable; entries of a later file replace same-named entries of an earlier one.
	Map
	// List is a list of strings in the home settings (env-deny, trusted-projects): no
	// flag, no environment variable.
	List
)

// Key is one key a settings file may name.
type Key struct {
	Name string
	Kind Kind
	// PerRun: flags and environment only; a file that sets it is told so (Ignored).
	PerRun bool
}

// Ignored is a key of a file that was left out, and why: unknown, or per run only.
type Ignored struct {
	Key    string // as the file spells it
	PerRun bool   // else unknown
}

// ValueError is a value of the wrong kind.
type ValueError struct {
	Key string // as the file spells it
	Err error
}

func (e *ValueError) Error() string { return e.Key + ": " + e.Err.Error() }
func (e *ValueError) Unwrap() error { return e.Err }

// ErrMalformed is wrapped by the error of a file that is not a YAML map.
var ErrMalformed = errors.New("malformed settings file")

// Parse reads the content of a settings file against keys. Keys are matched case-
// insensitively and come back in lower case; a key with no value ("model:") sets
// nothing. Unknown and per-run keys are left out and returned; YAML that does not parse
// fails with ErrMalformed, a value of the wrong kind with a *ValueError.
func Parse(data []byte, keys []Key) (map[string]any, []Ignored, error) {
	var raw map[string]any
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	out := make(map[string]any, len(raw))
	var ignored []Ignored
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		val := raw[k]
		name := strings.ToLower(k)
		i := slices.IndexFunc(keys, func(key Key) bool { return key.Name == name })
		switch {
		case i < 0:
			ignored = append(ignored, Ignored{Key: k})
			continue
		case keys[i].PerRun:
			ignored = append(ignored, Ignored{Key: k, PerRun: true})
			continue
		case val == nil:
			continue
		}
		if err := Check(keys[i].Kind, val); err != nil {
			return nil, nil, &ValueError{Key: k, Err: err}
		}
		out[name] = val
	}
	return out, ignored, nil
}

// Check reports whether val, from the environment (a string) or YAML, can be decoded as
// k.
func Check(k Kind, val any) error {
	switch k {
	case Map:
		if _, ok := val.(map[string]any); !ok {
			return errors.New("want a map")
		}
	case List:
		items, ok := val.([]any)
		if !ok {
			return errors.New("want a list")
		}
		for _, it := range items {
			switch it.(type) {
			case map[string]any, []any, nil:
				return errors.New("want a list of strings")
			}
		}
	case String:
		switch val.(type) {
		case map[string]any, []any:
			return errors.New("want a single value")
		}
	case Int:
		if _, ok := IntValue(val); !ok {
			return errors.New("want a whole number")
		}
	case Bool:
		if _, ok := BoolValue(val); !ok {
			return errors.New("want true or false")
		}
	case Duration:
		switch x := val.(type) {
		case string:
			if _, err := time.ParseDuration(x); err != nil {
				return errors.New("want a duration with a unit, like 90s or 10m")
			}
		case int:
			if x != 0 {
				return errors.New("want a duration with a unit, like 90s or 10m")
			}
		default:
			return errors.New("want a duration with a unit, like 90s or 10m")
		}
	}
	return nil
}

// IntValue decodes a whole number.
func IntValue(x any) (int, bool) {
	switch x := x.(type) {
	case int:
		return x, true
	case int64:
		return int(x), true
	case uint64:
		return int(x), true
	case string:
		n, err := strconv.Atoi(x)
		return n, err == nil
	}
	return 0, false
}

// DurationValue decodes a duration (0 may be written without a unit).
func DurationValue(x any) (time.Duration, bool) {
	switch x := x.(type) {
	case time.Duration:
		return x, true
	case int:
		return time.Duration(x), x == 0
	case string:
		d, err := time.ParseDuration(x)
		return d, err == nil
	}
	return 0, false
}

// BoolValue decodes a boolean.
func BoolValue(x any) (bool, bool) {
	switch x := x.(type) {
	case bool:
		return x, true
	case string:
		b, err := strconv.ParseBool(x)
		return b, err == nil
	}
	return false, false
}
