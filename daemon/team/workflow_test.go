package team

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
)

func TestParseGood(t *testing.T) {
	src, err := os.ReadFile("testdata/pair.toml")
	if err != nil {
		t.Fatal(err)
	}
	w, err := Parse("pair.toml", src)
	if err != nil {
		t.Fatal(err)
	}
	if w.Root != "design" || len(w.States) != 2 || w.Phases["write_code"].MaxTurns != 4 || w.MaxTurns != 40 {
		t.Fatalf("parsed %+v", w)
	}
	if _, ok := w.Vars["code"]; !ok {
		t.Error("a stored variable should count as declared")
	}
	d := w.States["design"]
	if len(d.Next) != 2 || d.Next[0].When == nil || d.Next[1].State != End || d.Choose != "rule" {
		t.Errorf("design's next: %+v", d.Next)
	}
	if got := strings.Join(d.Roles, ","); got != "ceo,cto" {
		t.Errorf("design's roles = %s", got)
	}
}

// Each broken file names its problem and the line it is on.
func TestParseProblems(t *testing.T) {
	base, _ := os.ReadFile("testdata/pair.toml")
	cases := []struct {
		name       string
		old, new   string
		line, want string
	}{
		{"unknown_key", `max_turns = 4
reflect = true`, `max_turns = 4
reflekt = true`, ":24:", `unknown key "phases.choose_language.reflekt"`},
		{"missing_role", `assistant = "cto"
prompt = "Task`, `assistant = "cfo"
prompt = "Task`, ":20:", `assistant "cfo" is not a role`},
		{"unknown_next", `next = ["end"]`, `next = ["ende"]`, ":40:", `next "ende" is not a state`},
		{"bad_condition", `when = "language is set"`, `when = "language is sett"`, ":36:", "after is want set or empty"},
		{"undeclared_placeholder", `in {{language}}.`, `in {{lang}}.`, ":29:", `{{lang}} is not a variable`},
		{"bad_root", `root = "design"`, `root = "desing"`, ":4:", `root "desing" is not a state (did you mean "design"?)`},
		{"turn_limit", `max_turns = 4
reflect`, `max_turns = 400
reflect`, ":23:", "max_turns 400: want 1 to 50"},
		{"invalid_toml", `name = "pair"`, `name = "pair`, ":2:", "invalid TOML"},
		{"unreached", `next = [{ state = "code", when = "language is set" }, "end"]`, `next = ["end"]`, ":38:", "state code is never reached"},
		{"same_roles", `assistant = "cto"
prompt = "Write`, `assistant = "ceo"
prompt = "Write`, ":28:", "both ceo"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(string(base), c.old, c.new, 1)
			if src == string(base) {
				t.Fatalf("case does not change the file")
			}
			_, err := Parse("pair.toml", []byte(src))
			var we *Error
			if !errors.As(err, &we) {
				t.Fatalf("err = %v, want *Error", err)
			}
			if !strings.Contains(err.Error(), "pair.toml"+c.line) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v\nwant %s and %q", err, c.line, c.want)
			}
		})
	}
}

func TestComposedPhaseChecks(t *testing.T) {
	base, _ := os.ReadFile("testdata/pair.toml")
	src := string(base) + `
[phases.loop]
phases = ["write_code", "nope"]
prompt = "x"
`
	_, err := Parse("pair.toml", []byte(src))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{`sub-phase "nope" is not a phase`, "composed phase loop needs cycles", "prompt belongs in its sub-phases"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v\nwant %q", err, want)
		}
	}
}

func TestCond(t *testing.T) {
	vars := map[string]string{"a": "Python", "b": "", "review": "<INFO> Finished"}
	cases := []struct {
		src  string
		want bool
	}{
		{"a is set", true},
		{"b is set", false},
		{"b is empty", true},
		{"missing is empty", true},
		{"a == 'Python'", true},
		{"a == 'python'", false},
		{"a != 'Go'", true},
		{"review contains 'finished'", true},
		{"not review contains 'finished'", false},
		{"b is set and a is set", false},
		{"b is set or a is set", true},
		{"b is set and a is set or review contains \"INFO\"", true},
	}
	for _, c := range cases {
		cond, err := ParseCond(c.src)
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		if got := cond.Eval(vars); got != c.want {
			t.Errorf("%s = %v, want %v", c.src, got, c.want)
		}
	}
	for _, bad := range []string{"", "a", "a = 'x'", "a == x", "a is", "a is set and", "a is set xor b is set", "a == 'x"} {
		if _, err := ParseCond(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// Chat names a workflow in the teams directory, by bare name or absolute path; `..`
// tricks, relative paths and any file elsewhere are refused, naming the directory.
func TestResolveWorkflow(t *testing.T) {
	for _, tc := range []struct {
		name, dir, file, want, err string
	}{
		{"bare_name", "/srv/teams", "software_company", "software_company.toml", ""},
		{"bare_name_with_ext", "/srv/teams", "software_company.toml", "software_company.toml", ""},
		{"absolute_path_in_dir", "/srv/teams", "/srv/teams/flow.toml", "flow.toml", ""},
		{"absolute_path_elsewhere", "/srv/teams", "/etc/agentd/flow.toml", "", "is not in the teams directory /srv/teams"},
		{"absolute_path_in_a_subfolder", "/srv/teams", "/srv/teams/sub/flow.toml", "", "is not in the teams directory /srv/teams"},
		{"the_directory_itself", "/srv/teams", "/srv/teams/", "", "is not in the teams directory /srv/teams"},
		{"absolute_path_without_dir", "", "/etc/agentd/flow.toml", "", "none is configured: set [teams] dir"},
		{"dot_dot_name", "/srv/teams", "..", "", `"..\" is refused`},
		{"dot_dot_up", "/srv/teams", "../../etc/passwd", "", `"..\" is refused`},
		{"dot_dot_in_absolute", "/srv/teams", "/srv/teams/../../etc/passwd", "", `"..\" is refused`},
		{"dot_dot_backslash", "/srv/teams", `..\x`, "", `"..\" is refused`},
		{"relative_path_in_dir", "/srv/teams", "sub/x", "", "give a bare name from the teams directory /srv/teams"},
		{"bare_name_without_dir", "", "software_company", "", "none is configured"},
		{"empty", "/srv/teams", "  ", "", "no workflow named"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ResolveWorkflow(tc.dir, tc.file)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), strings.ReplaceAll(tc.err, `\"`, `"`)) || !errors.Is(err, api.ErrBadRequest) {
					t.Fatalf("ResolveWorkflow(%q, %q) = %q, %v; want an error with %q", tc.dir, tc.file, got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ResolveWorkflow(%q, %q) = %q, %v; want %q", tc.dir, tc.file, got, err, tc.want)
			}
		})
	}
}

func TestReadWorkflowAndList(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"b.toml", "a.toml", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("name = \"x\"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Mkdir(filepath.Join(dir, "d.toml"), 0o755)
	names, err := Workflows(dir)
	if err != nil || !slices.Equal(names, []string{"a", "b"}) {
		t.Fatalf("Workflows = %v, %v; want [a b]", names, err)
	}
	path, src, err := ReadWorkflow(dir, "a")
	if err != nil || path != filepath.Join(dir, "a.toml") || string(src) != "name = \"x\"\n" {
		t.Fatalf("ReadWorkflow(a) = %q %q %v", path, src, err)
	}
	if _, _, err := ReadWorkflow(dir, "missing"); !errors.Is(err, api.ErrNotFound) || !strings.Contains(err.Error(), `no workflow "missing" in the teams directory`) {
		t.Errorf("missing name: %v", err)
	}
	if _, _, err := ReadWorkflow(dir, filepath.Join(dir, "none.toml")); !errors.Is(err, api.ErrNotFound) || !strings.Contains(err.Error(), `no workflow "none" in the teams directory`) {
		t.Errorf("missing path: %v", err)
	}
	if _, _, err := ReadWorkflow(dir, "d"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a directory: %v", err)
	}
	if got, err := Workflows(""); err != nil || got != nil {
		t.Errorf("no dir: %v %v", got, err)
	}
}

// TestReadWorkflowConfinedToTheDirectory: a workflow is read only from inside the teams
// directory, through the file commands' resolver: a link or a hard link in it to a file
// elsewhere is refused, naming the directory; the directory itself may be reached
// through a link (it is the operator's).
func TestReadWorkflowConfinedToTheDirectory(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "secret.toml")
	if err := os.WriteFile(secret, []byte("name = \"secret\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(dir, "linked.toml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(secret, filepath.Join(dir, "hard.toml")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"linked", "hard", filepath.Join(dir, "linked.toml"), secret} {
		_, src, err := ReadWorkflow(dir, name)
		if err == nil || !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), dir) {
			t.Errorf("ReadWorkflow(%s) = %q, %v; want it refused, naming %s", name, src, err, dir)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "ok.toml"), []byte("name = \"ok\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	via := filepath.Join(t.TempDir(), "teams")
	if err := os.Symlink(dir, via); err != nil {
		t.Fatal(err)
	}
	if path, src, err := ReadWorkflow(via, "ok"); err != nil || path != filepath.Join(via, "ok.toml") || string(src) != "name = \"ok\"\n" {
		t.Errorf("ReadWorkflow through a linked directory = %q %q %v", path, src, err)
	}
}

// The shipped examples parse and are what their comments say: a ChatDev-shaped software
// company (design → code → review → test) and a research report, with roles that use
// commands and composed review loops.
func TestExamplesAreValid(t *testing.T) {
	files, err := filepath.Glob("../../examples/teams/*.toml")
	if err != nil || len(files) != 2 {
		t.Fatalf("examples: %v, %v", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			w, err := Parse(filepath.Base(f), src)
			if err != nil {
				t.Fatal(err)
			}
			commandRoles, composed, model := 0, 0, 0
			for _, r := range w.Roles {
				if len(r.Commands) > 0 {
					commandRoles++
				}
			}
			for _, p := range w.Phases {
				if p.Composed() {
					composed++
				}
			}
			for _, s := range w.States {
				if s.Choose == "model" {
					model++
				}
			}
			if commandRoles == 0 || composed == 0 || model == 0 {
				t.Errorf("%s: %d roles with commands, %d composed phases, %d model choices: want each", w.Name, commandRoles, composed, model)
			}
		})
	}
	src, _ := os.ReadFile("../../examples/teams/software_company.toml")
	w, err := Parse("software_company.toml", src)
	if err != nil {
		t.Fatal(err)
	}
	// design → code → review → test, the ChatDev shape.
	for s, next := "design", []string{"code", "review", "test"}; len(next) > 0; s, next = next[0], next[1:] {
		if got := w.States[s].Next[0].State; got != next[0] {
			t.Errorf("%s's first next is %s, want %s", s, got, next[0])
		}
	}
}
