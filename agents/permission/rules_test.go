package permission

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stoke-cli/stoke/agents/tools"
)

// workspace returns a workspace with secrets/key, docs/a.md, a symlink link -> secrets
// and a symlink out -> a directory outside.
func workspace(t testing.TB) *tools.Workspace {
	t.Helper()
	dir := t.TempDir()
	outside := t.TempDir()
	for _, d := range []string{"secrets", "docs", "src"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"secrets/key", "docs/a.md", "src/main.go", ".env"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("secrets", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	w, err := tools.NewWorkspace(dir, tools.ModeDefault)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func shellCall(cmd string) tools.Call {
	in, _ := json.Marshal(map[string]string{"command": cmd})
	return tools.Call{Name: tools.NameShell, Input: in}
}

func fileCall(tool, p string) tools.Call {
	key := "file_path"
	if tool == tools.NameGlob || tool == tools.NameGrep {
		key = "path"
	}
	in, _ := json.Marshal(map[string]string{key: p, "pattern": "x", "content": "c", "old_string": "a", "new_string": "b"})
	return tools.Call{Name: tool, Input: in}
}

func TestShellAllowed(t *testing.T) {
	t.Parallel()
	w := workspace(t)
	rules := New(w, []string{"Bash(echo:*)", "Bash(git status)", "Bash(npm run test:*)", "Bash(git * main)", "Write(docs/**)"}, nil)
	tests := []struct {
		cmd  string
		want bool
	}{
		{"echo hi", true},
		{"echo", true},
		{"echo 'a; rm b'", true},
		{"echo $HOME", true},
		{"echo a && echo b | echo c", true},
		{"git status", true},
		{"git  status", true},
		{"git status --short", false},
		{"npm run test -- -v", true},
		{"npm run test", true},
		{"npm run testx", false},
		{"git push origin main", true},
		{"git push origin dev", false},
		// compound commands: every simple command must be allowed
		{"echo a; touch pwned", false},
		{"echo a && touch pwned", false},
		{"echo a || touch pwned", false},
		{"echo a | touch pwned", false},
		{"echo $(touch pwned)", false},
		{"echo `touch pwned`", false},
		{"echo <(touch pwned)", false},
		{"(touch pwned)", false},
		{"{ touch pwned; }", false},
		{"f() { touch pwned; }; echo", false},
		{"echoX=1; touch pwned", false},
		{"echoX=1", false},
		{"PATH=/tmp echo hi", false},
		{"echo hi & touch pwned", false},
		{"echoes", false},
		{"$E hi", false},
		{"e\\cho hi", true},
		// redirections are writes
		{"echo hi > /dev/null", true},
		{"echo hi 2>&1", true},
		{"echo hi > docs/new.md", true},
		{"echo hi > ./docs/../docs/new.md", true},
		{"echo hi > out.txt", false},
		{"echo hi > docs/../out.txt", false},
		{"echo hi > /tmp/x", false},
		{"echo hi > $F", false},
		{"echo hi > docs/.stoke/settings.yaml", false},
		// does not parse
		{`echo "unterminated`, false},
		{"echo $(", false},
		// operands bash evaluates, holding commands no rule was asked about
		{`echo hi; [[ 1 -eq 'a[$(touch PWNED)]' ]]`, false},
		{`echo hi && printf -v 'a[$(touch PWNED)]' x`, false},
	}
	for _, tt := range tests {
		if got := rules.Allowed(shellCall(tt.cmd), tools.ModeDefault); got != tt.want {
			t.Errorf("Allowed(%q) = %v, want %v", tt.cmd, got, tt.want)
		}
	}
	// In auto-edit, a redirection inside the workspace needs no Write rule; protected
	// configuration still does not pass.
	for cmd, want := range map[string]bool{
		"echo hi > out.txt": true, "echo hi > .stoke/settings.yaml": false, "echo hi > /tmp/x": false,
	} {
		if got := rules.Allowed(shellCall(cmd), tools.ModeAutoEdit); got != want {
			t.Errorf("auto-edit: Allowed(%q) = %v, want %v", cmd, got, want)
		}
	}
}

// Any allow rule at all (even one for another tool, or one for the builtin itself) left
// a line approved whose only commands bash runs from an operand it evaluates.
func TestShellEvaluatedNotAllowed(t *testing.T) {
	t.Parallel()
	w := workspace(t)
	tests := []struct {
		allow []string
		cmd   string
	}{
		{[]string{"Read"}, `[[ 1 -eq 'a[$(touch PWNED)]' ]]`},
		{[]string{"Read"}, `(( x = 'a[$(touch PWNED)]' ))`},
		{[]string{"Bash(test:*)"}, `test -v 'a[$(touch PWNED)]'`},
		{[]string{"Bash([:*)"}, `[ -v 'a[$(touch PWNED)]' ]`},
		{[]string{"Bash(printf:*)"}, `printf -v 'a[$(touch PWNED)]' x`},
		{[]string{"Bash(read:*)"}, `read 'a[$(touch PWNED)]' <<< 1`},
		{[]string{"Bash(unset:*)"}, `unset 'a[$(touch PWNED)]'`},
		{[]string{"Bash(let:*)"}, `let 'x=a[$(touch PWNED)]'`},
	}
	for _, tt := range tests {
		if New(w, tt.allow, nil).Allowed(shellCall(tt.cmd), tools.ModeDefault) {
			t.Errorf("allow %q: Allowed(%q)", tt.allow, tt.cmd)
		}
	}
	// what they look like without the hidden command stays allowed
	if !New(w, []string{"Bash(test:*)"}, nil).Allowed(shellCall(`test -v HOME`), tools.ModeDefault) {
		t.Error("test -v HOME refused")
	}
	if !New(w, []string{"Read"}, nil).Allowed(shellCall(`[[ $n -eq 1 ]]`), tools.ModeDefault) {
		t.Error("[[ $n -eq 1 ]] refused")
	}
}

func TestShellWholeToolAllowed(t *testing.T) {
	t.Parallel()
	rules := New(workspace(t), []string{"Bash"}, nil)
	for cmd, want := range map[string]bool{"touch a; rm b": true, "$X": true, `echo "x`: false} {
		if got := rules.Allowed(shellCall(cmd), tools.ModeDefault); got != want {
			t.Errorf("Allowed(%q) = %v, want %v", cmd, got, want)
		}
	}
}

func TestShellDenied(t *testing.T) {
	t.Parallel()
	w := workspace(t)
	rules := New(w, []string{"Bash"}, []string{"Bash(rm:*)", "Bash(git push:*)", "Write(secrets/**)", "Read(.env)"})
	tests := []struct {
		cmd  string
		want bool
	}{
		{"ls", false},
		{"rm victim", true},
		{"echo a; rm victim", true},
		{"echo a && rm victim", true},
		{"ls | xargs rm", true},
		{"echo $(rm victim)", true},
		{"(rm victim)", true},
		{"/bin/rm victim", true},
		{"\\rm victim", true},
		{"'rm' victim", true},
		{"command rm victim", true},
		{"env A=1 rm victim", true},
		{"sudo -u root rm victim", true},
		{"X=1 rm victim", true},
		{"bash -c 'rm victim'", true},
		{"sh -c \"echo a; rm victim\"", true},
		{"eval rm victim", true},
		{"bash -c \"$CMD\"", true},
		{"echo 'rm victim' | sh", true},
		{"bash <<< 'rm victim'", true},
		{"sh -s x < cmds.txt", true},
		{"bash - < cmds.txt", true},
		{"bash scripts/test.sh", false},
		// wrappers with an operand before their command, and commands given as one string
		{"flock /tmp/l rm victim", true},
		{"flock -w 5 /tmp/l rm victim", true},
		{"flock /tmp/l -c 'rm victim'", true},
		{"sudo flock /tmp/l --command='echo a; rm victim'", true},
		{"flock /tmp/l make test", false},
		{"taskset 0x1 rm victim", true},
		{"taskset -c 0,1 rm victim", true},
		{"chrt 10 rm victim", true},
		{"numactl -N 0 rm victim", true},
		{"su -c 'rm victim' nobody", true},
		{"runuser -u nobody --command 'rm victim'", true},
		{"script -qc 'rm victim' /dev/null", true},
		{"script -q -c 'rm victim' /dev/null", true},
		{"echo 'rm victim' | su nobody", true},
		{"watch -n 1 rm victim", true},
		{"watch 'ls; rm victim'", true},
		{"watch -n 1 ls", false},
		{"sg staff -c 'rm victim'", true},
		{"su -c 'make test' nobody", false},
		{"$RM victim", true},
		{"git push origin main", true},
		{"git status", false},
		{"echo rm", false},
		{"echo x > secrets/key", true},
		{"echo x > ./secrets/../secrets/key", true},
		{"echo x > link/key", true},
		{"echo x > docs/a.md", false},
		{"echo x > $F", true},
		{"cat < .env", true},
		{"cat < docs/a.md", false},
		{`echo "x`, true},
		// operands bash evaluates hide commands (the bypasses, in yolo)
		{`[[ 1 -eq 'a[$(rm victim)]' ]]`, true},
		{`test -v 'a[$(rm victim)]'`, true},
		{`[ -v 'a[$(rm victim)]' ]`, true},
		{`printf -v 'a[$(rm victim)]' x`, true},
		{`read 'a[$(rm victim)]' <<< 1`, true},
		{`declare 'a[$(rm victim)]=1'`, true},
		{`let 'x=a[$(rm victim)]'`, true},
		{`(( x = 'a[$(rm victim)]' ))`, true},
		{`bash -c "[[ 1 -eq 'a[\$(rm victim)]' ]]"`, true},
		{`[[ $n -eq 1 ]]`, false},
		// wrappers' long options that take a value
		{"xargs --max-args 1 rm", true},
		{"flock --wait 5 lk rm victim", true},
		{"ionice --class 2 rm victim", true},
		{"nice --adjustment 5 rm victim", true},
		{"timeout --signal KILL 5 rm victim", true},
		{"sudo --user root rm victim", true},
		{"numactl --interleave all rm victim", true},
		{"env --chdir /tmp rm victim", true},
		{"stdbuf --output L rm victim", true},
		{"xargs --unknown-option 1 rm", true}, // cannot be read: refused
		{"xargs --max-args 1 ls", false},
	}
	for _, tt := range tests {
		_, got := rules.Deny(shellCall(tt.cmd))
		if got != tt.want {
			t.Errorf("Deny(%q) = %v, want %v", tt.cmd, got, tt.want)
		}
		if tt.want && rules.Allowed(shellCall(tt.cmd), tools.ModeYolo) {
			t.Errorf("Allowed(%q) despite a deny rule", tt.cmd)
		}
	}
	// Without shell deny rules, an unknown command name is no reason to refuse.
	if _, denied := New(w, nil, []string{"Write(secrets/**)"}).Deny(shellCall("$X a")); denied {
		t.Error("$X refused without a shell deny rule")
	}
	if _, denied := New(w, nil, []string{"Bash"}).Deny(shellCall("")); !denied {
		t.Error("the whole-tool deny rule did not refuse an empty command")
	}
}

// Every spelling of one file gets one answer.
func TestPathSpellings(t *testing.T) {
	t.Parallel()
	w := workspace(t)
	root := w.Root()
	deny := New(w, nil, []string{"Write(secrets/**)", "Read(*.env)", "Edit(//" + root[1:] + "/src/*.go)"})
	allow := New(w, []string{"Write(docs/**)"}, nil)
	tests := []struct {
		tool, path    string
		denied, allow bool
	}{
		{tools.NameWriteFile, "secrets/key", true, false},
		{tools.NameWriteFile, "./secrets/key", true, false},
		{tools.NameWriteFile, "secrets//key", true, false},
		{tools.NameWriteFile, "docs/../secrets/key", true, false},
		{tools.NameWriteFile, filepath.Join(root, "secrets/key"), true, false},
		{tools.NameWriteFile, "link/key", true, false},
		{tools.NameEdit, "secrets/new", true, false},
		{tools.NameWriteFile, "secrets", true, false},
		{tools.NameWriteFile, "docs/a.md", false, true},
		{tools.NameEdit, "./docs/a.md", false, true},
		{tools.NameWriteFile, "docs/sub/new.md", false, true},
		{tools.NameWriteFile, "docs/../outside.txt", false, false},
		{tools.NameWriteFile, "docs/../../outside.txt", false, false},
		{tools.NameWriteFile, "out/x", false, false},
		{tools.NameWriteFile, "docsx/a.md", false, false},
		{tools.NameReadFile, ".env", true, false},
		{tools.NameReadFile, "src/../.env", true, false},
		{tools.NameGrep, "sub/.env", true, false},
		{tools.NameReadFile, "docs/a.md", false, false},
		{tools.NameWriteFile, "src/main.go", true, false},
		{tools.NameEdit, "./src/main.go", true, false},
		{tools.NameWriteFile, "src/x/main.go", false, false},
	}
	for _, tt := range tests {
		c := fileCall(tt.tool, tt.path)
		if _, got := deny.Deny(c); got != tt.denied {
			t.Errorf("Deny(%s %q) = %v, want %v", tt.tool, tt.path, got, tt.denied)
		}
		if got := allow.Allowed(c, tools.ModeDefault); got != tt.allow {
			t.Errorf("Allowed(%s %q) = %v, want %v", tt.tool, tt.path, got, tt.allow)
		}
	}
}

func TestRuleNames(t *testing.T) {
	t.Parallel()
	w := workspace(t)
	rules := New(w, []string{"Read", "mcp__srv__tool", "Grep(*)"}, []string{"Edit"})
	tests := []struct {
		call          tools.Call
		denied, allow bool
	}{
		{fileCall(tools.NameReadFile, "docs/a.md"), false, true},
		{fileCall(tools.NameGlob, "docs"), false, true},
		{fileCall(tools.NameWriteFile, "docs/a.md"), true, false},
		{fileCall(tools.NameEdit, "docs/a.md"), true, false},
		{tools.Call{Name: "mcp__srv__tool", Input: json.RawMessage(`{}`)}, false, true},
		{tools.Call{Name: "mcp__srv__other", Input: json.RawMessage(`{}`)}, false, false},
	}
	for _, tt := range tests {
		if _, got := rules.Deny(tt.call); got != tt.denied {
			t.Errorf("Deny(%s %s) = %v, want %v", tt.call.Name, tt.call.Input, got, tt.denied)
		}
		if got := rules.Allowed(tt.call, tools.ModeDefault); got != tt.allow {
			t.Errorf("Allowed(%s %s) = %v, want %v", tt.call.Name, tt.call.Input, got, tt.allow)
		}
	}
	// A server's rule, bare or with __*, covers every tool of that server and no other.
	servers := New(w, []string{"mcp__web", "mcp__fs__*"}, []string{"mcp__shell"})
	for _, tt := range []struct {
		name          string
		denied, allow bool
	}{
		{"mcp__web__fetch", false, true},
		{"mcp__fs__read", false, true},
		{"mcp__webx__fetch", false, false},
		{"mcp__fs", false, false},
		{"mcp__shell__run", true, false},
		{"mcp__shellx__run", false, false},
	} {
		call := tools.Call{Name: tt.name, Input: json.RawMessage(`{}`)}
		if _, got := servers.Deny(call); got != tt.denied {
			t.Errorf("Deny(%s) = %v, want %v", tt.name, got, tt.denied)
		}
		if got := servers.Allowed(call, tools.ModeDefault); got != tt.allow {
			t.Errorf("Allowed(%s) = %v, want %v", tt.name, got, tt.allow)
		}
	}
	// mcp__* covers every MCP tool (a deny rule of them all must not fail open); rules
	// too short to name a server cover none and do not panic.
	all := New(w, []string{"mcp__*"}, []string{"mcp__*", "mcp__", "mcp___*", "mcp____*"})
	for _, name := range []string{"mcp__web__fetch", "mcp__fs__read"} {
		call := tools.Call{Name: name, Input: json.RawMessage(`{}`)}
		if _, denied := all.Deny(call); !denied {
			t.Errorf("Deny(%s) under mcp__* = false, want true", name)
		}
	}
	short := New(w, []string{"mcp__", "mcp___*", "mcp____*", "mcp_*"}, nil)
	if call := (tools.Call{Name: "mcp__web__fetch", Input: json.RawMessage(`{}`)}); short.Allowed(call, tools.ModeDefault) {
		t.Errorf("a rule naming no server allowed %s", call.Name)
	}
	if r := ParseRule(" Bash( npm run:* ) "); r.Tool != tools.NameShell || r.Pattern != "npm run:*" {
		t.Errorf("ParseRule = %+v", r)
	}
	if !ParseRule("Bash(*)").Whole() || ParseRule("Write(docs/**)").Whole() {
		t.Error("Whole")
	}
	var nilRules *Rules
	if _, denied := nilRules.Deny(shellCall("rm x")); denied || nilRules.Allowed(shellCall("ls"), tools.ModeYolo) {
		t.Error("nil rules decided something")
	}
	if agent := rules.WithDeny([]string{"Read(docs/**)"}); func() bool { _, d := agent.Deny(fileCall(tools.NameReadFile, "docs/a.md")); return !d }() {
		t.Error("WithDeny did not add the rule")
	} else if _, d := rules.Deny(fileCall(tools.NameReadFile, "docs/a.md")); d {
		t.Error("WithDeny changed its receiver")
	}
}

func TestWildcard(t *testing.T) {
	t.Parallel()
	tests := []struct {
		p, s string
		want bool
	}{
		{"*", "", true}, {"a*", "abc", true}, {"*c", "abc", true}, {"a*c", "abxc", true},
		{"a*c", "abcd", false}, {"git * main", "git push origin main", true}, {"ls *", "lsof", false},
		{"a**b", "ab", true}, {"", "", true}, {"", "a", false}, {"a?", "a?", true},
	}
	for _, tt := range tests {
		if got := wildcard(tt.p, tt.s); got != tt.want {
			t.Errorf("wildcard(%q, %q) = %v, want %v", tt.p, tt.s, got, tt.want)
		}
	}
}

// BenchmarkShellAllowed is the cost of one approval by rule: parse, walk, match.
func BenchmarkShellAllowed(b *testing.B) {
	rules := New(workspace(b), []string{"Bash(git status)", "Bash(npm run test:*)", "Bash(echo:*)", "Write(docs/**)"}, []string{"Bash(rm:*)"})
	call := shellCall("npm run test -- --grep 'a b' && echo done > docs/log.txt | echo $(git status)")
	for b.Loop() {
		if !rules.Allowed(call, tools.ModeDefault) {
			b.Fatal("not allowed")
		}
	}
}
