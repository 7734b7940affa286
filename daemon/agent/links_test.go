package agent

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"sort"
	"strings"
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
