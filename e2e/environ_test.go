package e2e

import (
	"os"
	"strconv"
	"strings"
)

// canPtrace reports whether this process may read the /proc entries of a process that
// is not dumpable (root with CAP_SYS_PTRACE): the script condition [ptrace].
func canPtrace() bool {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil || os.Geteuid() != 0 {
		return false
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if hex, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
			const capSysPtrace = 19
			return err == nil && caps&(1<<capSysPtrace) != 0
		}
	}
	return false
}
