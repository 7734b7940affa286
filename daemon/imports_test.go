// Package daemon_test holds the repository's imports test: the table of which package may
// import which, so dependencies point one way (cmd → daemon/server → the services →
// their foundations → the shared types) and a new arrow against them fails here.
package daemon_test

import (
	"bufio"
	"errors"
	"fmt"
	"go/build"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// layer is one tier of the table. A package may import packages of lower tiers, and
// packages of its own entry (an entry ending in /... is one unit: bots/slack may import
// bots). Nothing else: not its own tier's other entries, not a higher tier.
type layer struct {
	name string
	pkgs []string // paths in the module; "P/..." is P and everything under it
	rule string   // why this tier may import only what is below it
}

// layers, top to bottom. The most specific entry names a package's tier
// (daemon/agent/cycle is a foundation though daemon/agent is a service).
var layers = []layer{
	{"binaries", []string{"cmd/...", "daemon/integration", "scripts/..."},
		"the binaries (and the test scripts' helpers) wire the daemon; nothing imports them"},
	{"test doubles", []string{"internal/apitest", "internal/fakediscord", "internal/fakeslack", "internal/netguardtest", "internal/ollamatest", "internal/testutil", "internal/display/displaytest"},
		"fakes of the services agentd talks to and test helpers: only tests import them, never the product"},
	{"server", []string{"daemon/server/..."},
		"the server wires the services together; a service never imports the server"},
	{"services", []string{"bots/...", "daemon/agent", "daemon/team", "daemon/schedule/...", "daemon/agentprotocol", "daemon/web"},
		"a service reaches another only through an interface it declares and the shared " +
			"types below it (team runs and schedules start agents' runs with daemon/run's types, " +
			"never daemon/agent's); the server wires them together"},
	{"interfaces", []string{"daemon/localapi", "daemon/config"},
		"the local API's handler and the config are what services and the server share; " +
			"they import no service"},
	{"foundations", []string{"daemon/agent/cycle", "daemon/agent/watchdog", "daemon/run", "daemon/store", "memory", "daemon/llm", "daemon/schedule/cron", "daemon/checkpoint"},
		"a foundation (the cycle's state machine, the loop watchdog, runs' shared types, the store, memory, the " +
			"model client, the firing clock, the workspace checkpoints) stands alone: it imports no service and no other foundation"},
	{"command set", []string{"commands/..."},
		"commands and their guards know nothing of the daemon that runs them"},
	{"shared", []string{"api/...", "daemon/statedir", "daemon/metrics", "systemd"},
		"the wire and domain model (api) and small helpers every tier may use; they import nothing of the repository above them"},
	{"text", []string{"internal/display"},
		"how text is shown to people (escaping, counts, sizes): a leaf that imports nothing of the repository"},
}

// denied are arrows the tiers would allow but the design forbids, with the reason.
var denied = []struct{ from, to, rule string }{
	{"bots/...", "daemon/store",
		"the chat relay keeps its records through bots.Bindings; the server gives it daemon/server/chatstore"},
}

// TestImportsPointOneWay fails on an import against the table, naming the arrow and the
// rule it breaks, and on a package the table does not place.
func TestImportsPointOneWay(t *testing.T) {
	root, module := moduleRoot(t)
	imports := moduleImports(t, root, module)
	if len(imports) < 20 {
		t.Fatalf("found %d packages under %s; the walk is broken", len(imports), root)
	}
	for _, from := range slices.Sorted(maps.Keys(imports)) {
		fromAt, fromEntry, ok := place(from)
		if !ok {
			t.Errorf("package %s is not in the imports table: add it to layers in daemon/imports_test.go, in the tier whose rule it keeps", from)
			continue
		}
		for _, to := range imports[from] {
			if why, bad := deniedArrow(from, to); bad {
				t.Errorf("%s imports %s: denied (%s)", from, to, why)
				continue
			}
			toAt, toEntry, ok := place(to)
			if !ok || fromEntry == toEntry || toAt > fromAt {
				continue // an unplaced package is reported as an importer above
			}
			t.Errorf("%s (%s) imports %s (%s): a %s package may import only lower tiers: %s",
				from, layers[fromAt].name, to, layers[toAt].name, layers[fromAt].name, layers[fromAt].rule)
		}
	}
}

// TestImportsTableCatchesArrows checks the table itself on arrows it must refuse.
func TestImportsTableCatchesArrows(t *testing.T) {
	tests := []struct {
		name, from, to string
		ok             bool
	}{
		{"team_imports_agent", "daemon/team", "daemon/agent", false},
		{"schedule_imports_agent", "daemon/schedule", "daemon/agent", false},
		{"bots_import_store", "bots", "daemon/store", false},
		{"slack_imports_store", "bots/slack", "daemon/store", false},
		{"store_imports_agent", "daemon/store", "daemon/agent", false},
		{"agent_imports_server", "daemon/agent", "daemon/server", false},
		{"cron_imports_schedule", "daemon/schedule/cron", "daemon/schedule", false},
		{"team_imports_run", "daemon/team", "daemon/run", true},
		{"agent_imports_cycle", "daemon/agent", "daemon/agent/cycle", true},
		{"slack_imports_bots", "bots/slack", "bots", true},
		{"server_imports_agent", "daemon/server", "daemon/agent", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := allowed(tt.from, tt.to); got != tt.ok {
				t.Fatalf("allowed(%s → %s) = %v, want %v", tt.from, tt.to, got, tt.ok)
			}
		})
	}
}

// allowed is the table's verdict on one arrow.
func allowed(from, to string) bool {
	if _, bad := deniedArrow(from, to); bad {
		return false
	}
	fromAt, fromEntry, ok1 := place(from)
	toAt, toEntry, ok2 := place(to)
	return ok1 && ok2 && (fromEntry == toEntry || toAt > fromAt)
}

// place returns the tier and entry of pkg: the most specific entry that matches it.
func place(pkg string) (tier int, entry string, ok bool) {
	best := -1
	for i, l := range layers {
		for _, e := range l.pkgs {
			if matches(e, pkg) && len(e) > best {
				tier, entry, ok, best = i, e, true, len(e)
			}
		}
	}
	return tier, entry, ok
}

func deniedArrow(from, to string) (string, bool) {
	for _, d := range denied {
		if matches(d.from, from) && matches(d.to, to) {
			return d.rule, true
		}
	}
	return "", false
}

func matches(entry, pkg string) bool {
	if base, ok := strings.CutSuffix(entry, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pkg == entry
}

// moduleRoot finds go.mod above the test's directory and reads the module path.
func moduleRoot(t *testing.T) (root, module string) {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		f, err := os.Open(filepath.Join(dir, "go.mod"))
		if err == nil {
			defer f.Close()
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if m, ok := strings.CutPrefix(sc.Text(), "module "); ok {
					return dir, strings.TrimSpace(m)
				}
			}
			t.Fatalf("%s/go.mod names no module", dir)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// moduleImports maps each package of the module (path relative to it) to the module's
// packages its non-test files import, as the build for this platform sees them.
func moduleImports(t *testing.T, root, module string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
			return filepath.SkipDir
		}
		p, err := build.Default.ImportDir(path, 0)
		var none *build.NoGoError
		if errors.As(err, &none) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
		if len(p.GoFiles)+len(p.CgoFiles) == 0 {
			return nil // tests only (like this one): nothing imports it
		}
		rel, _ := filepath.Rel(root, path)
		from := filepath.ToSlash(rel)
		out[from] = []string{}
		for _, imp := range p.Imports {
			if to, ok := strings.CutPrefix(imp, module+"/"); ok {
				out[from] = append(out[from], to)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
