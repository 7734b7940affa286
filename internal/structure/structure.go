// Package structure measures the repository's shape: file and function lengths, methods
// per type, the file links inside a package, effect kinds the cycle computes and nobody
// applies, and the files a decision or a chat click passes through. The architecture tests
// (limits_test.go, names_test.go) hold the limits with it, and internal/cmd/structure
// prints the figures; neither the daemon nor its tests import it.
package structure

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Repo is every Go file of the module, parsed with its comments.
type Repo struct {
	Root   string // the module's directory
	Module string // the module path from go.mod
	Fset   *token.FileSet
	Files  []*File // sorted by path
}

// File is one parsed Go file.
type File struct {
	Path  string // slash-separated, relative to the module root
	Dir   string // the package directory, relative to the module root ("." for the root)
	Lines int
	Test  bool // a _test.go file
	AST   *ast.File
}

// Double reports whether the file is test support: everything under internal/ (the fakes,
// the test helpers and this tool) counts as test doubles, not product.
func (f *File) Double() bool {
	return strings.HasPrefix(f.Path, "internal/")
}

// Product reports whether the file is product code: not a test, not a test double.
func (f *File) Product() bool { return !f.Test && !f.Double() }

// Load parses every Go file under root (the directory holding go.mod), skipping hidden
// directories, testdata and vendor.
func Load(root string) (*Repo, error) {
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return nil, err
	}
	r := &Repo{Root: root, Fset: token.NewFileSet()}
	for line := range strings.Lines(string(mod)) {
		if m, ok := strings.CutPrefix(line, "module "); ok {
			r.Module = strings.TrimSpace(m)
		}
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(r.Fset, path, src, parser.ParseComments)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		r.Files = append(r.Files, &File{
			Path: rel, Dir: filepath.ToSlash(filepath.Dir(rel)), Lines: strings.Count(string(src), "\n"),
			Test: strings.HasSuffix(name, "_test.go"), AST: f,
		})
		return nil
	})
	sort.Slice(r.Files, func(i, j int) bool { return r.Files[i].Path < r.Files[j].Path })
	return r, err
}

// FindRoot returns the nearest directory at or above dir that holds go.mod.
func FindRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
}

// Func is one function or method declaration.
type Func struct {
	File  *File
	Name  string // "F" or "Type.M"
	Lines int    // from the func keyword to the closing brace
}

// Funcs lists every function declaration of the files keep accepts.
func (r *Repo) Funcs(keep func(*File) bool) []Func {
	var out []Func
	for _, f := range r.Files {
		if !keep(f) {
			continue
		}
		for _, d := range f.AST.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			name := fn.Name.Name
			if t := recvType(fn); t != "" {
				name = t + "." + name
			}
			lines := r.Fset.Position(fn.End()).Line - r.Fset.Position(fn.Type.Pos()).Line + 1
			out = append(out, Func{File: f, Name: name, Lines: lines})
		}
	}
	return out
}

// TypeMethods counts the methods each named type declares, keyed "dir.Type"
// (daemon/store.Store), over the files keep accepts.
func (r *Repo) TypeMethods(keep func(*File) bool) map[string]int {
	out := map[string]int{}
	for _, f := range r.Files {
		if !keep(f) {
			continue
		}
		for _, d := range f.AST.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok {
				if t := recvType(fn); t != "" {
					out[f.Dir+"."+t]++
				}
			}
		}
	}
	return out
}

// recvType is the name of fn's receiver type, "" for a plain function.
func recvType(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return ""
	}
	typ := fn.Recv.List[0].Type
	for {
		switch t := typ.(type) {
		case *ast.StarExpr:
			typ = t.X
		case *ast.IndexExpr:
			typ = t.X
		case *ast.IndexListExpr:
			typ = t.X
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}

// ProductLines counts the lines of product files: no tests, no test doubles.
func (r *Repo) ProductLines() int {
	n := 0
	for _, f := range r.Files {
		if f.Product() {
			n += f.Lines
		}
	}
	return n
}
