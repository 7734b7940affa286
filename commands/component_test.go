package commands

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// testComp is a component whose every protocol method can be made to fail or panic.
type testComp struct {
	name  string
	fail  string // "error", "panic" or ""
	msg   string // what Messages returns
	cmd   Command
	calls *[]string
}

func (c testComp) Name() string { return c.name }

func (c testComp) act(hook string) error {
	if c.calls != nil {
		*c.calls = append(*c.calls, c.name+"."+hook)
	}
	switch c.fail {
	case "error":
		return errors.New(c.name + " broke")
	case "panic":
		panic(c.name + " exploded")
	}
	return nil
}

func (c testComp) Directives(context.Context, *Step) (Directives, error) {
	return Directives{Constraints: []string{c.name}}, c.act("Directives")
}

func (c testComp) Commands(context.Context, *Step) ([]Command, error) {
	if c.cmd == nil {
		return nil, c.act("Commands")
	}
	return []Command{c.cmd}, c.act("Commands")
}

func (c testComp) Messages(context.Context, *Step) ([]string, error) {
	return []string{c.msg}, c.act("Messages")
}

func (c testComp) AfterParse(_ context.Context, _ *Step, r *Reply) error {
	r.Thoughts.Speak += "+" + c.name
	return c.act("AfterParse")
}

func (c testComp) AfterExecute(_ context.Context, _ *Step, o *Outcome) error {
	o.Output += "+" + c.name
	return c.act("AfterExecute")
}

func (c testComp) ExecutionFailure(_ context.Context, _ *Step, o *Outcome) error {
	o.Output += "!" + c.name
	return c.act("ExecutionFailure")
}

// budgetComp records the budget it was given and fills it.
type budgetComp struct {
	name string
	got  *int
}

func (c budgetComp) Name() string { return c.name }
func (budgetComp) Budgeted()      {}
func (c budgetComp) Messages(_ context.Context, s *Step) ([]string, error) {
	*c.got = s.Budget
	return []string{strings.Repeat("h", s.Budget/2)}, nil
}

type reports struct {
	mu  sync.Mutex
	got []string
}

func (r *reports) report(_ *Step, comp, hook string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, comp+"."+hook+": "+err.Error())
}

func TestPipelineSkipsFailingComponents(t *testing.T) {
	finish, _ := Lookup(Finish)
	ask, _ := Lookup(AskUser)
	for _, fail := range []string{"error", "panic"} {
		t.Run(fail, func(t *testing.T) {
			var rep reports
			p, err := NewPipeline([]Component{
				testComp{name: "a", msg: "from a", cmd: finish},
				testComp{name: "bad", fail: fail, msg: "from bad", cmd: ask},
				testComp{name: "c", msg: "from c"},
			}, rep.report)
			if err != nil {
				t.Fatal(err)
			}
			s := &Step{AgentID: "a1"}
			ctx := context.Background()
			if d := p.Directives(ctx, s); strings.Join(d.Constraints, ",") != "a,c" {
				t.Errorf("directives = %v, want a and c only", d.Constraints)
			}
			if got := p.Commands(ctx, s).Names(); strings.Join(got, ",") != "finish" {
				t.Errorf("commands = %v, want finish only", got)
			}
			if got := p.Messages(ctx, s, 1000); strings.Join(got, ",") != "from a,from c" {
				t.Errorf("messages = %v", got)
			}
			r := &Reply{Command: Call{Name: "finish", Args: json.RawMessage(`{"reason":"x"}`)}}
			p.AfterParse(ctx, s, r, func(*Reply) error { return nil })
			if r.Thoughts.Speak != "+a+c" {
				t.Errorf("after parse speak = %q, want +a+c (bad's change undone)", r.Thoughts.Speak)
			}
			o := &Outcome{Command: "finish", Output: "out"}
			p.Executed(ctx, s, o)
			if o.Output != "out+a+c" {
				t.Errorf("after execute output = %q", o.Output)
			}
			o = &Outcome{Command: "finish", Output: "out", Err: errors.New("failed")}
			p.Executed(ctx, s, o)
			if o.Output != "out!a!c" || o.Err == nil {
				t.Errorf("after failure output = %q, err = %v", o.Output, o.Err)
			}
			if len(rep.got) != 6 {
				t.Fatalf("reports = %q, want one per protocol method of bad", rep.got)
			}
			for _, r := range rep.got {
				if !strings.HasPrefix(r, "bad.") {
					t.Errorf("report %q not about bad", r)
				}
				if fail == "panic" && !strings.Contains(r, "exploded") {
					t.Errorf("report %q does not carry the panic value", r)
				}
			}
		})
	}
}

func TestPipelineOrderAndBudget(t *testing.T) {
	var calls []string
	var histBudget int
	p, err := NewPipeline([]Component{
		testComp{name: "first", msg: "1234567890", calls: &calls},
		budgetComp{name: "history", got: &histBudget},
		testComp{name: "last", msg: "12345", calls: &calls},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	msgs := p.Messages(context.Background(), &Step{}, 100)
	if histBudget != 85 {
		t.Errorf("budgeted provider got %d chars, want 100-10-5 = 85", histBudget)
	}
	if len(msgs) != 3 || msgs[0] != "1234567890" || msgs[2] != "12345" || len(msgs[1]) != 42 {
		t.Errorf("messages out of declared order: %q", msgs)
	}
	if got := p.Without([]string{"first"}).Names(); strings.Join(got, ",") != "history,last" {
		t.Errorf("Without = %v", got)
	}
	if _, err := NewPipeline([]Component{testComp{name: "x"}, testComp{name: "x"}}, nil); err == nil {
		t.Error("two components with one name were accepted")
	}
}

func TestPipelineUndoesInvalidAfterParse(t *testing.T) {
	var rep reports
	p, _ := NewPipeline([]Component{testComp{name: "rewriter"}}, rep.report)
	r := &Reply{Thoughts: Thoughts{Speak: "hi"}}
	p.AfterParse(context.Background(), &Step{}, r, func(r *Reply) error {
		if r.Thoughts.Speak != "hi" {
			return errors.New("speak changed")
		}
		return nil
	})
	if r.Thoughts.Speak != "hi" || len(rep.got) != 1 || !strings.Contains(rep.got[0], "invalid") {
		t.Errorf("speak = %q, reports = %q", r.Thoughts.Speak, rep.got)
	}
}

func TestPipelineDuplicateCommandKeepsFirst(t *testing.T) {
	finish, _ := Lookup(Finish)
	var rep reports
	p, _ := NewPipeline([]Component{testComp{name: "a", cmd: finish}, testComp{name: "b", cmd: finish}}, rep.report)
	if got := p.Commands(context.Background(), &Step{}); len(got) != 1 || len(rep.got) != 1 {
		t.Errorf("commands = %v, reports = %q", got.Names(), rep.got)
	}
}

// memState is a State in a map.
type memState map[string][]byte

func (m memState) Get(_ context.Context, k string) ([]byte, error) { return m[k], nil }
func (m memState) Put(_ context.Context, k string, v []byte) error {
	m[k] = v
	return nil
}

func TestContextItems(t *testing.T) {
	s := newSandbox(t)
	st := memState{}
	step := &Step{Workspace: s.ws, State: st, Now: time.Now()}
	ctx := context.Background()
	c := ContextItems{}
	cmds, _ := c.Commands(ctx, step)
	if got := Set(cmds).Names(); strings.Join(got, ",") != "open_file,open_folder" {
		t.Fatalf("commands before anything is open = %v", got)
	}
	env := Env{Workspace: s.ws, State: st}
	exec := func(name, path string) (string, error) {
		cmds, _ := c.Commands(ctx, step)
		cmd, ok := Set(cmds).Get(name)
		if !ok {
			t.Fatalf("%s not offered", name)
		}
		return Run(ctx, cmd, env, json.RawMessage(`{"path":`+strconvQuote(path)+`}`), Limits{})
	}
	if _, err := exec("open_file", "docs/readme.txt"); err != nil {
		t.Fatal(err)
	}
	if _, err := exec("open_folder", "docs"); err != nil {
		t.Fatal(err)
	}
	if out, err := exec("open_file", "docs/readme.txt"); err != nil || !strings.Contains(out, "already open") {
		t.Errorf("reopen = %q, %v", out, err)
	}
	for _, bad := range []struct{ cmd, path string }{
		{"open_file", "docs"}, {"open_folder", "docs/readme.txt"}, {"open_file", "secret"}, {"open_file", "../outside/secret.txt"}, {"open_file", "missing.txt"},
	} {
		out, err := exec(bad.cmd, bad.path)
		if err == nil {
			t.Errorf("%s(%s) succeeded: %q", bad.cmd, bad.path, out)
		}
		checkNoLeak(t, out, err)
	}
	step.Budget = 5000
	msgs, err := c.Messages(ctx, step)
	if err != nil || len(msgs) != 1 || !strings.Contains(msgs[0], "## file docs/readme.txt\nhello") || !strings.Contains(msgs[0], "## folder docs\n") {
		t.Fatalf("messages = %q, %v", msgs, err)
	}
	// The content shown is the current one.
	if _, err := run(t, "write_file", s.ws, map[string]string{"path": "docs/readme.txt", "contents": "changed"}, Limits{}); err != nil {
		t.Fatal(err)
	}
	msgs, _ = c.Messages(ctx, step)
	if !strings.Contains(msgs[0], "readme.txt\nchanged") {
		t.Errorf("messages show stale content: %q", msgs)
	}
	step.Budget = 50
	if msgs, _ = c.Messages(ctx, step); !strings.Contains(msgs[0], "no room") {
		t.Errorf("with no budget: %q", msgs)
	}
	if _, err := exec("close_context_item", "docs/readme.txt"); err != nil {
		t.Fatal(err)
	}
	if _, err := exec("close_context_item", "docs/readme.txt"); err == nil {
		t.Error("closing a closed item succeeded")
	}
	if _, err := exec("close_context_item", "docs"); err != nil {
		t.Fatal(err)
	}
	cmds, _ = c.Commands(ctx, step)
	if len(cmds) != 2 {
		t.Errorf("close_context_item still offered with nothing open")
	}
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
