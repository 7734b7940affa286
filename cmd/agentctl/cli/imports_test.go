package cli_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportsOnlyTheClient checks that agentctl (its main, this package and everything they
// pull in from this module) uses nothing from the repo but api and the display
// and backoff leaves, and nothing from outside but the standard library and golang.org/x/term: agentctl
// must work against any agentd through the public API alone. Its tests may also use the
// shared test support, which is never linked into the binary.
func TestImportsOnlyTheClient(t *testing.T) {
	root, module := moduleRoot(t)
	allowed := map[string]bool{
		module + "/cmd/agentctl":     true,
		module + "/cmd/agentctl/cli": true,
		module + "/api":              true,
		module + "/internal/display": true,
		module + "/internal/backoff": true,
	}
	testOnly := map[string]bool{
		module + "/internal/testutil": true,
		// the API's one test fake, built on api's route table
		module + "/internal/apitest": true,
		// the hostile strings every front end's tests show
		module + "/internal/display/displaytest": true,
	}
	type use struct {
		pkg  string
		test bool // reached only through a _test.go file
	}
	seen := map[use]bool{}
	queue := []use{{pkg: module + "/cmd/agentctl"}}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		if seen[u] {
			continue
		}
		seen[u] = true
		if !allowed[u.pkg] && !(u.test && testOnly[u.pkg]) {
			t.Errorf("agentctl depends on %s; it may use only api and display from this module", u.pkg)
			continue
		}
		for _, imp := range imports(t, filepath.Join(root, strings.TrimPrefix(u.pkg, module))) {
			switch {
			case imp.path == module || strings.HasPrefix(imp.path, module+"/"):
				queue = append(queue, use{imp.path, u.test || imp.test})
			case imp.path == "golang.org/x/term":
			case strings.Contains(strings.SplitN(imp.path, "/", 2)[0], "."):
				t.Errorf("%s imports %s: agentctl uses the standard library, api and golang.org/x/term only", u.pkg, imp.path)
			}
		}
	}
}

// goImport is one import of a package and whether a _test.go file makes it.
type goImport struct {
	path string
	test bool
}

// imports lists the imports of the Go files in dir (tests included, other engineers'
// build-tagged files too: agentctl has none).
func imports(t *testing.T, dir string) []goImport {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files in %s: %v", dir, err)
	}
	var out []goImport
	fset := token.NewFileSet()
	for _, file := range files {
		f, err := parser.ParseFile(fset, file, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, spec := range f.Imports {
			p, _ := strconv.Unquote(spec.Path.Value)
			out = append(out, goImport{p, strings.HasSuffix(file, "_test.go")})
		}
	}
	return out
}

// moduleRoot finds go.mod above the test's directory and returns its directory and module path.
func moduleRoot(t *testing.T) (dir, module string) {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if m, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
					return dir, strings.TrimSpace(m)
				}
			}
			t.Fatal("go.mod has no module line")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test")
		}
		dir = parent
	}
}
