package commands

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

// searchTree adds to a sandbox's workspace the files the search tests look through.
func searchTree(t *testing.T, s *sandbox) {
	t.Helper()
	files := map[string]string{
		"main.go":               "package main\n\nfunc main() {\n\t// TODO: flags\n}\n",
		"cmd/tool/tool.go":      "package tool\n// todo lower case\nvar x = 1\n",
		"cmd/tool/tool_test.go": "package tool\n",
		"notes/a.txt":           "First line\nSecond LINE has Todo in it\n",
		"notes/b.txt":           "nothing here\n",
		"notes/deep/c.txt":      "todo deep\n",
		".git/config":           "todo hidden\n",
		".outputs/x.txt":        "todo saved\n",
		"bin/blob.bin":          "todo\x00binary",
		"latin1.txt":            "todo caf\xe9",
		"long.txt":              strings.Repeat("a", 300) + "NEEDLE" + strings.Repeat("b", 300) + "\n",
		"crlf.txt":              "one\r\ntwo todo\r\n",
	}
	for name, contents := range files {
		p := filepath.Join(s.ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(contents), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("notes", filepath.Join(s.ws, "nlink")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(s.ws, "notes", "pipe.txt"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestSearchFiles(t *testing.T) {
	s := newSandbox(t)
	searchTree(t, s)
	lines := func(l ...string) string { return strings.Join(l, "\n") }
	tests := []struct {
		name    string
		args    any
		want    string
		wantErr string
	}{
		{name: "double_star_extension", args: map[string]any{"pattern": "**/*.go"},
			want: lines("cmd/tool/tool.go", "cmd/tool/tool_test.go", "main.go")},
		{name: "one_folder", args: map[string]any{"pattern": "notes/*.txt"},
			want: lines("notes/a.txt", "notes/b.txt", "notes/pipe.txt")},
		{name: "double_star_in_folder", args: map[string]any{"pattern": "notes/**/*.txt"},
			want: lines("notes/a.txt", "notes/b.txt", "notes/deep/c.txt", "notes/pipe.txt")},
		{name: "star_lists_folders", args: map[string]any{"pattern": "cmd/*"}, want: "cmd/tool/"},
		{name: "question_and_class", args: map[string]any{"pattern": "notes/[ab].tx?"}, want: lines("notes/a.txt", "notes/b.txt")},
		{name: "double_star_between", args: map[string]any{"pattern": "cmd/**/tool.go"}, want: "cmd/tool/tool.go"},
		{name: "repeated_double_star", args: map[string]any{"pattern": "**/**/c.txt"}, want: "notes/deep/c.txt"},
		{name: "literal_file", args: map[string]any{"pattern": "notes/a.txt"}, want: "notes/a.txt"},
		{name: "literal_missing", args: map[string]any{"pattern": "notes/z.txt"}, want: `no files match "notes/z.txt"`},
		{name: "literal_folder", args: map[string]any{"pattern": "notes"}, want: `"notes" is a folder; use "notes/**" to match the files in it`},
		{name: "workspace_itself", args: map[string]any{"pattern": "."}, want: `"." is a folder; use "**" to match the files in it`},
		{name: "no_match", args: map[string]any{"pattern": "**/*.rs"}, want: `no files match "**/*.rs"`},
		{name: "missing_start_folder", args: map[string]any{"pattern": "nope/*.txt"}, want: `no files match "nope/*.txt"`},
		{name: "hidden_skipped_by_wildcards", args: map[string]any{"pattern": "**/config"}, want: `no files match "**/config"`},
		{name: "hidden_named", args: map[string]any{"pattern": ".git/*"}, want: ".git/config"},
		{name: "hidden_by_dot_pattern", args: map[string]any{"pattern": ".*"}, want: lines(".git/", ".outputs/")},
		{name: "symlinks_not_followed", args: map[string]any{"pattern": "*link/*"}, want: `no files match "*link/*"`},
		{name: "symlink_inside_as_start", args: map[string]any{"pattern": "nlink/*.txt"},
			want: lines("nlink/a.txt", "nlink/b.txt", "nlink/pipe.txt")},
		{name: "text_case_insensitive", args: map[string]any{"pattern": "**/*", "text": "TODO"}, want: lines(
			"cmd/tool/tool.go:2: // todo lower case",
			"crlf.txt:2: two todo",
			"main.go:4: // TODO: flags",
			"notes/a.txt:2: Second LINE has Todo in it",
			"notes/deep/c.txt:1: todo deep",
		)},
		{name: "text_in_one_folder", args: map[string]any{"pattern": "notes/*.txt", "text": "line"},
			want: lines("notes/a.txt:1: First line", "notes/a.txt:2: Second LINE has Todo in it")},
		{name: "text_in_literal_file", args: map[string]any{"pattern": "main.go", "text": "func"}, want: "main.go:3: func main() {"},
		{name: "text_in_hidden_when_named", args: map[string]any{"pattern": ".outputs/x.txt", "text": "todo"}, want: ".outputs/x.txt:1: todo saved"},
		{name: "text_long_line_snippet", args: map[string]any{"pattern": "long.txt", "text": "needle"},
			want: "long.txt:1: …" + strings.Repeat("a", 53) + "NEEDLE" + strings.Repeat("b", 101) + "…"},
		{name: "text_not_found", args: map[string]any{"pattern": "notes/*.txt", "text": "zebra"},
			want: `no line contains "zebra" in the 2 text files matching "notes/*.txt"`},
		{name: "text_binary_skipped", args: map[string]any{"pattern": "bin/*", "text": "todo"},
			want: `no line contains "todo" in the 0 text files matching "bin/*" (1 binary file skipped)`},
		{name: "text_not_utf8_skipped", args: map[string]any{"pattern": "latin1.txt", "text": "todo"},
			want: `no line contains "todo" in the 0 text files matching "latin1.txt" (1 binary file skipped)`},
		{name: "text_no_files", args: map[string]any{"pattern": "*.rs", "text": "x"}, want: `no files match "*.rs"`},
		{name: "text_on_two_lines", args: map[string]any{"pattern": "**", "text": "a\nb"}, wantErr: "text must be on one line"},
		{name: "malformed_class", args: map[string]any{"pattern": "notes/[a"}, wantErr: `pattern "notes/[a" has a malformed part "[a"`},
		{name: "empty_pattern", args: map[string]any{"pattern": ""}, wantErr: `pattern "" is empty; use "**" to match every file`},
		{name: "absolute_pattern", args: map[string]any{"pattern": "/etc/*"}, wantErr: `pattern "/etc/*" is absolute`},
		{name: "dot_dot_glob", args: map[string]any{"pattern": "../*"}, wantErr: `pattern "../*" leaves the workspace`},
		{name: "glob_under_link_out", args: map[string]any{"pattern": "out/*"},
			wantErr: `pattern "out/*": path "out" is a symlink that leads outside the workspace`},
		{name: "glob_under_a_file", args: map[string]any{"pattern": "main.go/*"}, wantErr: `pattern "main.go/*": path "main.go" is a file, not a folder`},
		{name: "missing_pattern", args: map[string]any{"text": "x"}, wantErr: `missing required property "pattern"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := run(t, "search_files", s.ws, tt.args, Limits{})
			if !checkOutput(t, out, err, tt.want, tt.wantErr) {
				return
			}
			checkNoLeak(t, out, err)
		})
	}
}

func TestSearchFilesBudgets(t *testing.T) {
	s := newSandbox(t)
	many := filepath.Join(s.ws, "many")
	if err := os.Mkdir(many, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range maxSearchMatches + 5 {
		if err := os.WriteFile(filepath.Join(many, fmt.Sprintf("f%03d.txt", i)), []byte("hit\nhit\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	big := "early hit\n" + strings.Repeat("x\n", maxSearchFileBytes/2) + "late hit\n"
	if err := os.WriteFile(filepath.Join(s.ws, "big.txt"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, pattern, text string
		lines               int    // matches listed
		note                string // the last line
	}{
		{name: "paths_capped", pattern: "many/*", lines: maxSearchMatches,
			note: "[showing the first 100 matches; narrow the pattern or the text to see others]"},
		{name: "lines_capped", pattern: "many/*", text: "hit", lines: maxSearchMatches,
			note: "[showing the first 100 matches; narrow the pattern or the text to see others]"},
		{name: "big_file_read_in_part", pattern: "big.txt", text: "hit", lines: 1,
			note: "[1 large file was searched only in the first 1 MiB]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := map[string]any{"pattern": tt.pattern}
			if tt.text != "" {
				args["text"] = tt.text
			}
			out, err := run(t, "search_files", s.ws, args, Limits{OutputCap: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Split(out, "\n")
			if last := got[len(got)-1]; last != tt.note {
				t.Errorf("last line %q, want %q", last, tt.note)
			}
			if len(got)-1 != tt.lines {
				t.Errorf("%d matches listed, want %d", len(got)-1, tt.lines)
			}
		})
	}
}

func TestGlobStates(t *testing.T) {
	tests := []struct {
		name, pattern, sub string
		matches, alive     bool
	}{
		{name: "star_one_level", pattern: "x/*.go", sub: "a.go", matches: true},
		{name: "star_not_two_levels", pattern: "x/*.go", sub: "d/a.go"},
		{name: "star_folder_dead", pattern: "x/*.go", sub: "d"},
		{name: "double_star_zero_levels", pattern: "x/**/a.go", sub: "a.go", matches: true, alive: true},
		{name: "double_star_many_levels", pattern: "x/**/a.go", sub: "p/q/r/a.go", matches: true, alive: true},
		{name: "double_star_folder_alive", pattern: "x/**/a.go", sub: "p/q", alive: true},
		{name: "trailing_double_star", pattern: "x/**", sub: "p/q", matches: true, alive: true},
		{name: "double_star_skips_hidden", pattern: "x/**/a.go", sub: ".git/a.go"},
		{name: "star_skips_hidden", pattern: "x/*", sub: ".env"},
		{name: "dot_pattern_matches_hidden", pattern: "x/.e*", sub: ".env", matches: true},
		{name: "many_double_stars", pattern: "x/**/a/**/a/**/b", sub: "a/a/a/a/a/a/a/a/a/a/a/a/c", alive: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := parseGlob(tt.pattern)
			if err != nil {
				t.Fatal(err)
			}
			if g.prefix != "x" {
				t.Fatalf("prefix %q, want x", g.prefix)
			}
			st := g.states(tt.sub)
			if got := g.matches(st); got != tt.matches {
				t.Errorf("matches %v, want %v", got, tt.matches)
			}
			if got := g.alive(st); got != tt.alive {
				t.Errorf("alive %v, want %v", got, tt.alive)
			}
		})
	}
}

func TestParseGlob(t *testing.T) {
	tests := []struct {
		name, pattern string
		prefix        string
		rest          []string
	}{
		{name: "all_wild", pattern: "**/*.go", prefix: ".", rest: []string{"**", "*.go"}},
		{name: "literal_prefix", pattern: "a/b/*.txt", prefix: "a/b", rest: []string{"*.txt"}},
		{name: "literal_only", pattern: "a/b.txt", prefix: "a/b.txt"},
		{name: "cleaned", pattern: "./a//b/../c/*", prefix: "a/c", rest: []string{"*"}},
		{name: "double_stars_collapsed", pattern: "**/**/x", prefix: ".", rest: []string{"**", "x"}},
		{name: "escape_is_a_wildcard_part", pattern: `a/\*`, prefix: "a", rest: []string{`\*`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := parseGlob(tt.pattern)
			if err != nil {
				t.Fatal(err)
			}
			if g.prefix != tt.prefix || !reflect.DeepEqual(g.rest, tt.rest) {
				t.Errorf("parseGlob(%q) = %q %q, want %q %q", tt.pattern, g.prefix, g.rest, tt.prefix, tt.rest)
			}
		})
	}
}
