// Package style turns house rules of the whiteboard (STYLE.md) into a test, so that they
// are kept by CI rather than by hand: the direction of imports between packages, no
// package-level state, a doc for every package, the shape the agents and headless
// packages were given (a registry.go that stays small, a controller with methods of its
// own, an SDK host that imports nothing of headless), and one owner per vocabulary and
// default (the approval modes spelled only by tools.Mode, the caps' defaults only in
// agents).
package style

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// pkg is one directory of Go files of the module.
type pkg struct {
	rel   string // the import path relative to the module ("" for the module's root)
	files map[string]*ast.File
	// imports maps each import of the module's own packages (relative) to the first
	// non-test file that imports it.
	imports map[string]string
	doc     bool // a file (a non-test one, unless the package is only tests) has a package doc
	fset    *token.FileSet
}

// loadModule parses every Go file of the module, test files included, with comments.
func loadModule(t *testing.T) (root, module string, pkgs map[string]*pkg) {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	module = modulePath(t, filepath.Join(root, "go.mod"))
	pkgs = map[string]*pkg{}
	fset := token.NewFileSet()
	nonTestDoc := map[string]bool{}
	testDoc := map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		rel = filepath.ToSlash(rel)
		if rel == "." {
			rel = ""
		}
		p := pkgs[rel]
		if p == nil {
			p = &pkg{rel: rel, files: map[string]*ast.File{}, imports: map[string]string{}, fset: fset}
			pkgs[rel] = p
		}
		isTest := strings.HasSuffix(name, "_test.go")
		fileRel := filepath.ToSlash(filepath.Join(rel, name))
		p.files[fileRel] = f
		if isTest {
			testDoc[rel] = testDoc[rel] || f.Doc != nil
			return nil
		}
		nonTestDoc[rel] = nonTestDoc[rel] || f.Doc != nil
		for _, imp := range f.Imports {
			ip, _ := strconv.Unquote(imp.Path.Value)
			if ip == module || strings.HasPrefix(ip, module+"/") {
				dep := strings.TrimPrefix(strings.TrimPrefix(ip, module), "/")
				if _, seen := p.imports[dep]; !seen {
					p.imports[dep] = fileRel
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for rel, p := range pkgs {
		onlyTests := true
		for name := range p.files {
			if !strings.HasSuffix(name, "_test.go") {
				onlyTests = false
			}
		}
		p.doc = nonTestDoc[rel] || (onlyTests && testDoc[rel])
	}
	return root, module, pkgs
}

func modulePath(t *testing.T, gomod string) string {
	t.Helper()
	f, err := os.Open(gomod)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m, ok := strings.CutPrefix(sc.Text(), "module "); ok {
			return strings.TrimSpace(m)
		}
	}
	t.Fatal("go.mod names no module")
	return ""
}

// matches reports whether the package rel is matched by pattern: a package ("agents"),
// or a package and everything below it ("agents/..."), or everything ("...").
func matches(pattern, rel string) bool {
	if pattern == "..." {
		return true
	}
	if tree, ok := strings.CutSuffix(pattern, "/..."); ok {
		return rel == tree || strings.HasPrefix(rel, tree+"/")
	}
	return rel == pattern
}

func matchesAny(patterns []string, rel string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return matches(p, rel) })
}

// importRule forbids the packages from to import the packages to, except the packages
// except. Importing a package below oneself is always allowed.
type importRule struct {
	from, to []string
	except   []string
	why      string
}

// importRules are the import direction of the whiteboard: cmd → headless → agents →
// (agents/llm, agents/tools, streamjson, ...). Nothing imports cmd or headless from below.
func importRules() []importRule {
	return []importRule{
		{from: []string{"..."}, to: []string{"cmd/..."}, except: []string{""},
			why: "nothing imports cmd: only main does"},
		{from: []string{"..."}, to: []string{"headless/..."}, except: []string{"", "cmd/...", "headless/acp/..."},
			why: "nothing imports headless from below (only cmd, main and the ACP server, an entry point that serves headless sessions, are above it)"},
		{from: []string{"headless/..."}, to: []string{"headless/acp/..."}, except: []string{"headless/acp/..."},
			why: "the ACP server is an entry point above headless: only cmd imports it"},
		{from: []string{"headless/sdkhost/..."}, to: []string{"headless/..."}, except: []string{"headless/sdkhost/..."},
			why: "the SDK host imports nothing of headless"},
		{from: []string{"agents/tools/...", "agents/hooks/...", "agents/trace/...", "streamjson/..."},
			to:  []string{"agents", "agents/store/...", "agents/catalog/...", "agents/runtime/...", "agents/worktree/..."},
			why: "tools, hooks, trace and streamjson sit below agents"},
		{from: []string{"agents/runtime/..."}, to: []string{"agents", "agents/catalog/...", "agents/worktree/..."},
			why: "the agent loop knows no task: agents/runtime imports nothing of the registry, the subagent types or the worktrees"},
		{from: []string{"agents/catalog/..."}, to: []string{"agents", "agents/runtime/...", "agents/worktree/..."},
			why: "the subagent types run nothing: agents/catalog imports neither the registry nor the agent loop"},
		{from: []string{"agents/worktree/..."}, to: []string{"agents", "agents/catalog/...", "agents/runtime/..."},
			why: "a worktree knows no task, type or agent loop"},
		{from: []string{"agents/llm/..."}, to: []string{"streamjson/..."},
			why: "providers do not import streamjson: the runtime turns model events into stream events"},
		{from: []string{"agents/llm"}, to: []string{"agents/..."},
			why: "the model vocabulary imports nothing of agents"},
	}
}

// forbidden returns why the package from may not import dep ("" when it may).
func forbidden(from, dep string) string {
	if from != "" && strings.HasPrefix(dep, from+"/") {
		return "" // downward, into one's own tree
	}
	for _, r := range importRules() {
		if matchesAny(r.from, from) && matchesAny(r.to, dep) && !matchesAny(r.except, from) {
			return r.why
		}
	}
	return ""
}

func TestImportDirection(t *testing.T) {
	t.Parallel()
	_, _, pkgs := loadModule(t)
	checked := 0
	for _, p := range sorted(pkgs) {
		for dep, file := range p.imports {
			checked++
			if why := forbidden(p.rel, dep); why != "" {
				t.Errorf("%s imports %s: %s", file, dep, why)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no import of the module's own packages found: the walk found nothing")
	}
}

// TestImportRulesBite makes sure each rule forbids what it says, on made-up imports.
func TestImportRulesBite(t *testing.T) {
	t.Parallel()
	cases := map[[2]string]bool{
		{"agents", "headless"}:                  true,
		{"agents/store", "cmd"}:                 true,
		{"headless", "cmd"}:                     true,
		{"headless/sdkhost", "headless"}:        true,
		{"agents/tools", "agents"}:              true,
		{"streamjson", "agents"}:                true,
		{"agents/hooks", "agents/store"}:        true,
		{"agents/llm/openai", "streamjson"}:     true,
		{"agents/llm", "agents/tools"}:          true,
		{"agents/runtime", "agents"}:            true,
		{"agents/runtime", "agents/catalog"}:    true,
		{"agents/runtime", "agents/worktree"}:   true,
		{"agents/catalog", "agents"}:            true,
		{"agents/catalog", "agents/runtime"}:    true,
		{"agents/worktree", "agents"}:           true,
		{"agents/worktree", "agents/runtime"}:   true,
		{"agents/tools", "agents/runtime"}:      true,
		{"agents/trace", "agents/catalog"}:      true,
		{"agents", "agents/runtime"}:            false,
		{"agents", "agents/catalog"}:            false,
		{"agents/runtime", "agents/tools"}:      false,
		{"agents/runtime", "agents/trace"}:      false,
		{"agents/catalog", "agents/hooks"}:      false,
		{"headless", "agents/runtime"}:          false,
		{"cmd", "headless"}:                     false,
		{"", "cmd"}:                             false,
		{"headless", "headless/sdkhost"}:        false,
		{"headless/sdkhost", "agents"}:          false,
		{"agents", "agents/store"}:              false,
		{"agents/tools", "agents/llm"}:          false,
		{"streamjson", "agents/llm"}:            false,
		{"agents/llm/openai", "agents/llm"}:     false,
		{"agents/store", "agents/internal/fsx"}: false,
	}
	for pair, want := range cases {
		from, dep := pair[0], pair[1]
		if got := forbidden(from, dep) != ""; got != want {
			t.Errorf("%q importing %q: forbidden = %v, want %v", from, dep, got, want)
		}
	}
}

// Package-level variables are state shared by every caller; the only ones allowed are
// the kinds that are never written: sentinel errors, compiled regular expressions (or
// ones compiled on first use: sync.OnceValue of a func that only returns
// regexp.MustCompile(...), so that start-up does not pay for them), interface
// assertions (var _ I = ...) and files embedded with //go:embed (a tool's description).
func TestNoPackageState(t *testing.T) {
	t.Parallel()
	_, _, pkgs := loadModule(t)
	for _, file := range nonTestFiles(pkgs) {
		for _, d := range file.f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				if embedded(gd, vs) {
					continue
				}
				for i, id := range vs.Names {
					if why := allowedVar(id, vs, i); why != "" {
						t.Errorf("%s: package-level var %s: %s", file.name, id.Name, why)
					}
				}
			}
		}
	}
}

// embedded reports whether the var spec vs of gd is a file embedded with //go:embed: a
// string or a byte slice the compiler fills in, with the directive right above it (on the
// spec in a var block, on the declaration otherwise).
func embedded(gd *ast.GenDecl, vs *ast.ValueSpec) bool {
	doc := vs.Doc
	if doc == nil && len(gd.Specs) == 1 {
		doc = gd.Doc
	}
	if doc == nil || len(vs.Names) != 1 || len(vs.Values) != 0 {
		return false
	}
	directive := slices.ContainsFunc(doc.List, func(c *ast.Comment) bool { return strings.HasPrefix(c.Text, "//go:embed ") })
	switch typ := vs.Type.(type) {
	case *ast.Ident:
		return directive && typ.Name == "string"
	case *ast.ArrayType:
		elem, ok := typ.Elt.(*ast.Ident)
		return directive && typ.Len == nil && ok && elem.Name == "byte"
	}
	return false
}

// allowedVar says why the i-th name of a var spec is not an allowed package-level var
// ("" when it is).
func allowedVar(id *ast.Ident, vs *ast.ValueSpec, i int) string {
	if id.Name == "_" {
		return "" // an interface assertion
	}
	if i >= len(vs.Values) {
		return "declared without a value: it is state"
	}
	call, ok := vs.Values[i].(*ast.CallExpr)
	if !ok {
		return "only sentinel errors, regexps and interface assertions may be package-level vars"
	}
	switch callee(call) {
	case "errors.New", "fmt.Errorf":
		if strings.HasPrefix(id.Name, "Err") || strings.HasPrefix(id.Name, "err") {
			return ""
		}
		return "a sentinel error is named Err… (or err…)"
	case "regexp.MustCompile":
		return ""
	case "sync.OnceValue":
		if lazyRegexp(call) {
			return ""
		}
	}
	return "only sentinel errors, regexps and interface assertions may be package-level vars"
}

// lazyRegexp reports whether call, a call of sync.OnceValue, passes a func literal whose
// body only returns regexp.MustCompile(...).
func lazyRegexp(call *ast.CallExpr) bool {
	if len(call.Args) != 1 {
		return false
	}
	fn, ok := call.Args[0].(*ast.FuncLit)
	if !ok || len(fn.Body.List) != 1 {
		return false
	}
	ret, ok := fn.Body.List[0].(*ast.ReturnStmt)
	if !ok || len(ret.Results) != 1 {
		return false
	}
	inner, ok := ret.Results[0].(*ast.CallExpr)
	return ok && callee(inner) == "regexp.MustCompile"
}

func callee(call *ast.CallExpr) string {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	x, ok := sel.X.(*ast.Ident)
	if !ok {
		return ""
	}
	return x.Name + "." + sel.Sel.Name
}

func TestAllowedVarKinds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src  string
		want bool
	}{
		{`var ErrX = errors.New("x")`, true},
		{`var errY = fmt.Errorf("y: %w", ErrX)`, true},
		{`var re = regexp.MustCompile("a")`, true},
		{`var re = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("a") })`, true},
		{`var m = sync.OnceValue(func() map[string]int { return map[string]int{} })`, false},
		{`var re = sync.OnceValue(func() *regexp.Regexp { n++; return regexp.MustCompile("a") })`, false},
		{`var _ io.Reader = (*T)(nil)`, true},
		{`var cache = map[string]int{}`, false},
		{`var count int`, false},
		{`var Default = New()`, false},
		{`var notAnError = errors.New("x")`, false},
		{"//go:embed a.md\nvar desc string", true},
		{"var (\n\t//go:embed a.md\n\tdesc string\n)", true},
		{"//go:embed a.png\nvar img []byte", true},
		{"// not a directive: go:embed a.md\nvar desc string", false},
		{"//go:embed a.md\nvar n int", false},
		{"//go:embed a.md\nvar desc = \"x\"", false},
	}
	for _, tt := range tests {
		f, err := parser.ParseFile(token.NewFileSet(), "x.go", "package x\n"+tt.src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		gd := f.Decls[0].(*ast.GenDecl)
		vs := gd.Specs[0].(*ast.ValueSpec)
		if got := embedded(gd, vs) || allowedVar(vs.Names[0], vs, 0) == ""; got != tt.want {
			t.Errorf("%s: allowed = %v, want %v", tt.src, got, tt.want)
		}
	}
}

// Every package says what it is for (go doc shows it).
func TestEveryPackageHasADoc(t *testing.T) {
	t.Parallel()
	_, _, pkgs := loadModule(t)
	for _, p := range sorted(pkgs) {
		if !p.doc {
			name := p.rel
			if name == "" {
				name = "the module's root"
			}
			t.Errorf("package %s has no package doc comment", name)
		}
	}
}

// The caps of the shape targets.
const (
	maxRegistryLines   = 400 // agents/registry.go has fewer
	maxControllerLines = 400 // each agents/controller*.go has at most
	maxSessionMethods  = 25  // headless.session has at most
	maxHeadlessFunc    = 80  // lines of a function of package headless, at most
)

// The targets of the refactors that gave the registry, the controller, the SDK host, the
// agent loop and the session their seams.
func TestShapeTargets(t *testing.T) {
	t.Parallel()
	root, _, pkgs := loadModule(t)
	if n := countLines(t, filepath.Join(root, "agents", "registry.go")); n >= maxRegistryLines {
		t.Errorf("agents/registry.go has %d lines, want fewer than %d: give the new part a file of its own", n, maxRegistryLines)
	}
	agents := pkgs["agents"]
	var controllers []string
	methods := 0
	for _, name := range slices.Sorted(maps.Keys(agents.files)) {
		base := strings.TrimPrefix(name, "agents/")
		if strings.HasSuffix(base, "_test.go") {
			continue
		}
		if strings.HasPrefix(base, "def") {
			t.Errorf("%s: the subagent types live in agents/catalog, not in def*.go files of agents", name)
		}
		if !strings.HasPrefix(base, "controller") {
			continue
		}
		controllers = append(controllers, name)
		if n := countLines(t, filepath.Join(root, name)); n > maxControllerLines {
			t.Errorf("%s has %d lines, want at most %d: the controller's files are split by concern", name, n, maxControllerLines)
		}
		for _, problem := range controllerProblems(name, agents.files[name]) {
			t.Error(problem)
		}
		methods += methodCount("controller", agents.files[name])
	}
	if methods == 0 {
		t.Errorf("agents/controller*.go (%v) declare no controller methods", controllers)
	}
	// The controller never reaches back into the registry (and its lock): what they share
	// is the taskEnv, which holds no registry either.
	for _, name := range []string{"agents/env.go", "agents/runner.go"} {
		f := agents.files[name]
		if f == nil {
			t.Fatalf("%s not found", name)
		}
		for _, use := range namesRegistry(f) {
			t.Errorf("%s: %s names the Registry: a task's controller reaches the registry only through taskEnv's callbacks", name, use)
		}
	}
	// The agent loop knows no task: not even the task tools' names.
	names := taskToolNames(t, agents)
	rt := pkgs["agents/runtime"]
	if rt == nil {
		t.Fatal("agents/runtime not found")
	}
	for _, file := range nonTestFiles(map[string]*pkg{"agents/runtime": rt}) {
		for _, use := range namesTaskTools(file.f, names) {
			t.Errorf("%s: %s: the agent loop is handed an ordered-tools policy; it never names a task tool", file.name, use)
		}
	}
	// headless.session holds the parts and runs the loop; an assembler builds the parts.
	headless := pkgs["headless"]
	if n := methodCount("session", filesOf(headless)...); n > maxSessionMethods {
		t.Errorf("headless.session has %d methods, want at most %d: what builds the run's parts belongs to the assembler", n, maxSessionMethods)
	}
	for _, file := range nonTestFiles(map[string]*pkg{"headless": headless}) {
		for _, fn := range longFuncs(headless.fset, file.f, maxHeadlessFunc) {
			t.Errorf("%s: %s, want at most %d lines", file.name, fn, maxHeadlessFunc)
		}
	}
	sdkhost := pkgs["headless/sdkhost"]
	if sdkhost == nil {
		t.Fatal("headless/sdkhost not found")
	}
	for dep, file := range sdkhost.imports {
		if matches("headless/...", dep) && !matches("headless/sdkhost/...", dep) {
			t.Errorf("%s imports %s: the SDK host imports nothing of headless", file, dep)
		}
	}
}

// filesOf returns the non-test files of p.
func filesOf(p *pkg) []*ast.File {
	var out []*ast.File
	for _, file := range nonTestFiles(map[string]*pkg{p.rel: p}) {
		out = append(out, file.f)
	}
	return out
}

// controllerProblems returns what in f, a file of the controller, breaks its shape: a
// method of the Registry, or a declaration that names the Registry.
func controllerProblems(name string, f *ast.File) []string {
	var out []string
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv != nil && receiver(fd) == "Registry" {
			out = append(out, fmt.Sprintf("%s: (*Registry).%s: the controller's files hold the controller's methods", name, fd.Name.Name))
		}
	}
	for _, use := range namesRegistry(f) {
		out = append(out, fmt.Sprintf("%s: %s names the Registry: a task's controller reaches the registry only through taskEnv's callbacks", name, use))
	}
	return out
}

// methodCount counts the methods of the type named typ in files.
func methodCount(typ string, files ...*ast.File) int {
	n := 0
	for _, f := range files {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv != nil && receiver(fd) == typ {
				n++
			}
		}
	}
	return n
}

// longFuncs returns each function of f longer than max lines, with its length.
func longFuncs(fset *token.FileSet, f *ast.File, max int) []string {
	var out []string
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > max {
			name := fd.Name.Name
			if fd.Recv != nil {
				name = receiver(fd) + "." + name
			}
			out = append(out, fmt.Sprintf("func %s has %d lines", name, n))
		}
	}
	return out
}

// taskToolNames returns the names of the task tools: the values of the Tool… constants
// of agents/tasktools.go, and the constants' own names.
func taskToolNames(t *testing.T, agents *pkg) []string {
	t.Helper()
	f := agents.files["agents/tasktools.go"]
	if f == nil {
		t.Fatal("agents/tasktools.go not found")
	}
	var names []string
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, id := range vs.Names {
				if !strings.HasPrefix(id.Name, "Tool") || i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					v, _ := strconv.Unquote(lit.Value)
					names = append(names, v, id.Name)
				}
			}
		}
	}
	if len(names) == 0 {
		t.Fatal("agents/tasktools.go declares no Tool… constants")
	}
	return names
}

// namesTaskTools returns each place f names one of names: a string literal or an
// identifier that is one, or a comment that spells one that could be nothing else (a
// name with an underscore, or a constant's name).
func namesTaskTools(f *ast.File, names []string) []string {
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BasicLit:
			if v, err := strconv.Unquote(n.Value); err == nil && n.Kind == token.STRING && slices.Contains(names, v) {
				out = append(out, fmt.Sprintf("the string %q", v))
			}
		case *ast.Ident:
			if slices.Contains(names, n.Name) {
				out = append(out, "the name "+n.Name)
			}
		}
		return true
	})
	for _, cg := range f.Comments {
		for _, name := range names {
			if (strings.Contains(name, "_") || strings.HasPrefix(name, "Tool")) && strings.Contains(cg.Text(), name) {
				out = append(out, fmt.Sprintf("a comment naming %s", name))
			}
		}
	}
	return out
}

// TestShapeRulesBite makes sure the shape checks find what they say, on made-up files.
func TestShapeRulesBite(t *testing.T) {
	t.Parallel()
	parse := func(src string) (*token.FileSet, *ast.File) {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "x.go", "package x\n"+src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		return fset, f
	}
	_, ctl := parse("func (c *controller) a() {}\nfunc (r *Registry) b() {}\nfunc c(r *Registry) {}\nfunc (c controller) d() {}")
	if got := controllerProblems("x.go", ctl); len(got) != 3 { // b is a Registry method and names it; c names it
		t.Errorf("controllerProblems = %q, want 3", got)
	}
	if n := methodCount("controller", ctl); n != 2 {
		t.Errorf("methodCount = %d, want 2", n)
	}
	fset, long := parse("func short() {\n}\nfunc (s *session) long() {\n" + strings.Repeat("\t_ = 1\n", 80) + "}")
	if got := longFuncs(fset, long, 80); len(got) != 1 || !strings.Contains(got[0], "session.long has 82 lines") {
		t.Errorf("longFuncs = %q, want session.long alone", got)
	}
	names := []string{"task", "ToolTask", "send_message", "ToolSendMessage"}
	tests := []struct {
		src  string
		want int
	}{
		{`func f(n string) bool { return n == "send_message" }`, 1},
		{`var x = agents.ToolTask`, 1},
		{"// admitted like a send_message call\nfunc f() {}", 1},
		{`const k = "task"`, 1},
		{"// one task at a time: the Admitted calls of a reply\nfunc f(order ToolOrder) {}", 0},
		{`var s = "a task tool"`, 0},
	}
	for _, tt := range tests {
		_, f := parse(tt.src)
		if got := namesTaskTools(f, names); len(got) != tt.want {
			t.Errorf("%s: namesTaskTools = %q, want %d", tt.src, got, tt.want)
		}
	}
}

// namesRegistry returns the top-level declarations of f that name the Registry type (in
// a field, a parameter, a variable, a conversion).
func namesRegistry(f *ast.File) []string {
	var out []string
	for _, d := range f.Decls {
		named := false
		ast.Inspect(d, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && id.Name == "Registry" {
				named = true
			}
			return !named
		})
		if !named {
			continue
		}
		switch d := d.(type) {
		case *ast.FuncDecl:
			out = append(out, "func "+d.Name.Name)
		case *ast.GenDecl:
			out = append(out, "a "+d.Tok.String()+" declaration")
		}
	}
	return out
}

func receiver(fd *ast.FuncDecl) string {
	typ := fd.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(data), "\n")
}

func sorted(pkgs map[string]*pkg) []*pkg {
	out := make([]*pkg, 0, len(pkgs))
	for _, p := range pkgs {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *pkg) int { return strings.Compare(a.rel, b.rel) })
	return out
}

// vocabulary is a set of string values one type owns: only the owner's package spells
// them (in its non-test files); everyone else names its constants.
type vocabulary struct {
	owner  string // the package (relative), not its sub-packages
	values []string
	why    string
}

// vocabularies are the typed vocabularies of the run: the approval modes (in stoke's and
// Claude Code's words), the continuations of a task, the background policies.
func vocabularies() []vocabulary {
	return []vocabulary{
		{owner: "agents/tools", values: []string{"auto-edit", "yolo", "acceptEdits", "bypassPermissions"},
			why: "an approval mode is a tools.Mode: use its constants, ParseMode, ParsePermissionMode, PermissionMode"},
		{owner: "streamjson", values: []string{"fresh", "resident", "revived"},
			why: "a continuation is a streamjson.Continuation: use its constants"},
		{owner: "headless", values: []string{"wait", "cancel"},
			why: "a background policy is a headless.BackgroundPolicy: use its constants"},
	}
}

// spelledVocabulary returns, for the file f of package rel, each string literal that
// spells a value of a vocabulary rel does not own, with why.
func spelledVocabulary(rel string, f *ast.File) []string {
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		s, err := strconv.Unquote(lit.Value)
		if err != nil {
			return true
		}
		for _, v := range vocabularies() {
			if rel != v.owner && slices.Contains(v.values, s) {
				out = append(out, fmt.Sprintf("%q: %s", s, v.why))
			}
		}
		return true
	})
	return out
}

func TestVocabularyOwners(t *testing.T) {
	t.Parallel()
	_, _, pkgs := loadModule(t)
	for _, file := range nonTestFiles(pkgs) {
		for _, why := range spelledVocabulary(file.pkg.rel, file.f) {
			t.Errorf("%s: %s", file.name, why)
		}
	}
}

// goFile is one file of a package.
type goFile struct {
	pkg  *pkg
	name string
	f    *ast.File
}

// nonTestFiles returns the non-test files of pkgs, in order.
func nonTestFiles(pkgs map[string]*pkg) []goFile {
	var out []goFile
	for _, p := range sorted(pkgs) {
		for _, name := range slices.Sorted(maps.Keys(p.files)) {
			if !strings.HasSuffix(name, "_test.go") {
				out = append(out, goFile{p, name, p.files[name]})
			}
		}
	}
	return out
}

// capDefaults returns the caps whose defaults package agents owns: the names X of its
// DefaultX constants in agents/config.go (MaxBackground, MaxTurns, ...).
func capDefaults(t *testing.T, pkgs map[string]*pkg) []string {
	t.Helper()
	f := pkgs["agents"].files["agents/config.go"]
	if f == nil {
		t.Fatal("agents/config.go not found")
	}
	var caps []string
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			for _, id := range spec.(*ast.ValueSpec).Names {
				if c, ok := strings.CutPrefix(id.Name, "Default"); ok && strings.HasPrefix(c, "Max") {
					caps = append(caps, c)
				}
			}
		}
	}
	if len(caps) == 0 {
		t.Fatal("agents/config.go declares no DefaultMax… constants")
	}
	return caps
}

// flagName is the flag of a cap: MaxBackground is max-background.
func flagName(c string) string {
	var b strings.Builder
	for i, r := range c {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('-')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// spelledDefaults returns each place the file f gives one of caps a number of its own
// (not 0, which leaves the default): a constant or variable named after the cap, a
// field of the cap's name, a flag of the cap's name defined with a number.
func spelledDefaults(f *ast.File, caps []string) []string {
	number := func(e ast.Expr) (string, bool) {
		lit, ok := e.(*ast.BasicLit)
		if !ok || lit.Kind != token.INT || lit.Value == "0" {
			return "", false
		}
		return lit.Value, true
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ValueSpec:
			for i, id := range n.Names {
				for _, c := range caps {
					if v, ok := number(valueAt(n, i)); ok && strings.Contains(strings.ToLower(id.Name), strings.ToLower(c)) {
						out = append(out, fmt.Sprintf("%s = %s", id.Name, v))
					}
				}
			}
		case *ast.KeyValueExpr:
			key, ok := n.Key.(*ast.Ident)
			if v, isNum := number(n.Value); ok && isNum && slices.Contains(caps, key.Name) {
				out = append(out, fmt.Sprintf("%s: %s", key.Name, v))
			}
		case *ast.CallExpr:
			if len(n.Args) < 2 {
				break
			}
			lit, ok := n.Args[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				break
			}
			name, _ := strconv.Unquote(lit.Value)
			for _, c := range caps {
				if v, ok := number(n.Args[1]); ok && name == flagName(c) {
					out = append(out, fmt.Sprintf("flag --%s defaults to %s", name, v))
				}
			}
		}
		return true
	})
	return out
}

func valueAt(vs *ast.ValueSpec, i int) ast.Expr {
	if i < len(vs.Values) {
		return vs.Values[i]
	}
	return nil
}

// The caps of a run's agents have their defaults in package agents alone: nothing else
// spells a number for one.
func TestDefaultsOnlyInAgents(t *testing.T) {
	t.Parallel()
	_, _, pkgs := loadModule(t)
	caps := capDefaults(t, pkgs)
	for _, file := range nonTestFiles(pkgs) {
		if file.pkg.rel == "agents" {
			continue
		}
		for _, what := range spelledDefaults(file.f, caps) {
			t.Errorf("%s: %s: the default of a cap lives in package agents (agents.Default…)", file.name, what)
		}
	}
}

// TestOwnershipRulesBite makes sure the vocabulary and default rules find what they say,
// on made-up files.
func TestOwnershipRulesBite(t *testing.T) {
	t.Parallel()
	caps := []string{"MaxRetained", "MaxTurns"}
	tests := []struct {
		rel, src string
		want     int
	}{
		{"cmd", `const mode = "yolo"`, 1},
		{"headless", `func f(m string) bool { return m == "auto-edit" || m == "bypassPermissions" }`, 2},
		{"agents/tools", `const ModeYolo = "yolo"`, 0},
		{"agents", `var kind = "revived"`, 1},
		{"cmd", `var p = "cancel"`, 1},
		{"headless", `var p = "cancel"`, 0},
		{"cmd", `var help = "plan | default | auto-edit | yolo"`, 0}, // prose, not a value
		{"cmd", `const maxRetained = 100`, 1},
		{"headless", `var o = Options{MaxRetained: 100, MaxTurns: 0}`, 1},
		{"cmd", `func f() { flags.Int("max-turns", 100, "cap") }`, 1},
		{"cmd", `func f() { flags.Int("max-turns", agents.DefaultMaxTurns, "cap") }`, 0},
		{"cmd", `var o = Options{MaxRetained: agents.DefaultMaxRetained}`, 0},
	}
	for _, tt := range tests {
		f, err := parser.ParseFile(token.NewFileSet(), "x.go", "package x\n"+tt.src, 0)
		if err != nil {
			t.Fatal(err)
		}
		got := append(spelledVocabulary(tt.rel, f), spelledDefaults(f, caps)...)
		if len(got) != tt.want {
			t.Errorf("%s in %s: found %q, want %d", tt.src, tt.rel, got, tt.want)
		}
	}
	if got := flagName("MaxForeground"); got != "max-foreground" {
		t.Errorf("flagName = %q", got)
	}
}

// unmapped names the packages of rels (module-relative, one level below agents/ or
// headless/) that the README's package map has no line for. The map is the fenced block of
// the "## Development" section; a package's line starts with its last element and a slash,
// indented under its parent's line.
func unmapped(readme string, rels []string) []string {
	_, dev, _ := strings.Cut(readme, "\n## Development")
	dev, _, _ = strings.Cut(dev, "\n## ")
	// The map is the fenced block (the odd pieces between fences) with a line for agents/.
	var block string
	for i, piece := range strings.Split(dev, "```") {
		if i%2 == 1 && strings.Contains(piece, "\nagents/") {
			block = piece
		}
	}
	lines := map[string]bool{}
	for _, l := range strings.Split(block, "\n") {
		if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(l, "  ") {
			lines[f[0]] = true
		}
	}
	var missing []string
	for _, rel := range rels {
		if _, name, _ := strings.Cut(rel, "/"); !lines[name+"/"] {
			missing = append(missing, rel)
		}
	}
	return missing
}

func TestReadmeMapsEveryPackage(t *testing.T) {
	t.Parallel()
	root, _, pkgs := loadModule(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var rels []string
	for _, p := range sorted(pkgs) {
		parent, rest, ok := strings.Cut(p.rel, "/")
		if !ok || (parent != "agents" && parent != "headless") || strings.Contains(rest, "/") || rest == "internal" {
			continue
		}
		for name := range p.files {
			if !strings.HasSuffix(name, "_test.go") {
				rels = append(rels, p.rel)
				break
			}
		}
	}
	if len(rels) < 10 {
		t.Fatalf("found only %d packages under agents/ and headless/: %v", len(rels), rels)
	}
	for _, rel := range unmapped(string(readme), rels) {
		t.Errorf("the README's package map (## Development) has no line for %s", rel)
	}
	// The check bites: a package the map does not name is reported.
	if got := unmapped("\n## Development\n  nowhere/ z\n```\nmake x\n  nowhere/ w\n```\n```\nagents/ t\n  store/   x\n```\n## Next\n  nowhere/ y\n", []string{"agents/store", "agents/nowhere"}); len(got) != 1 || got[0] != "agents/nowhere" {
		t.Errorf("unmapped on a planted map = %v, want [agents/nowhere]", got)
	}
}
