package agent

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/ollamatest"
	ollama "github.com/ollama/ollama/api"
)

// stepForever makes every agent write a file it has not written before, so no step is a
// loop and continuous mode never stops to ask.
func stepForever(h *harness) {
	var n atomic.Int64
	h.fake.OnChat(func(*ollama.ChatRequest) (string, error) {
		i := n.Add(1)
		return reply("write_file", map[string]string{"path": fmt.Sprintf("d%d.txt", i), "contents": fmt.Sprint(i)}), nil
	})
}

func continuous() *api.Policy { return &api.Policy{Mode: "continuous", ContinuousLimit: 1 << 30} }

// proposalsOf returns the agent's proposals by step, checking that no step is missing or
// there twice.
func proposalsOf(t *testing.T, h *harness, id string) []api.Proposal {
	t.Helper()
	ps, err := h.sup.agentViews.Proposals(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].Step < ps[j].Step })
	for i, p := range ps {
		if p.Step != i+1 {
			t.Fatalf("agent %s: proposal %d is step %d: a step was dropped or duplicated", id, i+1, p.Step)
		}
	}
	return ps
}

// TestReloadWhileStepping swaps models and permissions while agents step without pause:
// run it with -race. Every step before the swap finishes on the old settings, every step
// begun after it uses the new ones.
func TestReloadWhileStepping(t *testing.T) {
	// Refused rounds may outlast the watchdog's idle steps: these agents step on purpose.
	h := newHarness(t, func(o *Options) { o.WatchdogIdleSteps = 1000 })
	stepForever(h)
	h.fake.SetDelay(2 * time.Millisecond) // steps in flight while the settings change
	var ids []string
	for i := range 3 {
		a := h.create(api.CreateAgentRequest{Name: fmt.Sprintf("busy-%d", i), Description: "d", Task: "list folders", Policy: continuous()})
		ids = append(ids, a.ID)
	}
	base := h.sup.Settings()
	models := []string{"smart", ollamatest.TinyModelName}
	var readers sync.WaitGroup
	stop := make(chan struct{})
	for range 2 { // API readers of the settings meanwhile
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				h.sup.policyService.Commands(context.Background(), ids[0])
				h.sup.policyService.Policy(context.Background(), ids[0])
			}
		}()
	}
	for round := range 6 {
		set := base
		set.Model = models[round%2]
		if round%2 == 0 {
			set.Deny = []string{"write_file(*)"}
		}
		// Let every agent take a few steps under the previous settings first.
		for _, id := range ids {
			n := len(proposalsOf(t, h, id))
			h.waitFor(id, "more steps", func(*api.Agent) bool { return len(proposalsOf(t, h, id)) >= n+2 })
		}
		before := map[string]int{}
		if err := h.sup.Reload(set); err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			before[id] = len(proposalsOf(t, h, id))
		}
		for _, id := range ids {
			// A step begun before the reload may end after it; the ones after that are new.
			h.waitFor(id, "steps on the new settings", func(*api.Agent) bool { return len(proposalsOf(t, h, id)) >= before[id]+4 })
			ps := proposalsOf(t, h, id)
			for _, p := range ps[before[id]+1 : before[id]+4] {
				if p.Model != set.Model {
					t.Errorf("round %d, agent %s, step %d: model %q, want %q", round, id, p.Step, p.Model, set.Model)
				}
				refused := p.Status == api.ProposalFeedback
				if denied := len(set.Deny) > 0; refused != denied && p.Status != api.ProposalStarted && p.Status != api.ProposalApproved {
					t.Errorf("round %d, agent %s, step %d: status %s with deny patterns %v", round, id, p.Step, p.Status, set.Deny)
				}
			}
		}
	}
	close(stop)
	readers.Wait()
	for _, id := range ids {
		a, err := h.sup.agentViews.Agent(context.Background(), id)
		if err != nil {
			t.Fatalf("agent %s lost: %v", id, err)
		}
		if !active(a.State) {
			t.Errorf("agent %s is %s (%s), want it still stepping", a.Name, a.State, a.StateReason)
		}
		// Every settled proposal has exactly one episode.
		ps := proposalsOf(t, h, id)
		eps := h.history(id)
		settled := 0
		for _, p := range ps {
			if p.Status == api.ProposalSucceeded || p.Status == api.ProposalFailed || p.Status == api.ProposalFeedback {
				settled++
			}
		}
		if len(eps) < settled-1 || len(eps) > settled+1 { // one step may be between the two reads
			t.Errorf("agent %s: %d episodes for %d settled proposals", a.Name, len(eps), settled)
		}
	}
}

func TestReloadRefusesBadSettingsAndKeepsTheOld(t *testing.T) {
	h := newHarness(t)
	old := h.sup.Settings()
	for name, mod := range map[string]func(*Settings){
		"unknown_command":   func(s *Settings) { s.Commands = []string{"finish", "ask_user", "no_such_command"} },
		"bad_pattern":       func(s *Settings) { s.Allow = []string{"read_file("} },
		"unknown_component": func(s *Settings) { s.DisabledComponents = []string{"nope"} },
		"agent_without_finish": func(s *Settings) {
			s.Agents = map[string]config.AgentOverride{"bob": {Commands: []string{"read_file"}}}
		},
		"no_model": func(s *Settings) { s.Model = "" },
	} {
		t.Run(name, func(t *testing.T) {
			set := old
			mod(&set)
			if err := h.sup.Reload(set); err == nil {
				t.Fatal("Reload accepted bad settings")
			}
			if got := h.sup.Settings(); got.Model != old.Model || len(got.Commands) != len(old.Commands) || len(got.Allow) != len(old.Allow) {
				t.Errorf("settings changed by a refused reload: %+v", got)
			}
		})
	}
}

func TestReloadChangesWhatPolicyAndCommandsShow(t *testing.T) {
	h := newHarness(t)
	a := h.create(api.CreateAgentRequest{Name: "bob", Description: "d", Start: new(bool)})
	if cmds, _ := h.sup.policyService.Commands(context.Background(), a.ID); len(cmds) == 0 || !slices.ContainsFunc(cmds, func(c api.CommandInfo) bool { return c.Name == "write_file" }) {
		t.Fatalf("bob has no write_file before the reload: %v", cmds)
	}
	set := h.sup.Settings()
	set.Allow = []string{"read_file(*.md)"}
	set.Agents = map[string]config.AgentOverride{"bob": {Commands: []string{"read_file", "ask_user", "finish"}, Deny: []string{"read_file(secret*)"}}}
	if err := h.sup.Reload(set); err != nil {
		t.Fatal(err)
	}
	pv, err := h.sup.policyService.Policy(context.Background(), a.ID)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, p := range pv.Permissions {
		got[p.Source+" "+p.Effect+" "+p.Pattern] = true
	}
	for _, want := range []string{"config allow read_file(*.md)", "agent-config deny read_file(secret*)"} {
		if !got[want] {
			t.Errorf("policy after reload lacks %q: %v", want, got)
		}
	}
	cmds, err := h.sup.policyService.Commands(context.Background(), a.ID)
	if err != nil {
		t.Fatal(err)
	}
	has := map[string]bool{}
	for _, c := range cmds {
		has[c.Name] = true
	}
	if !has["read_file"] || has["write_file"] || has["list_folder"] {
		t.Errorf("bob's commands after reload = %v, want read_file and not write_file or list_folder", has)
	}
}

// TestAgentTableBudgetReplacesOnlyTheFieldsItSets: an [agents.NAME] table's max_steps
// bounds that agent's steps while [agent]'s other bounds still hold; a table that sets
// no bound leaves [agent]'s budget as it is.
func TestAgentTableBudgetReplacesOnlyTheFieldsItSets(t *testing.T) {
	cfg := config.Default()
	cfg.Agent.MaxSteps, cfg.Agent.MaxTokens = 30, 1000
	cfg.Agents = map[string]config.AgentOverride{"poller": {MaxSteps: new(5)}, "plain": {Allow: []string{"read_file(*)"}}}
	opt := OptionsOf(cfg)
	base := opt.AgentConfig.Budget()
	b := &budgets{base: base, overrides: opt.Agents}
	if got := b.agentBudget(&store.Agent{Agent: api.Agent{Name: "poller"}}); got.MaxSteps != 5 || got.MaxTokens != 1000 {
		t.Errorf("poller's budget = %+v, want 5 steps and [agent]'s 1000 tokens", got)
	}
	if got := b.agentBudget(&store.Agent{Agent: api.Agent{Name: "plain"}}); got != base {
		t.Errorf("plain's budget = %+v, want [agent]'s %+v", got, base)
	}
}
