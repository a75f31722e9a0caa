package sandbox

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// Landlock and the seccomp filter answer a refused access with EACCES or EPERM, which a
// program reports in its own words; the hint reads those words in the output of a
// command that failed, with the path they name when there is one.

// refusal matches the messages of a refused access (compiled on first use: stoke
// starts often, as the helper too, and most runs never read one).
var refusal = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)permission denied|operation not permitted|read-only file system|EACCES|EPERM`)
})

// netWords are what a refused network access says besides the refusal, or instead of it
// (a resolver that could not open its socket).
var netWords = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)socket|connect|/dev/(tcp|udp)/|could not resolve|name resolution|name or service not known|network is unreachable|getaddrinfo|dial (tcp|udp)|lookup [^ ]+ on`)
})

// quotedPath finds the paths a message names: 'p', "p", `p', or p: at a line's start
// or after "open", "touch", ... ('bash: /x: Permission denied').
var quotedPath = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile("['\"`‘]((?:/|\\./|\\.\\./|~/)[^'\"`’\n]*)['\"’]|(?:^|[\\s:(])((?:/|\\./|\\.\\./)[^\\s:'\"()]+):? (?:[Pp]ermission denied|[Oo]peration not permitted|[Rr]ead-only file system)")
})

// Hint returns the one line a failed command's tool result gets when its output shows a
// refusal this sandbox may have caused, naming the sandbox and the flag that would
// widen it; "" when nothing points at the sandbox. root is the command's workspace.
func (s *Sandbox) Hint(output, root string) string {
	if !s.Confines() || !s.confine {
		return ""
	}
	mode := fmt.Sprintf("sandbox %s", s.cfg.Mode)
	denied := refusal().MatchString(output)
	named := false // the refusals name paths: the sandbox explains them or not at all
	if denied {
		for _, m := range quotedPath().FindAllStringSubmatch(output, -1) {
			named = true
			p := m[1]
			if p == "" {
				p = m[2]
			}
			if h := s.pathHint(mode, p, root); h != "" {
				return h
			}
		}
	}
	if !s.cfg.Network && netWords().MatchString(output) {
		return fmt.Sprintf("[%s: commands have no network (no sockets but Unix ones, no TCP connect); --sandbox-network lets them use it]", mode)
	}
	if denied && !named {
		return fmt.Sprintf("[%s: the command may have been refused by the sandbox: it writes only in %s, reads neither STOKE_HOME nor the credential stores, and has no network; --sandbox off runs commands unconfined]", mode, s.writesWhere())
	}
	return ""
}

// pathHint explains why p (as a message names it) may have been refused.
func (s *Sandbox) pathHint(mode, p, root string) string {
	switch {
	case strings.HasPrefix(p, "~/") && s.cfg.UserHome != "":
		p = filepath.Join(s.cfg.UserHome, p[2:])
	case !filepath.IsAbs(p):
		p = filepath.Join(root, p)
	}
	p = realPath(p)
	if inside(p, []string{"/dev", "/proc", "/sys"}) {
		return ""
	}
	for _, d := range s.cfg.denied() {
		if inside(p, []string{realPath(d)}) {
			return fmt.Sprintf("[%s: commands may not read or write %s (STOKE_HOME, the credential stores and --sandbox-deny-read paths are hidden from them; --sandbox off lifts it)]", mode, d)
		}
	}
	if inside(p, s.writable(root)) {
		return ""
	}
	if s.cfg.Mode == ModeReadOnly {
		return fmt.Sprintf("[%s: commands write only in $TMPDIR, not %s; --sandbox workspace-write lets them write the workspace]", mode, p)
	}
	return fmt.Sprintf("[%s: commands write only in %s, not %s; --sandbox-writable DIR (a flag or the home settings) lets them write DIR]", mode, s.writesWhere(), p)
}

// writesWhere says where commands may write, for the hints.
func (s *Sandbox) writesWhere() string {
	if s.cfg.Mode == ModeReadOnly {
		return "$TMPDIR"
	}
	return "the workspace and $TMPDIR"
}
