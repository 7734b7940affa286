package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/llm"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/ollamatest"
	"github.com/agentd/agentd/internal/testutil"
)

// The harness every supervisor test starts from: a fake model, a store in a temp folder,
// and the test commands.

// sideEffect is a test command that is not idempotent, so a crash mid-run must not re-run it.
type sideEffect struct{ runs *int }

func (sideEffect) Spec() commands.Spec {
	return commands.Spec{Name: "test_side_effect", Description: "do something once",
		Params: commands.Object(commands.Prop{Name: "what", Schema: commands.String("what", 40)}), Class: commands.ClassWriteWorkspace}
}

func (s sideEffect) Execute(ctx context.Context, env commands.Env, args json.RawMessage) (string, error) {
	sideEffectMu.Lock()
	defer sideEffectMu.Unlock()
	sideEffectRuns++
	return "done", nil
}

var (
	sideEffectMu   sync.Mutex
	sideEffectRuns int
)

// sideEffects is how many times test_side_effect has run in this test binary.
func sideEffects() int {
	sideEffectMu.Lock()
	defer sideEffectMu.Unlock()
	return sideEffectRuns
}

// proposed scripts the model's replies, creates an agent and returns it with its first
// proposal, pending.
func (h *harness) proposed(replies ...string) (*api.Agent, *api.Proposal) {
	h.fake.Script(replies...)
	a := h.create(api.CreateAgentRequest{})
	return a, h.pending(a.ID)
}

// startedAtCrash stops the daemon and marks p started, as a kill -9 between "started"
// and the result leaves it; also, when set, changes more in the same transaction.
func (h *harness) startedAtCrash(p *api.Proposal, also func(tx *store.Tx) error) {
	h.t.Helper()
	h.stop()
	err := h.st.Tx(context.Background(), func(tx *store.Tx) error {
		if _, err := tx.SetProposalStatus(p.ID, api.ProposalStarted, nil); err != nil || also == nil {
			return err
		}
		return also(tx)
	})
	if err != nil {
		h.t.Fatal(err)
	}
}

// executeCmd is a test command of the execute class.
type executeCmd struct{ sideEffect }

func (executeCmd) Spec() commands.Spec {
	s := sideEffect{}.Spec()
	s.Name, s.Class = "test_execute", commands.ClassExecute
	return s
}

func init() {
	commands.Register(sideEffect{})
	commands.Register(executeCmd{})
}

var testCommands = []string{"list_folder", "read_file", "write_file", "ask_user", "finish", "test_side_effect"}

type harness struct {
	t      *testing.T
	fake   *ollamatest.Fake
	st     *store.Store
	sup    *Supervisor
	cancel context.CancelFunc
	dir    string
	opt    Options
}

func newHarness(t *testing.T, mod ...func(*Options)) *harness {
	t.Helper()
	h := &harness{t: t, fake: ollamatest.NewFake(t), dir: t.TempDir()}
	h.fake.SetModels(ollamatest.TinyModelName, "smart")
	st, err := store.Open(context.Background(), filepath.Join(h.dir, "agentd.db"))
	if err != nil {
		t.Fatal(err)
	}
	h.st = st
	c, err := llm.New(h.fake.URL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	h.opt = testOptions(func(o *Options) {
		o.Store, o.LLM, o.Model, o.StateDir, o.Commands = st, c, ollamatest.TinyModelName, h.dir, testCommands
		o.Backoff = func(int) time.Duration { return 20 * time.Millisecond }
		o.Now = func() time.Time { return time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC) }
	})
	for _, m := range mod {
		m(&h.opt)
	}
	h.start()
	t.Cleanup(h.stop)
	return h
}

func (h *harness) start() {
	sup, err := New(h.opt)
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := sup.Start(ctx); err != nil {
		h.t.Fatal(err)
	}
	h.sup, h.cancel = sup, cancel
}

func (h *harness) stop() {
	if h.cancel != nil {
		h.cancel()
		h.sup.Wait()
		h.cancel = nil
	}
}

// reply is a valid model reply proposing name(args).
var reply = ollamatest.Reply

func (h *harness) create(req api.CreateAgentRequest) *api.Agent {
	h.t.Helper()
	if req.Name == "" && req.Task == "" {
		req.Name, req.Description, req.Goals = "tester", "a test agent", []string{"test things"}
	}
	a, err := h.sup.runs.CreateAgent(context.Background(), req)
	if err != nil {
		h.t.Fatal(err)
	}
	return a
}

// createPlanted creates the default agent, lets plant put files in its workspace, then
// starts its run: its first proposal, and that proposal's effect preview, see them.
func (h *harness) createPlanted(plant func(ws string) error) *api.Agent {
	h.t.Helper()
	no := false
	a := h.create(api.CreateAgentRequest{Name: "tester", Description: "a test agent", Goals: []string{"test things"}, Start: &no})
	if err := plant(a.Workspace); err != nil {
		h.t.Fatal(err)
	}
	if _, err := h.sup.runs.Task(context.Background(), a.Name, "test things"); err != nil {
		h.t.Fatal(err)
	}
	return a
}

// waitFor polls the agent until cond holds. The bound is generous, and a wait costs
// nothing when met.
func (h *harness) waitFor(id string, what string, cond func(a *api.Agent) bool) *api.Agent {
	h.t.Helper()
	return h.waitWithin(30*time.Second, id, what, cond)
}

func (h *harness) waitWithin(limit time.Duration, id string, what string, cond func(a *api.Agent) bool) *api.Agent {
	h.t.Helper()
	var a *api.Agent
	var err error
	if !testutil.Wait(limit, func() bool {
		a, err = h.sup.agentViews.Agent(context.Background(), id)
		return err == nil && cond(a)
	}) {
		h.t.Fatalf("timed out waiting for %s; agent = %+v, err = %v", what, a, err)
	}
	return a
}

// waitSteps waits while agent id steps on until it has taken n steps. A long run has no
// fixed bound (under -race on a loaded 2-core machine 64 steps over a long history take
// minutes): it fails when the agent stops stepping (paused, idle, failed), or at the
// test binary's own deadline.
func (h *harness) waitSteps(id string, n int) *api.Agent {
	h.t.Helper()
	limit := 10 * time.Minute
	if d, ok := h.t.Deadline(); ok {
		limit = time.Until(d) - 10*time.Second // fail here, with the agent, before the binary panics
	}
	a := h.waitWithin(limit, id, fmt.Sprintf("%d steps", n), func(a *api.Agent) bool {
		return a.Step >= n || a.State == api.StatePaused || a.State == api.StateIdle || a.State == api.StateFailed
	})
	if a.Step < n {
		h.t.Fatalf("the agent stopped at step %d of %d: %s (%s)", a.Step, n, a.State, a.StateReason)
	}
	return a
}

func (h *harness) pending(id string) *api.Proposal {
	h.t.Helper()
	a := h.waitFor(id, "a pending proposal", func(a *api.Agent) bool {
		return a.State == api.StateAwaitingDecision && a.Pending != nil
	})
	return a.Pending
}

func (h *harness) decide(id string, p *api.Proposal, text string) (*api.Decision, error) {
	req, err := api.ParseDecision(text)
	if err != nil {
		h.t.Fatal(err)
	}
	req.ProposalID, req.Source, req.By = p.ID, "test", "tester"
	return h.sup.decisions.Decide(context.Background(), id, req)
}

func (h *harness) history(id string) []api.Episode {
	eps, err := h.sup.agentViews.History(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return eps
}

// testOptions are a test supervisor's options: the config's defaults
// (OptionsOf(config.Default())), less what this package's tests were written without —
// directives, a budget over every agent, checkpoints — and then what mod sets.
// withDefaultDirectives gives o the config's default directives, which testOptions leaves out.
func withDefaultDirectives(o *Options) {
	d := config.Default().Agent
	o.Constraints, o.Resources, o.BestPractices = d.Constraints, d.Resources, d.BestPractices
}

func testOptions(mod ...func(*Options)) Options {
	o := OptionsOf(config.Default())
	o.Constraints, o.Resources, o.BestPractices = nil, nil, nil
	// No agent budget: the tests that bound agents set their own.
	o.MaxSteps, o.MaxTokens, o.MaxTime, o.MaxDisk = 0, 0, config.Duration{}, 0
	o.Checkpoints.On = false // checkpoints_test.go turns them on
	for _, m := range mod {
		m(&o)
	}
	return o
}

// parts are a supervisor's parts as one api.AgentService, for the tests that serve them
// through the local API's handler as the server does.
type parts struct {
	Runs
	Views
	api.DecisionService
	api.PolicyService
	api.MemoryService
	api.AuditService
	api.DoctorService
	api.BudgetService
	api.CheckpointService
}

func partsOf(sup *Supervisor) parts {
	p := sup.API()
	return parts{p.Runs, p.Views, p.Decisions, p.Policies, p.Memory, p.Audit, p.Doctor, p.Budgets, p.Checkpoints}
}
