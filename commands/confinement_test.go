package commands

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// fileCommands are the workspace file commands and how each takes a path; every one runs
// against the whole escape corpus. search_files runs twice, since reading text is a second
// way to leak.
var fileCommands = []struct {
	name, cmd string
	args      func(p string) map[string]any
}{
	{name: "read_file", cmd: "read_file", args: func(p string) map[string]any { return map[string]any{"path": p} }},
	{name: "write_file", cmd: "write_file", args: func(p string) map[string]any { return map[string]any{"path": p, "contents": "pwned"} }},
	{name: "append_to_file", cmd: "append_to_file", args: func(p string) map[string]any { return map[string]any{"path": p, "text": "pwned"} }},
	{name: "delete_file", cmd: "delete_file", args: func(p string) map[string]any { return map[string]any{"path": p} }},
	{name: "list_folder", cmd: "list_folder", args: func(p string) map[string]any { return map[string]any{"path": p} }},
	{name: "search_files", cmd: "search_files", args: func(p string) map[string]any { return map[string]any{"pattern": p} }},
	{name: "search_files_text", cmd: "search_files", args: func(p string) map[string]any { return map[string]any{"pattern": p, "text": "secret"} }},
}

// moreEscapes extends the shared corpus with paths that only a glob or a delete would
// treat differently.
func moreEscapes(s *sandbox) map[string]string {
	m := escapes(s)
	for name, p := range map[string]string{
		"dot_dot_many":           "../../../../../../../etc/passwd",
		"dot_slash_dot_dot":      "./../x",
		"absolute_dot_dot":       "/../etc",
		"symlink_loop_as_folder": "loop/x",
		"symlink_dangling_dir":   "dangling/x",
		"symlink_out_slash":      "out/",
		"symlink_inside_then_up": "inside/up/outside/secret.txt",
		"name_too_long_nested":   "docs/" + strings.Repeat("n", 256),
		"nul_only":               "\x00",
		"glob_dot_dot":           "../*",
		"glob_dot_dot_deep":      "../**/secret.txt",
		"glob_absolute":          "/etc/*",
		"glob_under_link_out":    "out/*",
		"glob_under_link_etc":    "etc/**",
		"glob_under_relative_up": "docs/up/**/secret.txt",
		"glob_under_loop":        "loop/**",
	} {
		m[name] = p
	}
	return m
}

// Every file command refuses every path of the escape corpus, reads nothing from outside
// and changes nothing anywhere, inside the workspace included: each path is refused whole.
func TestEveryFileCommandRefusesEscapes(t *testing.T) {
	s := newSandbox(t)
	before := treeSnapshot(t, s.dir)
	corpus := moreEscapes(s)
	names := make([]string, 0, len(corpus))
	for name := range corpus {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, fc := range fileCommands {
		for _, name := range names {
			p := corpus[name]
			t.Run(fc.name+"/"+name, func(t *testing.T) {
				out, err := run(t, fc.cmd, s.ws, fc.args(p), Limits{})
				if err == nil {
					t.Fatalf("%s(%q) = %q, want an error", fc.cmd, p, out)
				}
				if out != "" {
					t.Errorf("%s(%q) returned output %q with its error", fc.cmd, p, out)
				}
				if !errors.Is(err, ErrBadPath) {
					t.Errorf("error %v does not wrap ErrBadPath", err)
				}
				if len(err.Error()) > 300 {
					t.Errorf("error is %d bytes long, too long for a prompt: %.100s...", len(err.Error()), err)
				}
				checkNoLeak(t, out, err)
			})
		}
	}
	after := treeSnapshot(t, s.dir)
	for p, v := range after {
		if before[p] != v {
			t.Errorf("%s changed: %q -> %q", p, before[p], v)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			t.Errorf("%s disappeared", p)
		}
	}
	if _, err := os.Lstat(filepath.Join(s.outside, "created.txt")); err == nil {
		t.Error("a write through the dangling link created its target outside the workspace")
	}
}

// Globs reach links only through wildcards, which never follow them: the search finds
// nothing behind them, whatever text it looks for.
func TestSearchFilesNeverFollowsSymlinks(t *testing.T) {
	s := newSandbox(t)
	before := s.snapshot(t)
	tests := []struct {
		name, pattern, text, want string
	}{
		{name: "everything", pattern: "**", want: "docs/\ndocs/readme.txt"},
		{name: "everything_text", pattern: "**", text: "secret", want: `no line contains "secret" in the 1 text files matching "**"`},
		{name: "passwd_text", pattern: "**/*", text: "nologin", want: `no line contains "nologin" in the 1 text files matching "**/*"`},
		{name: "through_any_link", pattern: "*/*", want: "docs/readme.txt"},
		{name: "under_up_link", pattern: "*/up/**", want: `no files match "*/up/**"`},
		{name: "link_names", pattern: "*", want: "docs/"},
		{name: "deep_through_links", pattern: "**/secret*", want: `no files match "**/secret*"`},
		{name: "loop", pattern: "lo*/**", want: `no files match "lo*/**"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := map[string]any{"pattern": tt.pattern}
			if tt.text != "" {
				args["text"] = tt.text
			}
			out, err := run(t, "search_files", s.ws, args, Limits{})
			if err != nil || out != tt.want {
				t.Fatalf("got %q, %v; want %q", out, err, tt.want)
			}
			checkNoLeak(t, out, err)
		})
	}
	s.checkUntouched(t, before)
}

// A new command that takes a workspace path has to join the escape corpus above.
func TestFileCommandsAllInEscapeCorpus(t *testing.T) {
	covered := map[string]bool{}
	for _, fc := range fileCommands {
		covered[fc.cmd] = true
	}
	for _, c := range All() {
		s := c.Spec()
		takesPath := s.Subject == "path" || s.Subject == "pattern"
		if takesPath && (s.Class == ClassRead || s.Class == ClassWriteWorkspace) && !covered[s.Name] {
			t.Errorf("%s takes a workspace %s but is not in fileCommands", s.Name, s.Subject)
		}
	}
}

func TestNewFileCommandSpecs(t *testing.T) {
	tests := []struct {
		name       string
		class      Class
		idempotent bool
		subject    string
		params     []string
		required   []string
	}{
		{name: "append_to_file", class: ClassWriteWorkspace, idempotent: false, subject: "path",
			params: []string{"path", "text"}, required: []string{"path", "text"}},
		{name: "delete_file", class: ClassWriteWorkspace, idempotent: true, subject: "path",
			params: []string{"path"}, required: []string{"path"}},
		{name: "search_files", class: ClassRead, idempotent: true, subject: "pattern",
			params: []string{"pattern", "text"}, required: []string{"pattern"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ok := Lookup(tt.name)
			if !ok {
				t.Fatalf("%s is not registered", tt.name)
			}
			s := c.Spec()
			if s.Class != tt.class || s.Idempotent != tt.idempotent || s.Subject != tt.subject {
				t.Errorf("class %q idempotent %v subject %q; want %q, %v, %q",
					s.Class, s.Idempotent, s.Subject, tt.class, tt.idempotent, tt.subject)
			}
			var params []string
			for _, p := range s.Params.Properties {
				params = append(params, p.Name)
				if p.Schema.Type != "string" || p.Schema.MaxLength == nil || *p.Schema.MaxLength > MaxGrammarRepetitions {
					t.Errorf("param %q: want a string with a maxLength of at most %d", p.Name, MaxGrammarRepetitions)
				}
				if p.Schema.Description == "" {
					t.Errorf("param %q has no description", p.Name)
				}
			}
			if strings.Join(params, ",") != strings.Join(tt.params, ",") ||
				strings.Join(s.Params.Required, ",") != strings.Join(tt.required, ",") {
				t.Errorf("params %v required %v; want %v, %v", params, s.Params.Required, tt.params, tt.required)
			}
			if line := promptLine(s); len(line) > 110 {
				t.Errorf("prompt line is %d chars, want at most 110: %s", len(line), line)
			}
		})
	}
}

func TestGoldenFileCommandSchemas(t *testing.T) {
	for _, name := range []string{"append_to_file", "delete_file", "search_files"} {
		t.Run(name, func(t *testing.T) {
			c, ok := Lookup(name)
			if !ok {
				t.Fatalf("%s is not registered", name)
			}
			goldenJSON(t, name+".json", c.Spec().Params)
		})
	}
}

// treeSnapshot records everything under dir: names, modes, contents and link targets.
func treeSnapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	snap := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		v := fi.Mode().String()
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(path)
			v += " -> " + target
		case fi.Mode().IsRegular():
			b, _ := os.ReadFile(path)
			v += " " + string(b)
		}
		snap[path] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}
