package structure

import (
	"bufio"
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
)

// Typed is the module's product packages type-checked from source (their dependencies
// outside the module from the compiler's export data), so that objects are shared across
// packages and a call can be followed from one package into another.
type Typed struct {
	Root   string // the module's directory, absolute
	Module string
	Fset   *token.FileSet
	Pkgs   map[string]*types.Package // by path relative to the module
	Info   *types.Info               // for every checked file
	Files  map[*ast.File]string      // each checked file's path relative to the module
	ByPkg  map[string][]*ast.File    // each package's checked files
	Decls  map[*types.Func]*ast.FuncDecl
	Errors []error // type errors met (cgo files are not read), reported with the figures
}

// Check type-checks every non-test package of the module under root. It runs
// `go list -export -deps`, which builds what the cache does not hold yet.
func Check(root, module string) (*Typed, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("go", "list", "-export", "-deps", "-f",
		"{{.ImportPath}}\t{{.Export}}\t{{.Dir}}\t{{join .GoFiles \",\"}}", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -export: %w\n%s", err, stderr.Bytes())
	}
	t := &Typed{
		Root: root, Module: module, Fset: token.NewFileSet(), Pkgs: map[string]*types.Package{},
		Info: &types.Info{
			Uses: map[*ast.Ident]types.Object{}, Defs: map[*ast.Ident]types.Object{},
			Selections: map[*ast.SelectorExpr]*types.Selection{}, Types: map[ast.Expr]types.TypeAndValue{},
		},
		Files: map[*ast.File]string{}, ByPkg: map[string][]*ast.File{}, Decls: map[*types.Func]*ast.FuncDecl{},
	}
	exports := map[string]string{}
	gc := importer.ForCompiler(t.Fset, "gc", func(path string) (io.ReadCloser, error) {
		if f, ok := exports[path]; ok {
			return os.Open(f)
		}
		return nil, fmt.Errorf("no export data for %s", path)
	})
	imp := importerFunc(func(path string) (*types.Package, error) {
		if rel, ok := t.rel(path); ok {
			if p := t.Pkgs[rel]; p != nil {
				return p, nil
			}
		}
		return gc.Import(path)
	})
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		parts := strings.Split(sc.Text(), "\t")
		if len(parts) != 4 {
			continue
		}
		path, export, dir, goFiles := parts[0], parts[1], parts[2], parts[3]
		exports[path] = export
		rel, ok := t.rel(path)
		if !ok || goFiles == "" || strings.HasPrefix(rel, "internal/") {
			continue
		}
		if err := t.checkPackage(root, rel, path, dir, strings.Split(goFiles, ","), imp); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func (t *Typed) checkPackage(root, rel, path, dir string, names []string, imp types.Importer) error {
	var files []*ast.File
	for _, name := range names {
		f, err := parser.ParseFile(t.Fset, filepath.Join(dir, name), nil, 0)
		if err != nil {
			return err
		}
		t.Files[f] = t.FileOf(f.Pos())
		files = append(files, f)
	}
	conf := types.Config{Importer: imp, Error: func(err error) { t.Errors = append(t.Errors, err) }}
	pkg, _ := conf.Check(path, t.Fset, files, t.Info)
	t.Pkgs[rel] = pkg
	t.ByPkg[rel] = files
	for _, f := range files {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
				if fn, ok := t.Info.Defs[fd.Name].(*types.Func); ok {
					t.Decls[fn] = fd
				}
			}
		}
	}
	return nil
}

// rel returns an import path relative to the module, and whether it is in the module.
func (t *Typed) rel(path string) (string, bool) {
	if path == t.Module {
		return ".", true
	}
	return strings.CutPrefix(path, t.Module+"/")
}

// FileOf is the module-relative path of the file that holds pos.
func (t *Typed) FileOf(pos token.Pos) string {
	r, err := filepath.Rel(t.Root, t.Fset.Position(pos).Filename)
	if err != nil {
		return ""
	}
	return filepath.ToSlash(r)
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }
