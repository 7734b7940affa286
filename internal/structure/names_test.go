package structure

import (
	"go/ast"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Names say what holds, not when it was written: issue and attack-round numbers belong in
// commit messages and notes. These patterns are what history looked like in names.
var (
	// historyWord is a part of a test file's name (split at _ and -) that names an issue,
	// a review or an attack round: issue17, attack, attackF, finalattack, review2, round3.
	historyWord = regexp.MustCompile(`^(final)?(issue|attack|review|round)([0-9]+[a-z]?|f)?$`)
	// historyFunc is a test, benchmark or fuzz function named after one.
	historyFunc = regexp.MustCompile(`^(Test|Benchmark|Fuzz)(\w*(Issue|Review|Round)[0-9]|(Final)?Attack)`)
	// historyText is an issue number, or an attack round, in code or a comment.
	historyText = regexp.MustCompile(`(?i)\bissue\s*#?[0-9]+|\bfinal ?attack|\battackF\b|\b(attack|review) round\b`)
)

// TestNamesSayWhatHolds: no test file or test function is named after an issue, review or
// attack round, and no Go file or script says "issue N" in its code or comments.
func TestNamesSayWhatHolds(t *testing.T) {
	r := load(t)
	for _, f := range r.Files {
		if f.Test {
			base := strings.TrimSuffix(filepath.Base(f.Path), "_test.go")
			for _, part := range strings.FieldsFunc(strings.ToLower(base), func(c rune) bool { return c == '_' || c == '-' }) {
				if historyWord.MatchString(part) {
					t.Errorf("%s is named after an issue or attack round (%q): name it for the behaviour it checks", f.Path, part)
				}
			}
			for _, d := range f.AST.Decls {
				if name := funcName(d); historyFunc.MatchString(name) {
					t.Errorf("%s: %s is named after an issue or attack round: name it for the behaviour it checks", f.Path, name)
				}
			}
		}
	}
	checkText(t, r.Root, ".go", ".sh")
}

// checkText greps every file with one of exts for historyText. This file is skipped: its
// patterns would find themselves.
func checkText(t *testing.T, root string, exts ...string) {
	t.Helper()
	self, _ := filepath.Abs("names_test.go")
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if path == self || !hasExt(path, exts) {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(src), "\n") {
			if m := historyText.FindString(line); m != "" {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s:%d says %q: say what the code does; the issue belongs in the commit message", rel, i+1, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func hasExt(path string, exts []string) bool {
	for _, e := range exts {
		if strings.HasSuffix(path, e) {
			return true
		}
	}
	return false
}

// TestHistoryPatterns checks the patterns on names they must and must not catch.
func TestHistoryPatterns(t *testing.T) {
	tests := []struct {
		name string
		re   *regexp.Regexp
		in   string
		want bool
	}{
		{"file_issue_number", historyWord, "issue" + "17", true},
		{"file_attack_round", historyWord, "attack" + "f", true},
		{"file_final_attack", historyWord, "final" + "attack", true},
		{"file_attack", historyWord, "attack", true},
		{"file_preview", historyWord, "preview", false},
		{"file_roundtrip", historyWord, "roundtrip", false},
		{"func_issue", historyFunc, "Test" + "Issue17LateReply", true},
		{"func_attack", historyFunc, "Test" + "AttackClicks", true},
		{"func_final_attack", historyFunc, "Test" + "FinalAttackParseShell", true},
		{"func_review_round", historyFunc, "TestReview" + "2Budget", true},
		{"func_round_trip", historyFunc, "TestMemoryRoundTrip", false},
		{"func_behaviour", historyFunc, "TestStaleRepliesDecideNothing", false},
		{"text_issue", historyText, "// long-term memory (" + "issue 4)", true},
		{"text_issue_hash", historyText, "fixed in " + "issue #21", true},
		{"text_issues_word", historyText, "// known issues: none", false},
		{"text_attack_f", historyText, "// attack" + "F: encoded hosts", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.re.MatchString(tt.in); got != tt.want {
				t.Fatalf("%s matching %q = %v, want %v", tt.re, tt.in, got, tt.want)
			}
		})
	}
}

// funcName is the name of a plain function declaration, "" for anything else.
func funcName(d ast.Decl) string {
	if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil {
		return fn.Name.Name
	}
	return ""
}
