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
	"strings"
	"sync"
	"testing"
)

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
