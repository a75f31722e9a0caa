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
		// long options that take a value: the value is not the command
		{"xargs --max-args 1 rm", "rm"},
		{"xargs --max-args=1 rm", "rm"},
		{"xargs --max-a 1 rm", "rm"}, // getopt takes an unambiguous prefix
		{"xargs -n1 -0 -r rm", "rm"},
		{"xargs -0rn 1 rm", "rm"},
		{"xargs -i rm", "rm"}, // -i's value is attached or absent
		{"flock --wait 5 lk rm victim", "rm victim"},
		{"flock -w 5 lk rm victim", "rm victim"},
		{"ionice --class 2 rm victim", "rm victim"},
		{"ionice -c2 -n7 rm victim", "rm victim"},
		{"nice --adjustment 5 rm x", "rm x"},
		{"nice -10 rm x", "rm x"},
		{"timeout --signal KILL 10 rm x", "rm x"},
		{"timeout --kill-after=5 --preserve-status 10 rm x", "rm x"},
		{"sudo --user root --preserve-env rm x", "rm x"},
		{"sudo -E HOME=/x rm x", "rm x"},
		{"numactl --interleave all rm x", "rm x"},
		{"stdbuf --output L rm x", "rm x"},
		{"env --chdir /tmp rm x", "rm x"},
		{"env - PATH=/bin rm x", "rm x"},
		{"chroot --userspec 0:0 / rm x", "rm x"},
		{"taskset -c 0 rm x", "rm x"},
		{"chrt -f 10 rm x", "rm x"},
		{"busybox rm x", "rm x"},
		{"strace -f -o log rm x", "rm x"},
		// options no table lists, or whose value would be the command: unknown
		{"xargs --frobnicate 1 rm", ""},
		{"xargs --max 1 rm", ""}, // ambiguous: max-args, max-procs, max-chars, max-lines
		{"env -S 'rm -rf x'", ""},
		{"env --split-string='rm x'", ""},
		{"sudo -h host rm x", ""},
		{"timeout --verbose=x 10 rm", ""},
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

// The operands bash evaluates as arithmetic or as variable names run the commands their
// text holds; Parse lists them.
func TestEvaluated(t *testing.T) {
	t.Parallel()
	hidden := []string{
		`[[ 1 -eq 'a[$(touch PWNED)]' ]]`,
		`[[ 'a[$(touch PWNED)]' -lt 2 ]]`,
		`[[ -v 'a[$(touch PWNED)]' ]]`,
		`[[ -f x && 1 -ne "a[$(touch PWNED)]" ]]`,
		`test -v 'a[$(touch PWNED)]'`,
		`[ -v 'a[$(touch PWNED)]' ]`,
		"test -v 'a[`touch PWNED`]'",
		`printf -v 'a[$(touch PWNED)]' x`,
		`printf -v'a[$(touch PWNED)]' x`,
		`read 'a[$(touch PWNED)]' <<< 1`,
		`read -r -p prompt 'a[$(touch PWNED)]' <<< 1`,
		`read -a 'a[$(touch PWNED)]' <<< 1`,
		`command read 'a[$(touch PWNED)]' <<< 1`,
		`builtin printf -v 'a[$(touch PWNED)]' 1`,
		`declare 'a[$(touch PWNED)]=1'`,
		`declare -i x='a[$(touch PWNED)]'`,
		`export 'a[$(touch PWNED)]=1'`,
		`local a[$(touch PWNED)]=1`,
		`let 'x=a[$(touch PWNED)]'`,
		`(( x = 'a[$(touch PWNED)]' ))`,
		`unset 'a[$(touch PWNED)]'`,
		`mapfile 'a[$(touch PWNED)]' < /dev/null`,
	}
	for _, src := range hidden {
		s, err := Parse(src)
		if err != nil {
			t.Errorf("Parse(%q): %v", src, err)
			continue
		}
		if len(s.Evaluated) == 0 {
			t.Errorf("Parse(%q): no evaluated operand", src)
		}
	}
	plain := []string{
		`[[ $n -eq 3 ]]`, `[[ ${#a[@]} -gt 0 ]]`, `[[ -f 'a[1].txt' ]]`, `[[ $x == a[bc]* ]]`,
		`read -p "Enter [y/n]: " ans`, `printf '%s [x]\n' a`, `test -f 'x[1]'`, `declare x=1`,
		`export PATH=$(pwd)/bin`, `(( n += 1 ))`, `let n+=1`, `echo 'a[$(touch x)]'`,
	}
	for _, src := range plain {
		s, err := Parse(src)
		if err != nil {
			t.Errorf("Parse(%q): %v", src, err)
			continue
		}
		if len(s.Evaluated) != 0 {
			t.Errorf("Parse(%q): evaluated %q", src, s.Evaluated)
		}
	}
}
