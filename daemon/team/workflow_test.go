package team

import (
	"errors"
	"os"
	"strings"
	"testing"
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
