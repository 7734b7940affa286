package commands

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/testutil"
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
	{name: "open_file", cmd: "open_file", args: func(p string) map[string]any { return map[string]any{"path": p} }},
	{name: "open_folder", cmd: "open_folder", args: func(p string) map[string]any { return map[string]any{"path": p} }},
}

// runFile runs a file command of fileCommands: a registered one, or a context item's.
func runFile(t *testing.T, cmd, ws string, args map[string]any) (string, error) {
	t.Helper()
	var c Command
	switch cmd {
	case "open_file":
		c = openItem{openFileSpec, "file"}
	case "open_folder":
		c = openItem{openFolderSpec, "folder"}
	default:
		return run(t, cmd, ws, args, Limits{})
	}
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return Run(context.Background(), c, Env{Workspace: ws, AgentID: "a1", State: memState{}}, raw, Limits{})
}

// moreLinks adds links the shared sandbox lacks: chains, links to the parent, and
// absolute ones that climb back out.
//
//	ws/chain    -> inside/up   (a chain: inside -> docs, then docs/up -> ../..)
//	ws/parent   -> ..
//	ws/absup    -> WS/docs/../..
//	ws/wsabs    -> WS          (the workspace itself, absolute)
//	ws/self     -> .
//	ws/pingpong -> pongping, ws/pongping -> pingpong
func moreLinks(t testing.TB, s *sandbox) {
	t.Helper()
	for name, target := range map[string]string{
		"chain": "inside/up", "parent": "..", "absup": filepath.Join(s.ws, "docs") + "/../..",
		"wsabs": s.ws, "self": ".", "pingpong": "pongping", "pongping": "pingpong",
	} {
		if err := os.Symlink(target, filepath.Join(s.ws, name)); err != nil {
			t.Fatal(err)
		}
	}
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
		"symlink_chain_out":      "chain/outside/secret.txt",
		"symlink_chain_itself":   "chain",
		"symlink_to_parent":      "parent/outside/secret.txt",
		"symlink_to_parent_self": "parent",
		"symlink_abs_climbs_out": "absup/outside/secret.txt",
		"symlink_self_then_up":   "self/parent/outside/secret.txt",
		"symlink_ws_then_up":     "wsabs/parent/outside/secret.txt",
		"symlink_ping_pong":      "pingpong",
		"symlink_ping_pong_dir":  "pingpong/x",
		"glob_under_chain":       "chain/**",
		"glob_under_parent":      "parent/outside/*",
	} {
		m[name] = p
	}
	return m
}

// Every file command refuses every path of the escape corpus, reads nothing from outside
// and changes nothing anywhere, inside the workspace included: each path is refused whole.
func TestEveryFileCommandRefusesEscapes(t *testing.T) {
	s := newSandbox(t)
	moreLinks(t, s)
	before := treeSnapshot(t, s.dir, "")
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
				out, err := runFile(t, fc.cmd, s.ws, fc.args(p))
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
	checkSameTree(t, "", before, treeSnapshot(t, s.dir, ""))
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
		{name: "everything_text", pattern: "**", text: "secret", want: `no line contains "secret" in the 1 text file matching "**"`},
		{name: "passwd_text", pattern: "**/*", text: "nologin", want: `no line contains "nologin" in the 1 text file matching "**/*"`},
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
			testutil.GoldenJSON(t, "testdata/schemas/"+name+".json", c.Spec().Params)
		})
	}
}

// treeSnapshot records everything under dir but the folder skip: names, modes, contents
// and link targets.
func treeSnapshot(t *testing.T, dir, skip string) map[string]string {
	t.Helper()
	snap := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path == skip {
			return filepath.SkipDir
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

// A file with more than one hard link may have its other name outside the workspace:
// nothing reads or writes through it. write_file replaces the name (its rename never
// writes through) and delete_file removes only the name; the outside file stays as it was.
func TestHardLinksNeverReadOrWrittenThrough(t *testing.T) {
	tests := []struct {
		name, cmd string
		args      map[string]any
		want      string // output, or "" when an error naming the hard links is wanted
		after     string // what ws/hard holds afterwards; "-" for gone
	}{
		{name: "read_file", cmd: "read_file", args: map[string]any{"path": "hard"}, after: secret},
		{name: "read_file_lines", cmd: "read_file", args: map[string]any{"path": "hard", "start_line": 1}, after: secret},
		{name: "read_file_nested", cmd: "read_file", args: map[string]any{"path": "docs/hard2"}, after: secret},
		{name: "read_file_through_inside_link", cmd: "read_file", args: map[string]any{"path": "hardlink"}, after: secret},
		{name: "append_to_file", cmd: "append_to_file", args: map[string]any{"path": "hard", "text": "pwned"}, after: secret},
		{name: "append_to_file_nested", cmd: "append_to_file", args: map[string]any{"path": "docs/hard2", "text": "pwned"}, after: secret},
		{name: "open_file", cmd: "open_file", args: map[string]any{"path": "hard"}, after: secret},
		{name: "write_file_replaces_the_name", cmd: "write_file", args: map[string]any{"path": "hard", "contents": "mine"},
			want: "wrote 4 bytes to hard", after: "mine"},
		{name: "delete_file_removes_the_name", cmd: "delete_file", args: map[string]any{"path": "hard"},
			want: "deleted hard", after: "-"},
		{name: "search_files_text", cmd: "search_files", args: map[string]any{"pattern": "**", "text": "top"},
			want: "no line contains \"top\" in the 1 text file matching \"**\"\n[2 files with more than one hard link were not read]", after: secret},
		{name: "search_files_names", cmd: "search_files", args: map[string]any{"pattern": "hard"}, want: "hard", after: secret},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSandbox(t)
			out := filepath.Join(s.outside, "secret.txt")
			for _, name := range []string{"hard", "docs/hard2"} {
				if err := os.Link(out, filepath.Join(s.ws, name)); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink("hard", filepath.Join(s.ws, "hardlink")); err != nil {
				t.Fatal(err)
			}
			before := s.snapshot(t)
			got, err := runFile(t, tt.cmd, s.ws, tt.args)
			if tt.want == "" {
				if err == nil || !errors.Is(err, ErrBadPath) || !strings.Contains(err.Error(), "hard links") {
					t.Fatalf("%s = %q, %v; want a refusal naming the hard links", tt.cmd, got, err)
				}
			} else if err != nil || got != tt.want {
				t.Fatalf("%s = %q, %v; want %q", tt.cmd, got, err, tt.want)
			}
			checkNoLeak(t, got, err)
			s.checkUntouched(t, before)
			b, err := os.ReadFile(filepath.Join(s.ws, "hard"))
			if tt.after == "-" {
				if !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("ws/hard after: %q, %v; want it gone", b, err)
				}
			} else if string(b) != tt.after {
				t.Errorf("ws/hard after = %q, %v; want %q", b, err, tt.after)
			}
		})
	}
}

func TestResolvePathRefusesHardLinks(t *testing.T) {
	s := newSandbox(t)
	if err := os.Link(filepath.Join(s.outside, "secret.txt"), filepath.Join(s.ws, "run.py")); err != nil {
		t.Fatal(err)
	}
	if got, err := ResolvePath(s.ws, "run.py"); err == nil || !errors.Is(err, ErrBadPath) || !strings.Contains(err.Error(), "2 hard links") {
		t.Fatalf("ResolvePath = %q, %v; want a refusal naming the hard links", got, err)
	}
	if got, err := ResolvePath(s.ws, "docs"); err != nil || got != filepath.Join(s.ws, "docs") {
		t.Fatalf("a folder's links are not hard links: %q, %v", got, err)
	}
}

// Writes never go into a git folder: git runs code from its hooks and config. Reads may.
func TestGitFolderIsReadOnlyToFileCommands(t *testing.T) {
	s := newSandbox(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// repo/.git is a real git folder; bare/ is one by its content; alias -> repo/.git and
	// repo2/.git -> ../bare reach them under other names.
	for _, d := range []string{"repo/.git/hooks", "repo/.git/objects", "repo/.git/refs", "bare/objects", "bare/refs", "repo2"} {
		must(os.MkdirAll(filepath.Join(s.ws, d), 0o755))
	}
	for _, f := range []string{"repo/.git/HEAD", "repo/.git/config", "bare/HEAD", "bare/config"} {
		must(os.WriteFile(filepath.Join(s.ws, f), []byte("ref: refs/heads/main\n"), 0o644))
	}
	must(os.Symlink("repo/.git", filepath.Join(s.ws, "alias")))
	must(os.Symlink("repo/.git/hooks", filepath.Join(s.ws, "hooks")))
	must(os.Symlink("../bare", filepath.Join(s.ws, "repo2", ".git")))
	before := treeSnapshot(t, s.ws, "")
	paths := []string{
		".git/hooks/pre-commit", ".git/config", ".git", ".git/", "./.git/config", ".GIT/config", ".Git/hooks/x",
		"repo/.git/hooks/pre-commit", "repo/.git/config", "repo/.git/HEAD", "repo/.git", "repo/.gIt/config",
		"docs/../repo/.git/config", "sub/.git/hooks/post-checkout", "x/.git",
		"alias/config", "alias/hooks/pre-commit", "hooks/pre-commit", "repo2/.git/config",
		"bare/config", "bare/hooks/pre-commit", "bare/HEAD",
	}
	writes := []string{"write_file", "append_to_file", "delete_file"}
	for _, cmd := range writes {
		for _, p := range paths {
			t.Run(cmd+"/"+p, func(t *testing.T) {
				args := map[string]any{"path": p, "contents": "#!/bin/sh\nid", "text": "#!/bin/sh\nid"}
				if cmd == "delete_file" {
					args = map[string]any{"path": p}
				} else if cmd == "write_file" {
					delete(args, "text")
				} else {
					delete(args, "contents")
				}
				out, err := run(t, cmd, s.ws, args, Limits{})
				if err == nil || !errors.Is(err, ErrBadPath) || !strings.Contains(err.Error(), "use git commands through execute_shell instead") {
					t.Fatalf("%s(%q) = %q, %v; want a refusal naming the fix", cmd, p, out, err)
				}
			})
		}
	}
	after := treeSnapshot(t, s.ws, "")
	if len(after) != len(before) {
		t.Errorf("the workspace changed: %d entries, had %d", len(after), len(before))
	}
	for p, v := range before {
		if after[p] != v {
			t.Errorf("%s changed: %q -> %q", p, v, after[p])
		}
	}
	for _, p := range paths {
		if got, err := ResolveWritePath(s.ws, p); err == nil || !errors.Is(err, ErrBadPath) {
			t.Errorf("ResolveWritePath(%q) = %q, %v; want a refusal", p, got, err)
		}
		if _, err := ResolvePath(s.ws, p); err != nil {
			t.Errorf("ResolvePath(%q) = %v; reading a git folder is allowed", p, err)
		}
	}
	if got, err := ResolveWritePath(s.ws, "clones/new"); err != nil || got != filepath.Join(s.ws, "clones/new") {
		t.Errorf("ResolveWritePath(clones/new) = %q, %v", got, err)
	}
	for _, tt := range []struct {
		cmd  string
		args map[string]any
		want string
	}{
		{"read_file", map[string]any{"path": "repo/.git/config"}, "ref: refs/heads/main\n"},
		{"read_file", map[string]any{"path": "alias/HEAD"}, "ref: refs/heads/main\n"},
		{"list_folder", map[string]any{"path": "repo/.git"}, "HEAD\nconfig\nhooks/\nobjects/\nrefs/"},
		{"search_files", map[string]any{"pattern": "repo/.git/*"}, "repo/.git/HEAD\nrepo/.git/config\nrepo/.git/hooks/\nrepo/.git/objects/\nrepo/.git/refs/"},
		{"write_file", map[string]any{"path": "repo/README.md", "contents": "hi"}, "wrote 2 bytes to repo/README.md"},
		{"write_file", map[string]any{"path": "repo/.gitignore", "contents": "hi"}, "wrote 2 bytes to repo/.gitignore"},
		{"append_to_file", map[string]any{"path": "notes/git/config", "text": "hi"}, "appended 2 bytes to notes/git/config (now 2 bytes)"},
		{"write_file", map[string]any{"path": "my.git/config", "contents": "hi"}, "wrote 2 bytes to my.git/config"},
	} {
		out, err := run(t, tt.cmd, s.ws, tt.args, Limits{})
		if err != nil || out != tt.want {
			t.Errorf("%s(%v) = %q, %v; want %q", tt.cmd, tt.args, out, err, tt.want)
		}
	}
}

// A symlink swapped in between a path's check and its use must not let the operation out:
// the Root refuses it, and the error names the link as the check would have.
func TestEveryFileCommandRefusesSymlinkSwappedInAfterCheck(t *testing.T) {
	targets := map[string]string{
		"swap/secret.txt": "secret.txt", "swap": "", "swap/*": "", "swap/new.txt": "new.txt",
	}
	for _, fc := range fileCommands {
		for p, file := range targets {
			t.Run(fc.name+"/"+p, func(t *testing.T) {
				s := newSandbox(t)
				swap := filepath.Join(s.ws, "swap")
				if err := os.MkdirAll(swap, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(swap, "secret.txt"), []byte("inside"), 0o644); err != nil {
					t.Fatal(err)
				}
				before := s.snapshot(t)
				swapped := false
				testHookResolved = func(string) {
					if swapped {
						return
					}
					swapped = true
					// The folder, or the file in it, becomes a link to the same name outside.
					from, to := swap, s.outside
					if file != "" {
						from, to = filepath.Join(swap, file), filepath.Join(s.outside, file)
					}
					if err := os.RemoveAll(from); err != nil {
						t.Error(err)
					}
					if err := os.Symlink(to, from); err != nil {
						t.Error(err)
					}
				}
				t.Cleanup(func() { testHookResolved = nil })
				out, err := runFile(t, fc.cmd, s.ws, fc.args(p))
				if !swapped {
					t.Fatal("the command used the path without checking it first")
				}
				// write_file replaces the swapped-in link and delete_file removes it: the
				// name may show, never what is outside.
				if replaced := err == nil && (fc.cmd == "write_file" || fc.cmd == "delete_file"); !replaced {
					checkNoLeak(t, out, err)
				} else if strings.Contains(out, secret) {
					t.Errorf("output leaks the secret: %q", out)
				}
				s.checkUntouched(t, before)
				if fi, lerr := os.Lstat(filepath.Join(s.outside, "new.txt")); lerr == nil {
					t.Fatalf("%s created %v outside the workspace", fc.cmd, fi.Name())
				}
				if err == nil && fc.cmd != "write_file" && fc.cmd != "delete_file" {
					t.Fatalf("%s(%q) = %q after the swap, want an error", fc.cmd, p, out)
				}
			})
		}
	}
}

// FuzzResolvePath: whatever the path, ResolvePath never panics and never returns a path
// outside the workspace, neither by name nor by where the name leads.
func FuzzResolvePath(f *testing.F) {
	s := newSandbox(f)
	moreLinks(f, s)
	for _, p := range moreEscapes(s) {
		f.Add(p)
	}
	for _, p := range []string{".", "docs", "docs/readme.txt", "inside/readme.txt", "absinside/../docs", "new/dir/f.txt",
		"self/self/docs", "chain", "wsabs/docs", "docs/./readme.txt", "./", "a/b/../../docs", ".git/config"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got, err := ResolvePath(s.ws, p)
		if err != nil {
			if got != "" {
				t.Fatalf("ResolvePath(%q) = %q with error %v", p, got, err)
			}
			return
		}
		if !within(s.ws, got) {
			t.Fatalf("ResolvePath(%q) = %q, outside %q", p, got, s.ws)
		}
		if real, err := filepath.EvalSymlinks(got); err == nil && !within(s.ws, real) {
			t.Fatalf("ResolvePath(%q) = %q, which leads to %q outside the workspace", p, got, real)
		}
	})
}
