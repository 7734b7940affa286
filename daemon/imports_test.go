// Package daemon_test holds the repository's imports test: the table of which package may
// import which, so dependencies point one way (test tools → test doubles → the binaries →
// daemon/server → the services → the local API and config → the foundations → the command
// set → the shared model → text), with the arrows the design forbids inside that order, and
// the test imports of the packages whose unit tests must not build the daemon.
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
	{"test tools", []string{"daemon/integration", "internal/chattest", "scripts/...", "cmd/tinymodel", "internal/cmd/..."},
		"end-to-end tests, the chat bots' shared scenarios, the test scripts' helpers, the tiny model's generator and the structure figures: only tests import them"},
	{"test doubles", []string{"internal/agenttest", "internal/apitest", "internal/fakediscord", "internal/fakeslack", "internal/netguardtest", "internal/ollamatest", "internal/shelltest", "internal/testutil", "internal/display/displaytest", "internal/structure"},
		"fakes of the services agentd talks to, test helpers and the structure measures: only tests and test tools import them, never the product"},
	{"binaries", []string{"cmd/agentd/...", "cmd/agentctl/..."},
		"the binaries wire the daemon and the CLI; nothing imports them"},
	{"server", []string{"daemon/server/..."},
		"the server wires the services together; a service never imports the server"},
	{"services", []string{"bots/...", "daemon/agent", "daemon/team", "daemon/schedule/...", "daemon/agentprotocol", "daemon/web"},
		"a service reaches another only through an interface it declares and the shared " +
			"types below it (team runs and schedules start agents' runs with daemon/run's types, " +
			"never daemon/agent's); the server wires them together"},
	{"agent parts", []string{"daemon/agent/policy/...", "daemon/effect"},
		"a part of the agent core with a package of its own (the policy that authorizes proposals, with the " +
			"binding of a grant's files; the effect preview that runs a command ahead on a copy) is handed what it " +
			"needs by daemon/agent and imports no service"},
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
	{"leaves", []string{"internal/display", "internal/backoff", "internal/randid", "internal/procgroup"},
		"how text is shown to people (escaping, counts, sizes), how retries are spaced, how random ids are made and how a test ends a process group: leaves that import nothing of the repository"},
}

// denied are arrows the tiers would allow but the design forbids, with the reason.
var denied = []struct{ from, to, rule string }{
	{"bots/...", "daemon/store",
		"the chat relay keeps its records through bots.Bindings; the server gives it daemon/server/chatstore"},
	{"commands/...", "daemon/...",
		"the floor: commands import nothing of the daemon (not even its shared helpers), so they build and test alone"},
	{"memory", "daemon/...",
		"the floor: memory imports nothing of the daemon, which hands it what it needs (an Embedder) through Options"},
}

// testDenied are arrows a package's unit tests may not take: these packages' tests build
// nothing of the daemon or the chat front ends, so they stay fast and test the package alone.
var testDenied = []struct{ from, to, rule string }{
	{"commands/...", "daemon/...", "commands are tested through commands.Env and the test doubles, not a daemon"},
	{"commands/...", "bots/...", "commands are tested through commands.Env and the test doubles, not a chat front end"},
	{"memory", "daemon/...", "memory is tested through its own Options; a test of the daemon's wiring lives with the daemon"},
	{"memory", "bots/...", "memory is tested through its own Options, not a chat front end"},
}

// TestImportsPointOneWay fails on an import against the table, naming the arrow and the
// rule it breaks, and on a package the table does not place.
func TestImportsPointOneWay(t *testing.T) {
	root, module := moduleRoot(t)
	imports, _ := moduleImports(t, root, module)
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

// TestUnitTestsImportBounded fails when the tests of a package testDenied names import
// what that package's unit tests should not build.
func TestUnitTestsImportBounded(t *testing.T) {
	root, module := moduleRoot(t)
	_, tests := moduleImports(t, root, module)
	if len(tests["memory"]) == 0 || len(tests["commands"]) == 0 {
		t.Fatalf("found no test imports of memory or commands: the walk is broken")
	}
	for from, imports := range tests {
		for _, to := range imports {
			for _, d := range testDenied {
				if matches(d.from, from) && matches(d.to, to) {
					t.Errorf("the tests of %s import %s: %s", from, to, d.rule)
				}
			}
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
		{"agentd_imports_fake", "cmd/agentd", "internal/ollamatest", false},
		{"agentctl_imports_fake", "cmd/agentctl/cli", "internal/apitest", false},
		{"tinymodel_imports_fake", "cmd/tinymodel", "internal/ollamatest", true},
		{"commands_import_statedir", "commands/shell", "daemon/statedir", false},
		{"memory_imports_metrics", "memory", "daemon/metrics", false},
		{"commands_import_api", "commands", "api", true},
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
// packages its non-test files import, as the build for this platform sees them; and each
// package with tests to the module's packages its _test.go files (in-package and
// external) import.
func moduleImports(t *testing.T, root, module string) (product, tests map[string][]string) {
	t.Helper()
	product, tests = map[string][]string{}, map[string][]string{}
	inModule := func(imports []string, skip string) []string {
		out := []string{}
		for _, imp := range imports {
			if to, ok := strings.CutPrefix(imp, module+"/"); ok && to != skip {
				out = append(out, to)
			}
		}
		return out
	}
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
		rel, _ := filepath.Rel(root, path)
		from := filepath.ToSlash(rel)
		tests[from] = inModule(append(p.TestImports, p.XTestImports...), from)
		if len(p.GoFiles)+len(p.CgoFiles) > 0 { // a tests-only package (like this one): nothing imports it
			product[from] = inModule(p.Imports, "")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return product, tests
}
