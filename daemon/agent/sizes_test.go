package agent

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The package stays split by responsibility (issue 16): no type declares more than
// maxMethods methods and no file, tests included, runs past maxLines lines. A part that grows past
// either is a sign to split it again, not to raise the number.
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
}
