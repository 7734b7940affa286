package agent

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/agent/cycle"
	"github.com/agentd/agentd/daemon/agent/policy"
	"github.com/agentd/agentd/daemon/effect"
	"github.com/agentd/agentd/daemon/run"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/randid"
)

// CreateAgent creates an agent from a task (the model writes its profile on its first step)
// or from a name, description and goals, and starts its run.
func (s *runs) CreateAgent(ctx context.Context, req api.CreateAgentRequest) (*api.Agent, error) {
	opt, err := requestOptions(req.Budget)
	if err != nil {
		return nil, err
	}
	return s.createAgent(ctx, req, opt, false)
}

// createAgent is CreateAgent; opt, when set, must start a run and applies to it.
// batch marks the run's model calls as batch work (priority.go).
func (s *runs) createAgent(ctx context.Context, req api.CreateAgentRequest, opt *run.Options, batch bool) (*api.Agent, error) {
	if err := checkCreate(&req); err != nil {
		return nil, err
	}
	cmds, err := s.checkAgentCommands(ctx, req.Name, req.Commands)
	if err != nil {
		return nil, err
	}
	a, pats, err := newAgentRecord(req, cmds, opt)
	if err != nil {
		return nil, err
	}
	a.Workspace = s.workspaces.workspace(a.ID)
	start := a.Task != ""
	if req.Start != nil {
		start = *req.Start && a.Task != ""
	}
	if start {
		a.RunID = randid.ID("r-")
	} else if opt != nil {
		return nil, badRequest("a run budget needs a run to bound: give a task or goals and let it start")
	}
	if err := makeWorkspace(a.Workspace); err != nil {
		return nil, err
	}
	var out *api.Agent
	err = s.st.Tx(ctx, func(tx *store.Tx) error {
		if taken, err := tx.NameTaken(a.Name); err != nil {
			return err
		} else if taken {
			return conflict("an agent named %q exists already: pick another name", a.Name)
		}
		if err := tx.InsertAgent(a); err != nil {
			return err
		}
		if start { // the new agent's first run
			if _, _, err := transit(tx, a, nil, cycle.Event{Kind: cycle.Task}); err != nil {
				return err
			}
			if err := tx.UpdateAgent(a); err != nil {
				return err
			}
		}
		if opt != nil {
			if err := s.applyRunOptions(tx, a, opt, pats); err != nil {
				return err
			}
		}
		by, source := "", "api"
		if opt != nil {
			by, source = opt.By, opt.Source
		}
		if err := policy.GrantAutoSteps(tx, a, by, source); err != nil {
			return err
		}
		if err := tx.Audit(a.ID, "created", map[string]any{"name": a.Name, "task": a.Task, "goals": a.Goals}); err != nil {
			return err
		}
		var err error
		out, err = created(tx, a, s.events.Publish)
		return err
	})
	if err != nil {
		removeWorkspace(a.Workspace)
		return nil, err
	}
	if opt != nil {
		s.budgets.setBudget(a.RunID, a.ID, opt.Budget, out.CreatedAt, 0)
	}
	if start && batch {
		s.batchRuns.mark(a.RunID) // before the loop's first step
	}
	if start {
		s.host.kick(a.ID)
	}
	return out, nil
}

// newAgentRecord is the agent req asks for, not yet stored, with the commands cmds and
// the policy of req or of opt, its run's options (whose patterns it returns, checked).
func newAgentRecord(req api.CreateAgentRequest, cmds []string, opt *run.Options) (*store.Agent, []string, error) {
	pol := api.Policy{Mode: "ask"}
	if req.Policy != nil {
		pol = *req.Policy
		if err := checkPolicy(pol); err != nil {
			return nil, nil, err
		}
	}
	var pats []string
	if opt != nil {
		var err error
		if pats, err = checkRunOptions(opt); err != nil {
			return nil, nil, err
		}
		if opt.Policy != nil {
			pol = *opt.Policy
		}
	}
	a := &store.Agent{Agent: api.Agent{
		ID: randid.ID("a-"), Name: req.Name, Description: strings.TrimSpace(req.Description),
		Goals: req.Goals, Task: req.Task, Policy: pol, State: cycle.Initial, Commands: cmds,
	}}
	if a.Task == "" && len(a.Goals) > 0 {
		a.Task = api.GoalsTask
	}
	if a.Name == "" {
		a.Name = tempName(a.ID)
	}
	if a.Description == "" && req.Task == "" {
		a.Description = "an autonomous assistant"
	}
	return a, pats, nil
}

// checkCreate checks a request for a new agent, trimming its task and name.
func checkCreate(req *api.CreateAgentRequest) error {
	req.Task = strings.TrimSpace(req.Task)
	req.Name = strings.TrimSpace(req.Name)
	if req.Task == "" && len(req.Goals) == 0 && req.Name == "" {
		return badRequest("give a task, or a name with goals")
	}
	if req.Name != "" && !nameRE.MatchString(req.Name) {
		return badRequest("name %q: use 1-40 lowercase letters, digits, - or _, starting with a letter or digit", req.Name)
	}
	if len(req.Goals) > 5 {
		return badRequest("%d goals: at most 5", len(req.Goals))
	}
	for i, g := range req.Goals {
		if strings.TrimSpace(g) == "" {
			return badRequest("goal %d is empty", i+1)
		}
	}
	if len(req.Task) > api.MaxTextBytes {
		return badRequest("task is %d bytes: at most %d; shorten it, or put the details in a file in the workspace", len(req.Task), api.MaxTextBytes)
	}
	return nil
}

// checkAgentCommands checks a new agent's command list against the commands it would
// have without one, and returns it without duplicates. MCP tools (names with a dot) are
// taken on trust: their servers connect in the background.
func (s *runs) checkAgentCommands(ctx context.Context, name string, names []string) ([]string, error) {
	if len(names) == 0 {
		return nil, nil
	}
	if len(names) > 64 {
		return nil, badRequest("%d commands: at most 64", len(names))
	}
	a := &store.Agent{Agent: api.Agent{Name: name}}
	have := map[string]bool{}
	for _, c := range s.host.commandsFor(ctx, s.host.live(), a, s.host.stepOf(a)) {
		have[c.Spec().Name] = true
	}
	var out, unknown []string
	for _, n := range names {
		n = strings.TrimSpace(n)
		switch {
		case slices.Contains(out, n):
		case have[n] || (strings.Contains(n, ".") && n != "."):
			out = append(out, n)
		default:
			unknown = append(unknown, fmt.Sprintf("%q", n))
		}
	}
	if len(unknown) > 0 {
		return nil, badRequest("unknown command %s: see agentctl commands", strings.Join(unknown, ", "))
	}
	return out, nil
}

// DeleteAgent stops an agent and removes it, its history and its workspace, with its
// helpers (theirs too) in the same transaction.
func (s *runs) DeleteAgent(ctx context.Context, ref string) error {
	all, err := s.removals(ctx, ref)
	if err != nil {
		return err
	}
	// Runner locks are taken in ID order, the one place more than one is held.
	locked := make([]*runner, len(all))
	for i, g := range all {
		locked[i] = s.host.runner(g.id)
	}
	order := slices.Clone(locked)
	slices.SortFunc(order, func(a, b *runner) int { return strings.Compare(a.id, b.id) })
	for _, r := range order {
		r.mu.Lock()
		r.cancelAll()
	}
	err = s.st.Tx(ctx, func(tx *store.Tx) error { return s.removeTx(tx, all) })
	for _, r := range order {
		r.mu.Unlock()
	}
	if err != nil {
		return err
	}
	for i := len(all) - 1; i >= 0; i-- {
		locked[i].wakeUp()
		s.removed(all[i])
	}
	s.endRemovedRuns(ctx, all)
	return nil
}

// removal is one agent DeleteAgent removes.
type removal struct {
	id, ws, name string
	helper       bool
	open         *run.End // the run the removal ends, if one was going
}

// removals are the agents removing ref removes: it, then its helpers (theirs too).
func (s *runs) removals(ctx context.Context, ref string) ([]removal, error) {
	return onAgent(ctx, s.st.View, ref, func(tx *store.Tx, a *store.Agent) ([]removal, error) {
		fam, err := family(tx, a)
		if err != nil {
			return nil, err
		}
		var all []removal
		for _, a := range fam {
			g := removal{id: a.ID, ws: a.Workspace, name: a.Name, helper: a.ParentID != ""}
			s.history.forgetHistory(a.ID)
			if r, err := tx.Run(a.RunID); err == nil && r.Ended.IsZero() {
				g.open = &run.End{RunID: r.ID, AgentID: a.ID, Outcome: api.RunRemoved, Reason: "the agent was removed",
					Steps: a.Step, Tokens: a.PromptTokens + a.EvalTokens - r.TokensBase}
			}
			all = append(all, g)
		}
		return all, nil
	})
}

// removeTx deletes the agents in all, with their memories, in tx.
func (s *runs) removeTx(tx *store.Tx, all []removal) error {
	for _, g := range all {
		if err := tx.Audit(g.id, "removed", nil); err != nil {
			return err
		}
		ids, err := tx.DeleteMemories(g.id, "", "")
		if err != nil {
			return err
		}
		s.memory.forget(tx, ids)
	}
	// Helpers first: nothing is left pointing at a removed parent. Who follows each is
	// told once this commits.
	for i := len(all) - 1; i >= 0; i-- {
		a, err := tx.Agent(all[i].id)
		if err != nil {
			return err
		}
		threads, err := tx.ThreadsOf(a.ID)
		if err != nil {
			return err
		}
		open, err := tx.OpenChatMessages(a.ID)
		if err != nil {
			return err
		}
		c := &change{a: a, ev: cycle.Event{Kind: cycle.Removed}, pub: s.events.Publish, threads: threads, messages: open}
		if _, err := apply(tx, c); err != nil {
			return err
		}
		if err := tx.DeleteAgent(a.ID); err != nil {
			return err
		}
	}
	return nil
}

// removed forgets g, whose removal committed (and was told to who follows it): its
// runner, workspace and walks.
func (s *runs) removed(g removal) {
	s.host.dropRunner(g.id)
	// A helper's workspace is <parent ws>/agents/<key>, made by start_agent. Removal
	// goes through the folder above, so a link swapped in goes, never its target.
	if g.ws != "" && (g.ws == s.workspaces.workspace(g.id) || g.helper) {
		if err := removeWorkspace(g.ws); err != nil {
			s.log.Warn("agent: workspace not removed", "agent", g.id, "dir", g.ws, "err", err)
		}
	}
	s.budgets.walks.forget(g.id)
	if err := s.previews.Forget(g.id); err != nil {
		s.log.Warn("agent: effect previews not removed", "agent", g.id, "err", err)
	}
	if s.onRemoved != nil {
		s.onRemoved(g.id)
	}
}

// endRemovedRuns ends the runs the removal of all ended.
func (s *runs) endRemovedRuns(ctx context.Context, all []removal) {
	for i, g := range all {
		if g.open == nil {
			continue
		}
		s.budgets.dropBudget(g.open.RunID)
		s.batchRuns.drop(g.open.RunID)
		if i == 0 {
			// A parent may be waiting for the removed agent (removed by a person or by
			// the parent's delete_agent); its helpers' parents are gone with them.
			s.helpers.deliverHelper(ctx, g.open.RunID, g.open, g.name)
		}
		if s.onRunEnd != nil {
			s.onRunEnd(*g.open)
		}
	}
}

// runs starts, changes and ends agents' runs: creating and removing agents, giving them
// tasks, pausing, resuming and stopping them, and what happens when a run ends.
type runs struct {
	host       runHost // the supervisor: runners, settings, pipelines
	workspaces *workspaceDirs
	st         *store.Store
	log        *slog.Logger
	events     *run.Broker
	onRunEnd   func(run.End)   // Options.OnRunEnd
	onRemoved  func(id string) // Options.OnAgentRemoved
	budgets    *budgets
	batchRuns  *batchRuns // runs started by StartTask and CreateRun
	helpers    *helpers
	memory     *memoryService
	history    *episodeHistory  // stores the summaries waiting, with every change (storeWith)
	previews   *effect.Previews // a removed agent's effect previews go with it
}

// applyRunOptions stores the run's budget, the agent's patterns and what a check found
// before the run (its first step) in tx.
func (s *runs) applyRunOptions(tx *store.Tx, a *store.Agent, opt *run.Options, pats []string) error {
	if !opt.Budget.IsZero() {
		if err := tx.SetRunBudget(a.RunID, opt.Budget.MaxSteps, opt.Budget.MaxTokens, opt.Budget.MaxWall); err != nil {
			return err
		}
	}
	for _, p := range pats {
		if _, err := tx.AddPermission(a.ID, "allow", p, opt.By); err != nil {
			return err
		}
	}
	if opt.Observation == "" || a.RunID == "" {
		return nil
	}
	ep := &api.Episode{RunID: a.RunID, Command: CheckCommand, Args: []byte("{}"), Outcome: "succeeded", Result: opt.Observation}
	if err := tx.InsertEpisode(a.ID, ep); err != nil {
		return err
	}
	tx.AfterCommit(func() { s.history.gens.bump(a.ID) })
	return nil
}

// CheckCommand names the step that holds what a schedule's check found before its run
// started, in the run's history and the model's prompt.
const CheckCommand = "schedule_check"

// runHost is what runs need of the supervisor: the agents' runners and settings and the
// commands agents may use.
type runHost interface {
	commandSource
	live() *live
	kick(id string)
	runner(id string) *runner
	dropRunner(id string) // forgets a removed agent's runner
}
