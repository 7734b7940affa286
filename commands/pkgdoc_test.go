package commands

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryPackageHasDoc checks the whole module: every package (and command) has a doc
// comment that says what it is, as `go doc` shows it.
func TestEveryPackageHasDoc(t *testing.T) {
	root := filepath.Join("..")
	dirs := map[string]bool{}
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != root || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			dirs[filepath.Dir(path)] = true
		}
		return nil
	})
	if len(dirs) < 5 {
		t.Fatalf("found only %d package directories; is the walk rooted right?", len(dirs))
	}
	for dir := range dirs {
		pkgs, err := parser.ParseDir(token.NewFileSet(), dir, func(fi fs.FileInfo) bool {
			return !strings.HasSuffix(fi.Name(), "_test.go")
		}, parser.ParseComments|parser.PackageClauseOnly)
		if err != nil {
			t.Fatal(err)
		}
		for name, p := range pkgs {
			doc := false
			for _, f := range p.Files {
				if f.Doc != nil && len(strings.TrimSpace(f.Doc.Text())) > 20 {
					doc = true
				}
			}
			if !doc {
				t.Errorf("package %s in %s has no doc comment", name, dir)
			}
		}
	}
}
