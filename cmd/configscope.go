package cmd

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stoke-cli/stoke/agents/tools"
	"github.com/stoke-cli/stoke/headless"
)

// readProjectSettings reads the project's settings file, unless it is a symbolic link
// (or sits in a directory that is one) to a file outside the project: then it is not
// read, with one warning.
func readProjectSettings(path, cwd string, all []setting) (map[string]any, []ignoredKey, error) {
	real, err := filepath.EvalSymlinks(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, usageErrorf("read settings file %s: %v", path, err)
	}
	root, err := filepath.EvalSymlinks(cwd)
	if err != nil {
		return nil, nil, usageErrorf("resolve the working directory: %v", err)
	}
	if !within(root, real) {
		return nil, []ignoredKey{{path, "", fmt.Sprintf("it is a symbolic link to %s, outside the project", real)}}, nil
	}
	return readSettings(path, all)
}

// within reports whether p is dir or below it (both clean and absolute).
func within(dir, p string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, string(filepath.Separator))+string(filepath.Separator))
}

// narrowProject drops from the project's settings m what the project may not set: keys
// of the home settings only, and, unless the project is trusted, keys that reach outside
// the workspace and values wider than the home settings' (or the defaults). Each drop is
// one warning.
func narrowProject(path string, m, home map[string]any, all []setting, trusted bool, homePath string) (map[string]any, []ignoredKey) {
	untrusted := fmt.Sprintf("the project is not trusted (pass --trust-project, or list it under trusted-projects in %s)", homePath)
	var ignored []ignoredKey
	out := make(map[string]any, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		val := m[k]
		s := all[slices.IndexFunc(all, func(s setting) bool { return s.key == k })]
		switch s.scope {
		case scopeHome:
			ignored = append(ignored, ignoredKey{path, k, "only " + homePath + " may set it"})
			continue
		case scopeNarrow:
			base, ok := home[k]
			if !ok {
				base = s.def
			}
			if !trusted && !s.narrower(val, base) {
				ignored = append(ignored, ignoredKey{path, k, fmt.Sprintf("%s and may only narrow it: %v is wider than %v", untrusted, val, base)})
				continue
			}
		case scopeTrusted:
			if !trusted {
				reason := untrusted
				if s.why != "" {
					reason += ": " + s.why
				}
				ignored = append(ignored, ignoredKey{path, k, reason})
				continue
			}
		}
		out[k] = val
	}
	return out, ignored
}

// homeLists decodes the list keys of the home settings. A trusted-projects entry that is
// not an absolute path is dropped with a warning.
func homeLists(path string, home map[string]any) (map[string][]string, []ignoredKey) {
	out := map[string][]string{}
	var ignored []ignoredKey
	for _, key := range []string{"env-deny", "trusted-projects"} {
		items, _ := home[key].([]any)
		for _, it := range items {
			s := strings.TrimSpace(fmt.Sprint(it))
			if key == "trusted-projects" && !filepath.IsAbs(s) {
				ignored = append(ignored, ignoredKey{path, key, fmt.Sprintf("%q is not an absolute path", s)})
				continue
			}
			out[key] = append(out[key], s)
		}
	}
	return out, ignored
}

// listed reports whether cwd is one of the trusted projects, compared after both are
// made absolute and their symbolic links resolved.
func listed(cwd string, projects []string) bool {
	if len(projects) == 0 {
		return false
	}
	real := func(p string) string {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r
		}
		return filepath.Clean(p)
	}
	here := real(cwd)
	for _, p := range projects {
		if real(p) == here {
			return true
		}
	}
	return false
}

// The narrowing rules of the scopeNarrow keys: the project's value v against base. A
// value that is not valid at all is let through: validation then stops the run with a
// usage error naming the file, as for any settings file.

// lowerMode: an approval mode that allows no more (plan < default < auto-edit < yolo).
func lowerMode(v, base any) bool {
	rank := func(x any) int {
		m, err := tools.ParseMode(fmt.Sprint(x))
		if err != nil {
			return -1
		}
		return m.Rank()
	}
	r := rank(v)
	return r < 0 || r <= max(rank(base), 0) // an unknown mode fails validation
}

// lowerCap is the rule of a cap where 0 means none (max-turns, timeout): a lower,
// non-zero one.
func lowerCap[T int | time.Duration](value func(any) (T, bool)) func(v, base any) bool {
	return func(v, base any) bool {
		n, ok1 := value(v)
		b, ok2 := value(base)
		switch {
		case !ok1 || n < 0:
			return true // fails validation
		case !ok2 || b == 0:
			return ok2
		}
		return n != 0 && n <= b
	}
}

// fewer: a cap of at least 1 (max-background, max-foreground, max-retained).
func fewer(v, base any) bool {
	n, ok1 := intValue(v)
	b, ok2 := intValue(base)
	return !ok1 || n < 1 || ok2 && n <= b // a value below 1 fails validation
}

// fewerOrNone: a cap where 0 means none may wait, the least of all (max-queued).
func fewerOrNone(v, base any) bool {
	n, ok1 := intValue(v)
	b, ok2 := intValue(base)
	return !ok1 || n < 0 || ok2 && n <= b // a negative value fails validation
}

// cancelsSooner: cancel ends background agents with the run; wait lets them finish.
func cancelsSooner(v, base any) bool {
	s := fmt.Sprint(v)
	return s == string(headless.BackgroundCancel) || s == fmt.Sprint(base) || s != string(headless.BackgroundWait) // another value fails validation
}

// turnsOff: a project may turn background agents off, not on.
func turnsOff(v, base any) bool {
	on, ok1 := boolValue(v)
	b, ok2 := boolValue(base)
	return ok1 && ok2 && (on || on == b)
}

func intValue(x any) (int, bool) {
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

func durationValue(x any) (time.Duration, bool) {
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

func boolValue(x any) (bool, bool) {
	switch x := x.(type) {
	case bool:
		return x, true
	case string:
		b, err := strconv.ParseBool(x)
		return b, err == nil
	}
	return false, false
}
