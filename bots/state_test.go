package bots

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// followers counts the team runs being followed (tests).
func (s *teamDesk) followers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.following)
}

// stateOwners are the relay's holders of state, each with the one file whose methods
// alone touch the fields its mutex guards.
var stateOwners = map[string]string{
	"adapters":      "threadbook.go",
	"proposalBoard": "board.go",
	"teamDesk":      "teamstate.go",
}

// TestStateOwnersKeepTheirFields: what the relay keeps is reached only through its
// owner's methods — no file but the owner's (and this one) names a field its mutex
// guards — and the Relay itself holds no map.
func TestStateOwnersKeepTheirFields(t *testing.T) {
	fset := token.NewFileSet()
	files := map[string]*ast.File{}
	paths, _ := filepath.Glob("*.go")
	for _, p := range paths {
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files[p] = f
	}
	guarded := map[string]string{} // field → its owner's file
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return true
			}
			if ts.Name.Name == "Relay" {
				for _, fl := range st.Fields.List {
					if _, isMap := fl.Type.(*ast.MapType); isMap {
						t.Errorf("Relay holds a map (%s): what the relay keeps belongs to one owner", fl.Names[0].Name)
					}
				}
			}
			file, owner := stateOwners[ts.Name.Name]
			if !owner {
				return true
			}
			locked := false
			for _, fl := range st.Fields.List {
				for _, name := range fl.Names {
					if locked {
						guarded[name.Name] = file
					}
					locked = locked || name.Name == "mu"
				}
			}
			return true
		})
	}
	if len(guarded) < 7 {
		t.Fatalf("found %d guarded fields; did the owners move?", len(guarded))
	}
	for p, f := range files {
		if p == "state_test.go" {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if file, ok := guarded[sel.Sel.Name]; ok && file != p && !strings.HasSuffix(p, "_test.go") {
				t.Errorf("%s: .%s reaches into state %s owns; add a method there", fset.Position(sel.Pos()), sel.Sel.Name, file)
			}
			return true
		})
	}
}
