package permission

import (
	"encoding/json"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/stoke-cli/stoke/agents/shellcmd"
	"github.com/stoke-cli/stoke/agents/tools"
)

// FuzzRules runs the matcher on arbitrary commands and rules: it never panics, a
// command that does not parse is never approved (not even by the whole-tool rule), a
// denied command is never approved, and a command followed by one a deny rule covers is
// refused.
func FuzzRules(f *testing.F) {
	for _, s := range [][3]string{
		{"echo a; touch pwned", "Bash(echo:*)", "Bash(touch:*)"},
		{"echo $(rm x)", "Bash(echo:*)", "Bash(rm:*)"},
		{"echo 'unterminated", "Bash(echo:*)", ""},
		{"bash -c 'rm -rf x' > docs/y", "Bash(bash:*)", "Write(docs/**)"},
		{"cat <(ls) | tee a >> b 2>&1", "Bash(cat:*)", "Read(a)"},
		{"f() { g; }; f & wait", "Bash(f)", "Bash(g)"},
		{"for i in $(seq 3); do echo $i; done", "Bash(seq:*)", "Bash(git * main)"},
		{"mcp__srv__tool", "mcp__*", "mcp__srv"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	w := workspace(f)
	f.Fuzz(func(t *testing.T, command, allow, deny string) {
		rules := New(w, []string{allow, "Bash"}, []string{deny})
		call := shellCall(command)
		command = gjson.GetBytes(call.Input, "command").String() // what the tool runs: valid UTF-8
		// An MCP call under the same rules: never a panic, whatever the rule's text.
		mcpCall := tools.Call{Name: "mcp__srv__tool", Input: json.RawMessage(`{}`)}
		rules.Deny(mcpCall)
		rules.Allowed(mcpCall, tools.ModeDefault)
		// The command's text as a path of each file tool: path rules never panic either,
		// and a path they deny is never approved.
		for _, tool := range []string{tools.NameWriteFile, tools.NameEdit, tools.NameReadFile, tools.NameGlob, tools.NameGrep} {
			fc := fileCall(tool, command)
			_, d := rules.Deny(fc)
			if a := rules.Allowed(fc, tools.ModeDefault); d && a {
				t.Fatalf("%s %q is denied and approved", tool, command)
			}
		}
		_, denied := rules.Deny(call)
		allowed := rules.Allowed(call, tools.ModeAutoEdit)
		if _, err := shellcmd.Parse(command); err != nil && allowed {
			t.Fatalf("%q does not parse (%v) but was approved", command, err)
		}
		if denied && allowed {
			t.Fatalf("%q is denied and approved", command)
		}
		if !denied {
			return
		}
		// Whatever comes before it, a denied command stays denied.
		for _, prefix := range []string{"true; ", "true && ", "true | ", "false || ", "(true)\n"} {
			if _, d := rules.Deny(shellCall(prefix + command)); !d {
				if _, err := shellcmd.Parse(prefix + command); err == nil {
					t.Fatalf("%q is denied but %q is not", command, prefix+command)
				}
			}
		}
	})
}
