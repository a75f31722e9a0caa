package sandbox

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// The Landlock rights of the policy's grants.
const (
	// accessRead: read files, list directories, execute.
	accessRead = landlock.AccessFSSet(ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSReadDir)
	// accessWrite: everything but making device nodes and device ioctls (a block device
	// made in the workspace would read the whole disk).
	accessWrite = accessRead | landlock.AccessFSSet(ll.AccessFSWriteFile|ll.AccessFSRemoveDir|ll.AccessFSRemoveFile|
		ll.AccessFSMakeDir|ll.AccessFSMakeReg|ll.AccessFSMakeSock|ll.AccessFSMakeFifo|ll.AccessFSMakeSym|
		ll.AccessFSRefer|ll.AccessFSTruncate)
	// accessDevice: a device file read, written and controlled.
	accessDevice = landlock.AccessFSSet(ll.AccessFSReadFile | ll.AccessFSWriteFile | ll.AccessFSTruncate | ll.AccessFSIoctlDev)
	// accessFile: the rights that apply to a file rather than to a directory's entries.
	accessFile = landlock.AccessFSSet(ll.AccessFSExecute | ll.AccessFSWriteFile | ll.AccessFSReadFile | ll.AccessFSTruncate | ll.AccessFSIoctlDev)
	// handledFS: every file system right of ABI 7, so that what no rule grants is denied.
	handledFS = accessWrite | landlock.AccessFSSet(ll.AccessFSMakeChar|ll.AccessFSMakeBlock|ll.AccessFSIoctlDev)
)

// landlockConfig is the ruleset's handled rights: the file system always, TCP (and, on
// kernels that have it, UDP) when the network is off, and the signal and abstract
// socket scopes, so that a command cannot signal, or connect to an abstract socket of,
// a process outside its sandbox — stoke and its supervisor included. BestEffort drops
// what the kernel lacks.
func landlockConfig(network bool) landlock.Config {
	c := landlock.Config{HandledAccessFS: handledFS, Scoped: landlock.ScopedSet(ll.ScopeSignal)}
	if !network {
		c.HandledAccessNet = landlock.AccessNetSet(ll.AccessNetBindTCP | ll.AccessNetConnectTCP | ll.AccessNetBindUDP | ll.AccessNetConnectSendUDP)
		c.Scoped |= landlock.ScopedSet(ll.ScopeAbstractUnixSocket)
		// Pathname sockets of processes outside the sandbox (ABI 9; below it, seccomp
		// refuses connect(2) altogether).
		c.HandledAccessFS |= landlock.AccessFSSet(ll.AccessFSResolveUnix)
	}
	return c.BestEffort()
}

// grant is a hierarchy and the rights granted below it.
type grant struct {
	path   string
	access landlock.AccessFSSet
}

// fsRules turns the policy into Landlock rules. A grant reaches everything below its
// directory, so a grant holding a denied path is replaced by grants on each sibling
// along the way to it: the directories on that way get nothing from it (listing /,
// or creating a file directly in a home that holds ~/.ssh, is refused), the denied path
// nothing at all. Denied paths that do not exist need nothing. Symbolic links get no
// rule: what they lead to gets its own. A grant that is, or lies in, a denied path is kept:
// it is explicit (see expand).
func fsRules(p policy, abi int) []landlock.Rule {
	var deny []string
	for _, d := range p.Deny {
		if _, err := os.Lstat(d); err == nil {
			deny = append(deny, filepath.Clean(d))
		}
	}
	write := accessWrite
	if abi < 2 {
		write &^= ll.AccessFSRefer // ABI 1 refuses every rename and link across directories anyway
	}
	var grants []grant
	for _, r := range p.Read {
		grants = append(grants, grant{r, accessRead})
	}
	for _, w := range p.Write {
		grants = append(grants, grant{w, write})
	}
	var rules []landlock.Rule
	for _, g := range grants {
		rules = append(rules, expand(g, deny)...)
	}
	for _, d := range p.Devices {
		rules = append(rules, landlock.PathAccess(accessDevice, d).IgnoreIfMissing())
	}
	return rules
}

// expand returns the rules of one grant with the denied paths below it taken out. A
// grant that is, or lies in, a denied path is kept: it is explicit (an isolated agent's
// worktree in STOKE_HOME, a --sandbox-writable directory the user named), and a denial
// reaches only what no grant names.
func expand(g grant, deny []string) []landlock.Rule {
	var below []string
	for _, d := range deny {
		if d != g.path && inside(d, []string{g.path}) {
			below = append(below, d)
		}
	}
	if len(below) == 0 {
		return []landlock.Rule{rule(g.path, g.access, isDir(g.path))}
	}
	onWay := map[string]bool{}
	for _, d := range below {
		for p := filepath.Dir(d); p != g.path && inside(p, []string{g.path}); p = filepath.Dir(p) {
			onWay[p] = true
		}
	}
	var rules []landlock.Rule
	var walk func(dir string)
	walk = func(dir string) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return // unreadable: nothing below it is granted
		}
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			switch {
			case slices.Contains(below, p):
			case onWay[p]:
				if e.IsDir() {
					walk(p)
				}
			case e.Type()&fs.ModeSymlink != 0:
			default:
				rules = append(rules, rule(p, g.access, e.IsDir()))
			}
		}
	}
	walk(g.path)
	return rules
}

// rule grants access below path; a file gets only the rights that apply to files.
func rule(path string, access landlock.AccessFSSet, dir bool) landlock.Rule {
	if !dir {
		access &= accessFile
	}
	return landlock.PathAccess(access, path).IgnoreIfMissing()
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
