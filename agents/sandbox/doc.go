// Package sandbox confines the processes stoke starts on the model's behalf (the shell
// tool and everything it starts), never stoke itself: the trust boundary is a process
// boundary, not the spelling of a command line.
//
// On Linux every sandboxed command runs under a small supervisor: stoke re-executes its
// own binary (/proc/self/exe) with a hidden first argument (HelperArg), and that helper
// process, which runs from this package's initialisation (before the provider SDKs and
// the rest of stoke's packages are initialised, so that it starts nearly as fast as a
// hello world),
//
//   - becomes a child subreaper (PR_SET_CHILD_SUBREAPER), so the command's orphans become
//     its children;
//   - confines one OS thread of its own — never the thread group leader — with
//     no_new_privs, a seccomp filter (no socket family but AF_UNIX, no connect when the
//     network is off, no io_uring, module loading, kexec, keyrings, bpf or
//     perf_event_open) and a Landlock domain (the file system allow-list of the mode,
//     TCP bind/connect, signal and abstract-socket scoping), and forks the command from
//     that thread, so the command inherits the confinement and the supervisor keeps its
//     own freedom (the command can neither signal nor trace it);
//   - reports the command's exit status on a pipe, keeps reaping what the command left
//     running in the background, and kills that whole tree when its control pipe closes:
//     when stoke ends the command (timeout, cancel), when the run ends (Sandbox.Close) or
//     when stoke dies, SIGKILL included, since the kernel closes stoke's end.
//
// Landlock is an allow-list whose grants reach everything below a directory, so "read
// everywhere but STOKE_HOME and the credential stores" is expressed by granting each
// sibling along the path to every denied entry (rules.go). What Landlock cannot express
// inside a directory the command may write — the workspace's .git/config, .git/hooks/,
// .git itself, .stoke/, .claude/, .qwen/, .mcp.json — a guard run by stoke around every
// command checks and puts back (guard.go). docs/sandbox.md says what is and is not
// covered.
package sandbox
