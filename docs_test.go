package proclock_test

// The docs against the code: README.md and docs/*.md name tests, Go
// identifiers, states and stale reasons, and docs/testing.md quotes the
// example module; each test here fails when something named or quoted is no
// longer in the code, so that the docs cannot rot unnoticed. (The options
// the docs name are checked in internal/cli's docs_test.go.)

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/proclock/proclock/internal/mdblock"
)

// docFiles returns README.md and docs/*.md, by name, with their text.
func docFiles(t *testing.T) map[string]string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join("docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{}
	for _, name := range append(names, "README.md") {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		docs[name] = string(b)
	}
	return docs
}

// sourceIndex is what the repository's Go files declare, read with
// go/parser, whatever their build tags.
type sourceIndex struct {
	// names maps a package name to its top-level names and, as
	// "Type.Member", its types' fields and methods; test files excluded.
	names map[string]map[string]bool
	// tests maps a _test.go file, by its path from the repository's root,
	// to the functions it declares.
	tests map[string]map[string]bool
	// literals holds every string literal of the non-test files.
	literals map[string]bool
	// states maps the values of package proclock's State constants to
	// their names.
	states map[string]string
}

func indexSource(t *testing.T) *sourceIndex {
	t.Helper()
	ix := &sourceIndex{names: map[string]map[string]bool{}, tests: map[string]map[string]bool{},
		literals: map[string]bool{}, states: map[string]string{}}
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if strings.HasSuffix(path, "_test.go") {
			funcs := map[string]bool{}
			for _, decl := range f.Decls {
				if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil {
					funcs[fn.Name.Name] = true
				}
			}
			ix.tests[filepath.ToSlash(path)] = funcs
			return nil
		}
		ix.add(f, filepath.Dir(path) == ".")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

// add indexes one non-test file; root says it is package proclock's.
func (ix *sourceIndex) add(f *ast.File, root bool) {
	names := ix.names[f.Name.Name]
	if names == nil {
		names = map[string]bool{}
		ix.names[f.Name.Name] = names
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if s, err := strconv.Unquote(lit.Value); err == nil {
				ix.literals[s] = true
			}
		}
		return true
	})
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				names[d.Name.Name] = true
				continue
			}
			recv := d.Recv.List[0].Type
			if star, ok := recv.(*ast.StarExpr); ok {
				recv = star.X
			}
			if id, ok := recv.(*ast.Ident); ok {
				names[id.Name+"."+d.Name.Name] = true
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					names[s.Name.Name] = true
					ix.addMembers(names, s)
				case *ast.ValueSpec:
					for i, id := range s.Names {
						names[id.Name] = true
						if typ, ok := s.Type.(*ast.Ident); root && ok && typ.Name == "State" && i < len(s.Values) {
							if lit, ok := s.Values[i].(*ast.BasicLit); ok {
								v, _ := strconv.Unquote(lit.Value)
								ix.states[v] = id.Name
							}
						}
					}
				}
			}
		}
	}
}

// addMembers indexes a struct's fields and an interface's methods as
// "Type.Member".
func (ix *sourceIndex) addMembers(names map[string]bool, s *ast.TypeSpec) {
	var fields *ast.FieldList
	switch typ := s.Type.(type) {
	case *ast.StructType:
		fields = typ.Fields
	case *ast.InterfaceType:
		fields = typ.Methods
	default:
		return
	}
	for _, field := range fields.List {
		for _, id := range field.Names {
			names[s.Name.Name+"."+id.Name] = true
		}
		if len(field.Names) == 0 { // embedded: named by its type
			typ := field.Type
			if star, ok := typ.(*ast.StarExpr); ok {
				typ = star.X
			}
			if sel, ok := typ.(*ast.SelectorExpr); ok {
				names[s.Name.Name+"."+sel.Sel.Name] = true
			}
			if id, ok := typ.(*ast.Ident); ok {
				names[s.Name.Name+"."+id.Name] = true
			}
		}
	}
}

// anyPackage reports whether some package declares name.
func (ix *sourceIndex) anyPackage(name string) bool {
	for _, names := range ix.names {
		if names[name] {
			return true
		}
	}
	return false
}

// code returns the code in a markdown text: its inline code spans and its
// fenced blocks, fences and language tags left out.
func code(text string) []string {
	var pieces []string
	var prose strings.Builder
	var block []string
	in := false
	for line := range strings.Lines(text) {
		fence := strings.HasPrefix(strings.TrimSpace(line), "```")
		switch {
		case fence:
			if in {
				pieces = append(pieces, strings.Join(block, ""))
			}
			in, block = !in, nil
		case in:
			block = append(block, line)
		default:
			prose.WriteString(line)
		}
	}
	for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(prose.String(), -1) {
		pieces = append(pieces, m[1])
	}
	return pieces
}

var (
	// testRef is a test named with its file: `platform/judge_test.go`
	// TestJudge, and maybe a case of it in quotes, "other host".
	testRef = regexp.MustCompile("`([\\w./-]+_test\\.go)`\\s+((?:Test|Example|Fuzz|Benchmark)\\w*)(?:\\s+\"([^\"]+)\")?")
	// testName is any test, example, fuzz target or benchmark named
	// alone, not a method of something else (fstest.TestFS).
	testName = regexp.MustCompile(`(^|[^\w.])((?:Test|Example|Fuzz|Benchmark)(?:[A-Z_]\w*)?)\b`)
	// qualified is pkg.Name or pkg.Type.Member.
	qualified = regexp.MustCompile(`(?:^|[^\w.])([a-z]\w*)\.([A-Z]\w*)(?:\.([A-Z]\w*))?`)
	// member is Type.Member, unqualified.
	member = regexp.MustCompile(`(?:^|[^\w.])([A-Z]\w*)\.([A-Z]\w*)`)
	// sentinel is an error or a State named alone.
	sentinel = regexp.MustCompile(`(?:^|[^\w.])((?:Err|State)[A-Z]\w*)`)
)

// TestDocsNameExistingTests: every test the docs name exists. One named
// with its file is declared in that file, and a case given in quotes after
// it is a string in the files of that package's directory; one named alone
// is declared in some _test.go file of the repository.
func TestDocsNameExistingTests(t *testing.T) {
	ix := indexSource(t)
	all := map[string]bool{}
	for _, funcs := range ix.tests {
		for name := range funcs {
			all[name] = true
		}
	}
	refs := 0
	for doc, text := range docFiles(t) {
		for _, m := range testRef.FindAllStringSubmatch(text, -1) {
			refs++
			file, name, tc := m[1], m[2], strings.Join(strings.Fields(m[3]), " ")
			funcs, ok := ix.tests[file]
			switch {
			case !ok:
				t.Errorf("%s names %s in %s: no such test file", doc, name, file)
			case !funcs[name]:
				t.Errorf("%s names %s in %s: the file declares no such function", doc, name, file)
			case tc != "" && !dirMentions(t, filepath.Dir(file), strconv.Quote(tc)):
				t.Errorf("%s names the case %q of %s: no file of %s has that string", doc, tc, name, filepath.Dir(file))
			}
		}
		for _, m := range testName.FindAllStringSubmatch(text, -1) {
			if name := m[2]; !all[name] && strings.ContainsAny(name[len("Test"):], "ABCDEFGHIJKLMNOPQRSTUVWXYZ_") {
				t.Errorf("%s names %s: no _test.go file declares it", doc, name)
			}
		}
	}
	if refs < 20 {
		t.Fatalf("found %d references to tests by file; want those of docs/installation.md at least", refs)
	}
}

// dirMentions reports whether a .go file in dir contains s.
func dirMentions(t *testing.T, dir, s string) bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), s) {
			return true
		}
	}
	return false
}

// TestDocsNameExistingCode: every identifier of this repository's
// packages that the docs write in code (`proclock.ErrHeld`,
// `Options.AllowNetworkFS`, `ErrNotLockFile`, `StateHeld`, ...) is
// declared, so that a renamed error, option or state fails here.
func TestDocsNameExistingCode(t *testing.T) {
	ix := indexSource(t)
	checked := 0
	for doc, text := range docFiles(t) {
		for _, piece := range code(text) {
			for _, m := range qualified.FindAllStringSubmatch(piece, -1) {
				names, ok := ix.names[m[1]]
				if !ok || m[1] == "main" {
					continue // another module's package, or a variable
				}
				checked++
				if !names[m[2]] {
					t.Errorf("%s: %s.%s is not declared in package %s", doc, m[1], m[2], m[1])
				} else if m[3] != "" && !names[m[2]+"."+m[3]] && isType(names, m[2]) {
					t.Errorf("%s: %s.%s.%s: type %s has no such field or method", doc, m[1], m[2], m[3], m[2])
				}
			}
			for _, m := range member.FindAllStringSubmatch(piece, -1) {
				if ix.anyPackage(m[1]) {
					checked++
					if !ix.anyPackage(m[1] + "." + m[2]) {
						t.Errorf("%s: %s.%s: no type %s of this repository has such a field or method", doc, m[1], m[2], m[1])
					}
				}
			}
			for _, m := range sentinel.FindAllStringSubmatch(piece, -1) {
				checked++
				if !ix.anyPackage(m[1]) {
					t.Errorf("%s: %s is not declared in any package of this repository", doc, m[1])
				}
			}
		}
	}
	if checked < 40 {
		t.Fatalf("checked %d identifiers named in the docs; want many more", checked)
	}
}

// isType reports whether name is a type in names: one with members.
func isType(names map[string]bool, name string) bool {
	for n := range names {
		if strings.HasPrefix(n, name+".") {
			return true
		}
	}
	return false
}

// TestDocsStatesAndReasons: the states docs/command.md lists for
// `status --json` are proclock's States, all of them, and each stale
// reason it lists is a string the code gives.
func TestDocsStatesAndReasons(t *testing.T) {
	ix := indexSource(t)
	text := docFiles(t)[filepath.Join("docs", "command.md")]
	row := func(field string) []string {
		for line := range strings.Lines(text) {
			if strings.HasPrefix(line, "| `"+field+"` |") {
				var vals []string
				cols := strings.Split(line, "|")
				for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(cols[3], -1) {
					vals = append(vals, m[1])
				}
				return vals
			}
		}
		t.Fatalf("docs/command.md has no row for %s", field)
		return nil
	}
	documented := map[string]bool{}
	for _, s := range row("state") {
		documented[s] = true
		if _, ok := ix.states[s]; !ok {
			t.Errorf("docs/command.md lists the state %q; proclock has no such State", s)
		}
	}
	if len(ix.states) < 5 {
		t.Fatalf("found %d State constants in package proclock; want them all", len(ix.states))
	}
	for v, name := range ix.states {
		if !documented[v] {
			t.Errorf("proclock.%s (%q) is missing from docs/command.md's states", name, v)
		}
	}
	reasons := row("reason")
	if len(reasons) < 5 {
		t.Fatalf("docs/command.md's reasons: %q; want the stale ones at least", reasons)
	}
	for _, r := range reasons {
		if !ix.literals[r] {
			t.Errorf("docs/command.md lists the reason %q; no string of the code is that", r)
		}
	}
}

// TestTestingSnippetsAreTheExample: each Go block of docs/testing.md is
// found, as it is, in a file of the example module it quotes
// (examples/testing), which CI vets and tests.
func TestTestingSnippetsAreTheExample(t *testing.T) {
	snippetsAreQuoted(t, filepath.Join("docs", "testing.md"), 4, filepath.Join("examples", "testing"))
}

// TestWasmSnippetsAreTheCode: each Go block of docs/wasm.md is found, as it
// is, in the host it quotes (examples/wasmhost, whose tests run it beside
// guests in CI) or in the examples of wasmguest_test.go, which run here.
func TestWasmSnippetsAreTheCode(t *testing.T) {
	snippetsAreQuoted(t, filepath.Join("docs", "wasm.md"), 2, filepath.Join("examples", "wasmhost"), "wasmguest_test.go")
}

// snippetsAreQuoted fails unless each of doc's Go blocks, at least want of
// them, is in one of the Go files under roots (directories or files), as it
// is or indented as a whole by up to three tabs.
func snippetsAreQuoted(t *testing.T, doc string, want int, roots ...string) {
	t.Helper()
	var sources []string
	for _, root := range roots {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(path, ".go") {
				b, rerr := os.ReadFile(path)
				sources = append(sources, string(b))
				return rerr
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	blocks := goBlocks(docFiles(t)[doc])
	for i, snippet := range blocks {
		if !quotedIn(snippet, sources) {
			t.Errorf("%s's Go block %d is in no Go file of %s:\n%s", doc, i+1, strings.Join(roots, ", "), snippet)
		}
	}
	if len(blocks) < want {
		t.Fatalf("%s has %d Go blocks; want %d at least", doc, len(blocks), want)
	}
}

// goBlocks returns the fenced Go blocks of a markdown text, fences left out.
func goBlocks(text string) []string { return mdblock.Fenced(text, "go") }

// quotedIn reports whether snippet is in one of sources, as it is or with
// every line that is not blank indented by the same number of tabs (up to
// three): a block quoted from inside a function.
func quotedIn(snippet string, sources []string) bool {
	for indent := range 4 {
		var b strings.Builder
		for line := range strings.Lines(snippet) {
			if strings.TrimSpace(line) != "" {
				b.WriteString(strings.Repeat("\t", indent))
			}
			b.WriteString(line)
		}
		for _, src := range sources {
			if strings.Contains(src, b.String()) {
				return true
			}
		}
	}
	return false
}
