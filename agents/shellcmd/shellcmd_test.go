package shellcmd

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// render shows a script compactly: each command's words joined by spaces (a word that is
// not literal as «?»), "=" before a command that assigns; then each redirect.
func render(s *Script) []string {
	var out []string
	for _, c := range s.Commands {
		var ws []string
		for _, w := range c.Words {
			if w.Literal {
				ws = append(ws, w.Value)
			} else {
				ws = append(ws, "«?»")
			}
		}
		line := strings.Join(ws, " ")
		if c.Assigns {
			line = "=" + line
		}
		out = append(out, line)
	}
	for _, r := range s.Redirects {
		op := "<"
		if r.Write {
			op = ">"
		}
		t := r.Target.Value
		if !r.Target.Literal {
			t = "«?»"
		}
		out = append(out, op+t)
	}
	return out
}

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src  string
		want []string
	}{
		{"echo hi", []string{"echo hi"}},
		{"echo a; touch pwned", []string{"echo a", "touch pwned"}},
		{"echo a && rm b || ls", []string{"echo a", "rm b", "ls"}},
		{"cat x | grep y | wc -l", []string{"cat x", "grep y", "wc -l"}},
		{"(cd d && make)", []string{"cd d", "make"}},
		{"{ a; b; }", []string{"a", "b"}},
		{"echo $(touch p)", []string{"echo «?»", "touch p"}},
		{"echo `touch p`", []string{"echo «?»", "touch p"}},
		{"diff <(ls a) <(ls b)", []string{"diff «?» «?»", "ls a", "ls b"}},
		{"echoX=1; touch pwned", []string{"=", "touch pwned"}},
		{"X=1 make", []string{"=make"}},
		{"export PATH=/tmp", []string{"=export «?»"}},
		{"f() { rm x; }; f", []string{"rm x", "f"}},
		{"for i in a b; do echo $i; done", []string{"echo «?»"}},
		{"if test -f x; then cat x; fi", []string{"test -f x", "cat x"}},
		{"echo 'a; rm b' \"c d\" e\\ f", []string{"echo a; rm b c d e f"}},
		{`ech\o hi`, []string{"echo hi"}},
		{`"rm" -rf x`, []string{"rm -rf x"}},
		{"echo *.go ~/x {a,b} ?", []string{"echo «?» «?» «?» «?»"}},
		{"$CMD arg", []string{"«?» arg"}},
		{"echo hi > out.txt 2>&1", []string{"echo hi", ">out.txt"}},
		{"cat < in >> log &> all >| clob <> rw", []string{"cat", "<in", ">log", ">all", ">clob", ">rw"}},
		{"echo x >&file 2>&- <&3", []string{"echo x", ">file"}},
		{"cat <<EOF\n$(touch p)\nEOF", []string{"cat", "touch p"}},
		{"echo x > $F", []string{"echo x", ">«?»"}},
		{"", nil},
	}
	for _, tt := range tests {
		s, err := Parse(tt.src)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.src, err)
			continue
		}
		if diff := cmp.Diff(tt.want, render(s)); diff != "" {
			t.Errorf("Parse(%q) (-want +got):\n%s", tt.src, diff)
		}
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	for _, src := range []string{`echo "unterminated`, "echo $(", "if true; then", "a &&", "((", "echo 'x"} {
		if _, err := Parse(src); err == nil {
			t.Errorf("Parse(%q): no error", src)
		}
	}
}

func TestInner(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src            string
		want           string
		inner, literal bool
	}{
		{"bash -c 'rm x'", "rm x", true, true},
		{"/bin/sh -ec 'rm x'", "rm x", true, true},
		{"bash --norc -o pipefail -c 'rm x; ls'", "rm x; ls", true, true},
		{"bash -c -- 'rm x'", "rm x", true, true},
		{"bash -c \"$S\"", "", true, false},
		{"bash script.sh", "", false, false},
		{"bash", "", true, false}, // reads its commands from stdin
		{"sh -s a b", "", true, false},
		{"bash -x -", "", true, false},
		{"bash -- script.sh", "", false, false},
		{"bash -x script.sh arg", "", false, false},
		{"eval rm x", "rm x", true, true},
		{"eval \"$X\"", "", true, false},
		{"echo -c x", "", false, false},
		{"$SHELL -c x", "", false, false},
	}
	for _, tt := range tests {
		s, err := Parse(tt.src)
		if err != nil {
			t.Fatal(err)
		}
		got, inner, literal := s.Commands[0].Inner()
		if got != tt.want || inner != tt.inner || literal != tt.literal {
			t.Errorf("Inner(%q) = %q, %v, %v; want %q, %v, %v", tt.src, got, inner, literal, tt.want, tt.inner, tt.literal)
		}
	}
}

func TestUnwrapped(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src  string
		want string // "" when not ok
	}{
		{"rm x", "rm x"},
		{"/bin/rm x", "rm x"},
		{"command rm x", "rm x"},
		{"env -u HOME A=1 B=2 rm x", "rm x"},
		{"sudo -u root nice -n 5 /usr/bin/rm -rf x", "rm -rf x"},
		{"timeout -s KILL 10 rm x", "rm x"},
		{"xargs -I{} rm {}", ""}, // {} is not literal
		{"xargs -0 rm", "rm"},
		{"nohup time exec rm x", "rm x"},
		{"env $V rm x", ""},
		{"env", ""},
	}
	for _, tt := range tests {
		s, err := Parse(tt.src)
		if err != nil {
			t.Fatal(err)
		}
		u, ok := s.Commands[0].Unwrapped()
		got := ""
		if ok {
			got = render(&Script{Commands: []Command{u}})[0]
		}
		if got != tt.want {
			t.Errorf("Unwrapped(%q) = %q (ok %v), want %q", tt.src, got, ok, tt.want)
		}
	}
}
