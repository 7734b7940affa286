package agent

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
)

// maxUpwardShare bounds the share of the package's file-to-file links that run upward: a
// file using a name declared in a file that uses one of its own (a cycle between two
// files), or in supervisor.go, the top that wires the parts. Parts that reach back up are
// what keeps them from being packages of their own; lower it as they move out.
const maxUpwardShare = 0.12

// TestFileLinksRunDownward measures the links between the package's product files: file A
// links to file B when A uses a package-level name (type, func, var, const, method or
// field) declared in B. `go test -run TestFileLinksRunDownward -v` prints the figures.
func TestFileLinksRunDownward(t *testing.T) {
	links, upward := fileLinks(t)
	share := float64(upward) / float64(max(links, 1))
	t.Logf("%d file-to-file links, %d upward (%.0f%%)", links, upward, 100*share)
	if links == 0 {
		t.Fatal("found no links: is the test reading the package?")
	}
	if share > maxUpwardShare {
		t.Errorf("%.0f%% of the file links run upward, more than %.0f%%: pass a part what it needs instead of letting it reach back", 100*share, 100*maxUpwardShare)
	}
}

// fileLinks counts the distinct file-to-file links and those that run upward.
func fileLinks(t *testing.T) (links, upward int) {
	t.Helper()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
	conf := types.Config{Importer: exportDataImporter(t, fset)}
	pkg, err := conf.Check("github.com/agentd/agentd/daemon/agent", fset, files, info)
	if err != nil {
		t.Fatal(err)
	}
	edges := map[[2]string]bool{}
	for id, obj := range info.Uses {
		if obj.Pkg() != pkg || !obj.Pos().IsValid() {
			continue
		}
		if v, ok := obj.(*types.Var); ok && !v.IsField() && obj.Parent() != pkg.Scope() {
			continue // a local variable
		}
		if _, ok := obj.(*types.PkgName); ok || (obj.Parent() != nil && obj.Parent() != pkg.Scope()) {
			continue // a local name or an import
		}
		from, to := fset.Position(id.Pos()).Filename, fset.Position(obj.Pos()).Filename
		if from != to {
			edges[[2]string{from, to}] = true
		}
	}
	var up []string
	for e := range edges {
		if edges[[2]string{e[1], e[0]}] || e[1] == "supervisor.go" {
			upward++
			up = append(up, e[0]+" -> "+e[1])
		}
	}
	sort.Strings(up)
	for _, e := range up {
		t.Log("upward:", e)
	}
	return len(edges), upward
}

// The package stays split by responsibility: no type declares more than maxMethods
// methods, nor has more in its method set with the promoted ones, except a struct of
// embedded interfaces that declares nothing (Facade); and no file, tests included, runs
// past maxLines lines. A part that grows past either is a sign to split it again, not to
// raise the number. (The repository-wide limits are in internal/structure.)
const (
	maxMethods = 25
	maxLines   = 600
)

func TestPartsStaySmall(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	methods := map[string]int{}
	var syntax []*ast.File
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(src), "\n"); n > maxLines {
			t.Errorf("%s has %d lines, more than %d: split it by responsibility", name, n, maxLines)
		}
		if strings.HasSuffix(name, "_test.go") {
			continue // test types (fakes, harnesses) are not parts
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		syntax = append(syntax, f)
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil {
				continue
			}
			typ := fn.Recv.List[0].Type
			if star, ok := typ.(*ast.StarExpr); ok {
				typ = star.X
			}
			if id, ok := typ.(*ast.Ident); ok {
				methods[id.Name]++
			}
		}
	}
	if methods["Supervisor"] == 0 {
		t.Fatal("found no methods of Supervisor: is the test reading the package?")
	}
	for typ, n := range methods {
		if n > maxMethods {
			t.Errorf("%s declares %d methods, more than %d: give a responsibility its own type", typ, n, maxMethods)
		}
	}
	checkMethodSets(t, fset, syntax)
}

// checkMethodSets counts each type's whole method set, promoted methods included, so
// embedding cannot hide a god type behind small declarations.
func checkMethodSets(t *testing.T, fset *token.FileSet, files []*ast.File) {
	t.Helper()
	conf := types.Config{Importer: exportDataImporter(t, fset)}
	pkg, err := conf.Check("github.com/agentd/agentd/daemon/agent", fset, files, nil)
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[string]int{}
	for _, name := range pkg.Scope().Names() {
		tn, ok := pkg.Scope().Lookup(name).(*types.TypeName)
		if !ok || tn.IsAlias() {
			continue
		}
		typ := tn.Type()
		if _, isIface := typ.Underlying().(*types.Interface); !isIface {
			typ = types.NewPointer(typ)
		}
		sizes[name] = types.NewMethodSet(typ).Len()
		if sizes[name] > maxMethods {
			t.Errorf("%s has %d methods with the promoted ones, more than %d: reach its parts through fields, not embedding", name, sizes[name], maxMethods)
		}
	}
	if sizes["Supervisor"] == 0 {
		t.Fatal("Supervisor has no methods: is the test reading the package?")
	}
	largest := "Supervisor"
	for name, n := range sizes {
		if n > sizes[largest] || n == sizes[largest] && name < largest {
			largest = name
		}
	}
	t.Logf("the largest method set: %s, %d methods", largest, sizes[largest])
}

// exportDataImporter imports the package's dependencies from the compiler's export data,
// which `go list -export` finds in the build cache. Type-checking them all from source took
// 30 s of two shared cores a run; this takes about a second with a warm cache. The list is
// made once per test binary: the size and the file-link tests both read it.
func exportDataImporter(t *testing.T, fset *token.FileSet) types.Importer {
	t.Helper()
	exports, err := exportFiles()
	if err != nil {
		t.Fatal(err)
	}
	return importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok {
			return nil, os.ErrNotExist // names the package in the type checker's error
		}
		return os.Open(file)
	})
}

// exportFiles maps each dependency of the package to its export data file.
var exportFiles = sync.OnceValues(func() (map[string]string, error) {
	cmd := exec.Command("go", "list", "-export", "-deps", "-f", "{{if .Export}}{{.ImportPath}}={{.Export}}{{end}}", ".")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -export (needs the go command on PATH): %v\n%s", err, stderr.Bytes())
	}
	exports := map[string]string{}
	for line := range strings.Lines(string(out)) {
		if path, file, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
			exports[path] = file
		}
	}
	return exports, nil
})
