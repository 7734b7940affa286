package agent

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/store"
)

// explodingComponent panics in every protocol method it implements.
type explodingComponent struct{}

func (explodingComponent) Name() string { return "exploding" }
func (explodingComponent) Directives(context.Context, *commands.Step) (commands.Directives, error) {
	panic("directives exploded")
}
func (explodingComponent) Messages(context.Context, *commands.Step) ([]string, error) {
	panic("messages exploded")
}
func (explodingComponent) Commands(context.Context, *commands.Step) ([]commands.Command, error) {
	panic("commands exploded")
}
func (explodingComponent) AfterParse(context.Context, *commands.Step, *commands.Reply) error {
	panic("after parse exploded")
}
func (explodingComponent) AfterExecute(context.Context, *commands.Step, *commands.Outcome) error {
	panic("after execute exploded")
}

func TestPanickingComponentIsSkipped(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Components = []commands.Component{explodingComponent{}} })
	events, unsub := h.sup.events.Subscribe("", 0)
	defer unsub()
	a, p := h.proposed(reply("list_folder", map[string]string{"path": "."}), reply("finish", map[string]string{"reason": "done"}))
	if _, err := h.decide(a.ID, p, "y"); err != nil {
		t.Fatal(err)
	}
	p2 := h.pending(a.ID)
	if p2.Command != "finish" {
		t.Fatalf("second proposal = %+v", p2)
	}
	eps := h.history(a.ID)
	if len(eps) != 1 || eps[0].Outcome != "succeeded" {
		t.Fatalf("history = %+v", eps)
	}
	hooks := map[string]bool{}
	for len(events) > 0 {
		ev := <-events
		if ev.Type == api.EventError && strings.Contains(ev.Message, "component exploding failed in") {
			hooks[strings.Fields(strings.SplitAfter(ev.Message, "failed in ")[1])[0]] = true
		}
	}
	for _, hk := range []string{"Directives", "Commands", "Messages", "AfterParse", "AfterExecute"} {
		if !hooks[hk] {
			t.Errorf("no error event for the panic in %s; got %v", hk, hooks)
		}
	}
}

func TestContextComponentShowsOpenFiles(t *testing.T) {
	h := newHarness(t)
	h.fake.Script(
		reply("write_file", map[string]string{"path": "plan.md", "contents": "step one"}),
		reply("open_file", map[string]string{"path": "plan.md"}),
		reply("list_folder", map[string]string{"path": "."}),
	)
	a := h.create(api.CreateAgentRequest{})
	for i := 0; i < 2; i++ {
		p := h.pending(a.ID)
		if _, err := h.decide(a.ID, p, "y"); err != nil {
			t.Fatal(err)
		}
		h.waitFor(a.ID, "the next proposal", func(a *api.Agent) bool { return a.Pending != nil && a.Pending.ID != p.ID })
	}
	reqs := h.fake.Requests()
	last := joinContent(reqs[len(reqs)-1].Messages)
	if !strings.Contains(last, "## file plan.md\nstep one") {
		t.Errorf("the prompt after open_file does not show the file:\n%s", last)
	}
	if !strings.Contains(last, "close_context_item(") {
		t.Errorf("close_context_item not offered while a file is open:\n%s", last)
	}
	if !strings.Contains(string(reqs[len(reqs)-1].Format), `"close_context_item"`) {
		t.Errorf("close_context_item not in the reply schema")
	}
}

// failingCommands is a command provider whose every call fails.
type failingCommands struct{}

func (failingCommands) Name() string { return "failing" }
func (failingCommands) Commands(context.Context, *commands.Step) ([]commands.Command, error) {
	return nil, errors.New("provider is down")
}

// A component that fails while a transaction reads the agent's commands (a policy test
// does, in a read) is reported in that transaction: the error is shown to the agent's
// followers once the read ends, not lost with it and not written in a second one.
func TestComponentFailureInsideATransactionIsShownOnceItEnds(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Components = []commands.Component{failingCommands{}} })
	a := h.create(api.CreateAgentRequest{Name: "idle-one"}) // no task: no loop asks the components meanwhile
	events, unsub := h.sup.events.Subscribe(a.ID, 0)
	defer unsub()
	for len(events) > 0 {
		<-events
	}
	if _, err := h.sup.policyService.TestPolicy(context.Background(), a.ID, api.PolicyTestRequest{Command: "read_file", Subject: "notes.md"}); err != nil {
		t.Fatal(err)
	}
	var got []api.Event
	for len(events) > 0 {
		got = append(got, <-events)
	}
	if len(got) != 1 || got[0].Type != api.EventError || got[0].AgentID != a.ID ||
		!strings.Contains(got[0].Message, "component failing failed in Commands and was skipped for this step: provider is down") {
		t.Fatalf("events after the policy test = %+v, want one error event naming the failing component", got)
	}
}

// A component that fails with no stored agent to tell (a new agent's command list is
// checked against the commands the components offer) is not only logged: agentctl doctor
// warns of it, naming the component, the hook, the error and how often it failed, with
// the fix. Doctor is silent on components while none has failed.
func TestComponentFailureWithNoStoredAgentIsShownByDoctor(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Components = []commands.Component{failingCommands{}} })
	componentChecks := func() []api.Check {
		rep, err := h.sup.doctor.Doctor(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var out []api.Check
		for _, c := range rep.Checks {
			if strings.HasPrefix(c.Name, "component") {
				out = append(out, c)
			}
		}
		return out
	}
	if got := componentChecks(); len(got) != 0 {
		t.Fatalf("doctor before any failure = %+v, want no component check", got)
	}
	h.create(api.CreateAgentRequest{Name: "listed", Commands: []string{"read_file"}})
	got := componentChecks()
	if len(got) != 1 || got[0].Name != "component failing" || got[0].Status != api.CheckWarn || got[0].Fix == "" ||
		!strings.Contains(got[0].Detail, "in Commands for agent listed, being created: provider is down") {
		t.Fatalf("doctor after the failure = %+v, want one warning naming the failing component, its hook, the new agent and the error, with a fix", got)
	}
	if !strings.Contains(got[0].Detail, "failed 1 time since") {
		t.Errorf("doctor's count = %q, want 1 time", got[0].Detail)
	}
}

// A component failure reported inside a write transaction that then rolls back shows
// no event to the agent's followers (nothing of the transaction happened), and agentctl
// doctor still warns of it.
func TestComponentFailureInARolledBackTransactionIsShownByDoctor(t *testing.T) {
	h := newHarness(t)
	a := h.create(api.CreateAgentRequest{Name: "idle-one"})
	events, unsub := h.sup.events.Subscribe(a.ID, 0)
	defer unsub()
	for len(events) > 0 {
		<-events
	}
	rolledBack := errors.New("rolled back")
	err := h.sup.st.Tx(context.Background(), func(tx *store.Tx) error {
		stored, err := tx.Agent(a.ID)
		if err != nil {
			return err
		}
		step := h.sup.stepOf(stored)
		step.State = txState{tx: tx, id: a.ID}
		h.sup.reportComponent(step, "flaky", "Messages", errors.New("index is gone"))
		return rolledBack
	})
	if !errors.Is(err, rolledBack) {
		t.Fatalf("transaction = %v, want it rolled back", err)
	}
	if len(events) != 0 {
		t.Errorf("an event from a rolled-back transaction was published: %+v", <-events)
	}
	rep, err := h.sup.doctor.Doctor(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, c := range rep.Checks {
		found = found || c.Name == "component flaky" && c.Status == api.CheckWarn &&
			strings.Contains(c.Detail, "in Messages for agent idle-one: index is gone")
	}
	if !found {
		t.Errorf("doctor = %+v, want a warning of component flaky's failure in Messages", rep.Checks)
	}
}

// A command list may name commands a component offers (web_search, execute_shell,
// open_file): the list resolves, and those are left to their components.
func TestBuiltinCommandsLeaveComponentCommandsToTheirComponents(t *testing.T) {
	set, err := builtinCommands([]string{"read_file", "web_search", "execute_shell", "open_file", "ask_user", "finish"})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"read_file", "ask_user", "finish"} {
		if _, ok := set.Get(n); !ok {
			t.Errorf("built-in %s missing from the set", n)
		}
	}
	for _, n := range []string{"web_search", "execute_shell", "open_file"} {
		if _, ok := set.Get(n); ok {
			t.Errorf("%s in the built-in set: its component offers it", n)
		}
	}
	if _, err := builtinCommands([]string{"no_such_command", "ask_user", "finish"}); err == nil {
		t.Error("an unknown command resolved")
	}
}
