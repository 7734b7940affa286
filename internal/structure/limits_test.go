package structure

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

// The repository's size limits. A file, function or type past one is a sign to split it by
// responsibility, not to raise the number.
const (
	maxFileLines = 600 // every Go file, tests included
	maxMethods   = 40  // methods a type declares, outside _test.go files
)

// maxFuncLines (figures.go) bounds every function outside _test.go files, counted from func to }.

// Allowlists: what is past a limit today, each with the reason it still is. An entry is
// removed when its file, function or type is split; the test fails on an entry that is no
// longer needed, so the lists only shrink. Keys: files by path, functions and types by
// package directory and name ("daemon/agent.runner.next"), so a move between files of one
// package does not break them.
var (
	bigFiles = map[string]string{
		"api/types.go":                      "the domain and wire model's types in one file; splits by concept (agents, proposals, memory)",
		"cmd/agentctl/cli/fake_test.go":     "agentctl's fake daemon: one handler per endpoint",
		"internal/fakediscord/fake_test.go": "the Discord fake's own tests, one per endpoint it fakes",
	}
	longFuncs = map[string]string{
		"internal/fakediscord.Server.interactionCallback": "Discord's interaction callback types, a case each, as the real API checks them",
		"internal/fakeslack.Fake.api":                     "Slack's Web API methods the bots call, a case each",
		"internal/fakeslack.Fake.socket":                  "the Socket Mode session: hello, envelopes and acks",
		"internal/ollamatest.Fake.handleChat":             "Ollama's /api/chat as the fake speaks it: scripted, streamed and failing replies",
	}
	wideTypes = map[string]string{
		"internal/fakediscord.Server": "the Discord fake: one handler per REST endpoint and gateway event it serves",
	}
)

func load(t *testing.T) *Repo {
	t.Helper()
	root, err := FindRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Files) < 200 {
		t.Fatalf("read %d Go files under %s: is the walk rooted right?", len(r.Files), root)
	}
	return r
}

// TestFilesStaySmall: no Go file, tests included, runs past maxFileLines lines unless
// bigFiles names it with a reason.
func TestFilesStaySmall(t *testing.T) {
	over := map[string]int{}
	for _, f := range load(t).Files {
		if f.Lines > maxFileLines {
			over[f.Path] = f.Lines
		}
	}
	checkAllowlist(t, "bigFiles", bigFiles, over, fmt.Sprintf("lines, more than %d: split it by responsibility", maxFileLines))
}

// TestFunctionsStayShort: no function outside a _test.go file runs past maxFuncLines lines
// unless longFuncs names it with a reason.
func TestFunctionsStayShort(t *testing.T) {
	over := map[string]int{}
	for _, fn := range load(t).Funcs(func(f *File) bool { return !f.Test }) {
		if fn.Lines > maxFuncLines {
			over[fn.File.Dir+"."+fn.Name] = fn.Lines
		}
	}
	checkAllowlist(t, "longFuncs", longFuncs, over, fmt.Sprintf("lines, more than %d: split it into steps with names", maxFuncLines))
}

// TestTypesStayNarrow: no type outside a _test.go file declares more than maxMethods
// methods, except in a query package, unless wideTypes names it with a reason.
func TestTypesStayNarrow(t *testing.T) {
	over := map[string]int{}
	for typ, n := range load(t).TypeMethods(func(f *File) bool { return !f.Test && !QueryPackages[f.Dir] }) {
		if n > maxMethods {
			over[typ] = n
		}
	}
	checkAllowlist(t, "wideTypes", wideTypes, over, fmt.Sprintf("methods, more than %d: give a responsibility its own type", maxMethods))
}

// checkAllowlist fails on what is over a limit and not allowed, and on an allowed entry
// that is no longer over it (remove it: the list only shrinks).
func checkAllowlist(t *testing.T, list string, allowed map[string]string, over map[string]int, what string) {
	t.Helper()
	for _, k := range slices.Sorted(maps.Keys(over)) {
		if _, ok := allowed[k]; !ok {
			t.Errorf("%s has %d %s", k, over[k], what)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(allowed)) {
		if strings.TrimSpace(allowed[k]) == "" {
			t.Errorf("%s[%q] gives no reason: say why it is still over the limit", list, k)
		}
		if _, ok := over[k]; !ok {
			t.Errorf("%s[%q] is within the limit now (or gone): remove it from %s in internal/structure/limits_test.go", list, k, list)
		}
	}
}
