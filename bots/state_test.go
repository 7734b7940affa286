package bots

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// remembered reports whether team run id's threads are still in memory (tests).
func (s *relayState) remembered(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.teamBound[id]
	return ok || s.teamEnded[id]
}

// followers counts the team runs being followed (tests).
func (s *relayState) followers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.following)
}

// teamSizes counts the role agents, team threads and ended team runs in memory (tests).
func (s *relayState) teamSizes() (roles, bound, ended int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.roles), len(s.teamBound), len(s.teamEnded)
}

// TestOnlyRelayStateTouchesItsFields: the relay's state is reached only through
// relayState's methods — no file but state.go (and this one) names one of its fields or
// its locks — and the Relay itself holds no map.
func TestOnlyRelayStateTouchesItsFields(t *testing.T) {
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
	fields, methods := map[string]bool{}, map[string]bool{}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.TypeSpec:
				if st, ok := n.Type.(*ast.StructType); ok && n.Name.Name == "relayState" {
					for _, fl := range st.Fields.List {
						for _, name := range fl.Names {
							fields[name.Name] = true
						}
					}
				}
				if st, ok := n.Type.(*ast.StructType); ok && n.Name.Name == "Relay" {
					for _, fl := range st.Fields.List {
						if _, isMap := fl.Type.(*ast.MapType); isMap {
							t.Errorf("Relay holds a map (%s): relay state belongs in relayState", fl.Names[0].Name)
						}
					}
				}
			case *ast.FuncDecl:
				if n.Recv != nil && strings.Contains(types(n.Recv), "relayState") {
					methods[n.Name.Name] = true
				}
			}
			return true
		})
	}
	if len(fields) < 10 {
		t.Fatalf("found %d fields of relayState; did it move?", len(fields))
	}
	for p, f := range files {
		if p == "state.go" || p == "state_test.go" {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			inner, ok := sel.X.(*ast.SelectorExpr)
			if ok && inner.Sel.Name == "state" && !methods[sel.Sel.Name] {
				t.Errorf("%s: %s.state.%s reaches into the relay's state; add a relayState method", fset.Position(sel.Pos()), exprName(inner.X), sel.Sel.Name)
			}
			return true
		})
	}
	if _, err := os.Stat("state.go"); err != nil {
		t.Fatal(err)
	}
}

func types(fl *ast.FieldList) string {
	var b strings.Builder
	for _, f := range fl.List {
		ast.Inspect(f.Type, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				b.WriteString(id.Name)
			}
			return true
		})
	}
	return b.String()
}

func exprName(e ast.Expr) string {
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return "…"
}
