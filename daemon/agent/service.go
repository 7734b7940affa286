package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/agent/cycle"
	"github.com/agentd/agentd/daemon/client"
	"github.com/agentd/agentd/daemon/localapi"
	"github.com/agentd/agentd/daemon/run"
	"github.com/agentd/agentd/daemon/store"
)

var _ localapi.AgentService = (*Supervisor)(nil)

// Status reports the daemon, the model server and the agents by state.
func (s *Supervisor) Status(ctx context.Context) (*client.Status, error) {
	st := &client.Status{
		Version: s.opt.Version, PID: os.Getpid(), Started: s.started, StateDir: s.opt.StateDir,
		Ollama: s.model.status(), Agents: map[string]int{},
	}
	err := s.st.View(ctx, func(tx *store.Tx) error {
		agents, err := tx.Agents()
		for _, a := range agents {
			st.Agents[string(a.State)]++
		}
		return err
	})
	return st, err
}

// Agents lists every agent.
func (s *Supervisor) Agents(ctx context.Context) ([]client.Agent, error) {
	out := []client.Agent{}
	err := s.st.View(ctx, func(tx *store.Tx) error {
		agents, err := tx.Agents()
		if err != nil {
			return err
		}
		for _, a := range agents {
			v, err := view(tx, a)
			if err != nil {
				return err
			}
			v.Budget = s.budgetView(a)
			out = append(out, *v)
		}
		return nil
	})
	return out, err
}

// shownRuns is how many of its latest runs an agent is shown with.
const shownRuns = 5

// Agent returns one agent with its budget and latest runs.
func (s *Supervisor) Agent(ctx context.Context, ref string) (*client.Agent, error) {
	var out *client.Agent
	err := s.st.View(ctx, func(tx *store.Tx) error {
		a, err := resolve(tx, ref)
		if err != nil {
			return err
		}
		if out, err = view(tx, a); err != nil {
			return err
		}
		out.Budget = s.budgetView(a)
		out.Runs, err = tx.Runs(a.ID, shownRuns)
		return err
	})
	return out, err
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,39}$`)

func badRequest(format string, args ...any) error {
	return client.Errorf(client.ErrBadRequest, format, args...)
}

func conflict(format string, args ...any) error {
	return client.Errorf(client.ErrConflict, format, args...)
}

func notFound(format string, args ...any) error {
	return client.Errorf(client.ErrNotFound, format, args...)
}

// CreateAgent creates an agent from a task (the model writes its profile on its first step)
// or from a name, description and goals, and starts its run.
func (s *Supervisor) CreateAgent(ctx context.Context, req client.CreateAgentRequest) (*client.Agent, error) {
	opt, err := requestOptions(req.Budget)
	if err != nil {
		return nil, err
	}
	return s.createAgent(ctx, req, opt)
}

// createAgent is CreateAgent; opt, when set, must start a run and applies to it.
func (s *Supervisor) createAgent(ctx context.Context, req client.CreateAgentRequest, opt *run.Options) (*client.Agent, error) {
	req.Task = strings.TrimSpace(req.Task)
	req.Name = strings.TrimSpace(req.Name)
	if req.Task == "" && len(req.Goals) == 0 && req.Name == "" {
		return nil, badRequest("give a task, or a name with goals")
	}
	if req.Name != "" && !nameRE.MatchString(req.Name) {
		return nil, badRequest("name %q: use 1-40 lowercase letters, digits, - or _, starting with a letter or digit", req.Name)
	}
	if len(req.Goals) > 5 {
		return nil, badRequest("%d goals: at most 5", len(req.Goals))
	}
	for i, g := range req.Goals {
		if strings.TrimSpace(g) == "" {
			return nil, badRequest("goal %d is empty", i+1)
		}
	}
	if len(req.Task) > 8000 {
		return nil, badRequest("task is %d bytes: at most 8000", len(req.Task))
	}
	cmds, err := s.checkAgentCommands(ctx, req.Name, req.Commands)
	if err != nil {
		return nil, err
	}
	pol := client.Policy{Mode: "ask"}
	if req.Policy != nil {
		pol = *req.Policy
		if err := checkPolicy(pol); err != nil {
			return nil, err
		}
	}
	var pats []string
	if opt != nil {
		var err error
		if pats, err = checkRunOptions(opt); err != nil {
			return nil, err
		}
		if opt.Policy != nil {
			pol = *opt.Policy
		}
	}
	a := &store.Agent{Agent: client.Agent{
		ID: newID("a-"), Name: req.Name, Description: strings.TrimSpace(req.Description),
		Goals: req.Goals, Task: req.Task, Policy: pol, State: cycle.Initial, Commands: cmds,
	}}
	if a.Task == "" && len(a.Goals) > 0 {
		a.Task = "Achieve the goals below."
	}
	if a.Name == "" {
		a.Name = "agent-" + a.ID[2:8]
	}
	if a.Description == "" && req.Task == "" {
		a.Description = "an autonomous assistant"
	}
	a.Workspace = s.workspace(a.ID)
	start := a.Task != ""
	if req.Start != nil {
		start = *req.Start && a.Task != ""
	}
	if start {
		a.RunID = newID("r-")
		if _, _, err := transit(nil, a, nil, cycle.Event{Kind: cycle.Task}); err != nil {
			return nil, err
		}
	} else if opt != nil {
		return nil, badRequest("a run budget needs a run to bound: give a task or goals and let it start")
	}
	if err := makeWorkspace(a.Workspace); err != nil {
		return nil, err
	}
	var out *client.Agent
	err = s.st.Tx(ctx, func(tx *store.Tx) error {
		if taken, err := tx.NameTaken(a.Name); err != nil {
			return err
		} else if taken {
			return conflict("an agent named %q exists already: pick another name", a.Name)
		}
		if err := tx.InsertAgent(a); err != nil {
			return err
		}
		if start {
			if err := tx.StartRun(a.RunID, a.ID, a.Task); err != nil {
				return err
			}
		}
		if opt != nil {
			if err := applyRunOptions(tx, a, opt, pats); err != nil {
				return err
			}
		}
		tx.Audit(a.ID, "created", map[string]any{"name": a.Name, "task": a.Task, "goals": a.Goals})
		var err error
		out, err = view(tx, a)
		return err
	})
	if err != nil {
		removeWorkspace(a.Workspace)
		return nil, err
	}
	s.events.Publish(client.Event{Type: client.EventState, AgentID: a.ID, Agent: out, Message: "created"})
	if opt != nil {
		s.setBudget(a.RunID, a.ID, opt.Budget, out.CreatedAt, 0)
	}
	if start {
		s.kick(a.ID)
	}
	return out, nil
}

// checkAgentCommands checks a new agent's command list against the commands it would
// have without one, and returns it without duplicates. MCP tools (names with a dot) are
// taken on trust: their servers connect in the background.
func (s *Supervisor) checkAgentCommands(ctx context.Context, name string, names []string) ([]string, error) {
	if len(names) == 0 {
		return nil, nil
	}
	if len(names) > 64 {
		return nil, badRequest("%d commands: at most 64", len(names))
	}
	a := &store.Agent{Agent: client.Agent{Name: name}}
	have := map[string]bool{}
	for _, c := range s.commandsFor(ctx, s.live(), a, s.stepOf(a)) {
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

func checkPolicy(p client.Policy) error {
	switch p.Mode {
	case "ask", "auto", "continuous":
	default:
		return badRequest("policy mode %q: use ask, auto or continuous", p.Mode)
	}
	if p.AutoSteps < 0 || p.ContinuousLimit < 0 {
		return badRequest("policy step counts cannot be negative")
	}
	return nil
}

// DeleteAgent stops an agent and removes it, its history and its workspace, with its
// helpers (theirs too) in the same transaction.
func (s *Supervisor) DeleteAgent(ctx context.Context, ref string) error {
	type gone struct {
		id, ws, name string
		helper       bool
		open         *run.End // the run the removal ends, if one was going
	}
	var all []gone
	err := s.st.View(ctx, func(tx *store.Tx) error {
		a, err := resolve(tx, ref)
		if err != nil {
			return err
		}
		fam, err := family(tx, a)
		if err != nil {
			return err
		}
		for _, a := range fam {
			g := gone{id: a.ID, ws: a.Workspace, name: a.Name, helper: a.ParentID != ""}
			s.gens.bump(a.ID)
			s.older.forget(a.ID)
			if r, err := tx.Run(a.RunID); err == nil && r.Ended.IsZero() {
				g.open = &run.End{RunID: r.ID, AgentID: a.ID, Outcome: run.OutcomeRemoved, Reason: "the agent was removed",
					Steps: a.Step, Tokens: a.PromptTokens + a.EvalTokens - r.TokensBase}
			}
			all = append(all, g)
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Runner locks are taken in ID order, the one place more than one is held.
	locked := make([]*runner, len(all))
	for i, g := range all {
		locked[i] = s.runner(g.id)
	}
	order := slices.Clone(locked)
	slices.SortFunc(order, func(a, b *runner) int { return strings.Compare(a.id, b.id) })
	for _, r := range order {
		r.mu.Lock()
		r.cancelAll()
	}
	err = s.st.Tx(ctx, func(tx *store.Tx) error {
		for _, g := range all {
			tx.Audit(g.id, "removed", nil)
			ids, err := tx.DeleteMemories(g.id, "", "")
			if err != nil {
				return err
			}
			s.forget(tx, ids)
		}
		// Helpers first: nothing is left pointing at a removed parent.
		for i := len(all) - 1; i >= 0; i-- {
			if err := tx.DeleteAgent(all[i].id); err != nil {
				return err
			}
		}
		return nil
	})
	for _, r := range order {
		r.mu.Unlock()
	}
	if err != nil {
		return err
	}
	for i := len(all) - 1; i >= 0; i-- {
		g := all[i]
		locked[i].wakeUp()
		s.mu.Lock()
		delete(s.runners, g.id)
		s.mu.Unlock()
		// A helper's workspace is <parent ws>/agents/<key>, made by start_agent. Removal
		// goes through the folder above, so a link swapped in goes, never its target.
		if g.ws != "" && (g.ws == s.workspace(g.id) || g.helper) {
			if err := removeWorkspace(g.ws); err != nil {
				s.log.Warn("agent: workspace not removed", "agent", g.id, "dir", g.ws, "err", err)
			}
		}
		s.events.Publish(client.Event{Type: client.EventRemoved, AgentID: g.id})
	}
	for i, g := range all {
		if g.open == nil {
			continue
		}
		s.dropBudget(g.open.RunID)
		if i == 0 {
			// A parent may be waiting for the removed agent (removed by a person or by
			// the parent's delete_agent); its helpers' parents are gone with them.
			s.deliverHelper(ctx, g.open.RunID, g.open, g.name)
		}
		if s.opt.OnRunEnd != nil {
			s.opt.OnRunEnd(*g.open)
		}
	}
	return nil
}

// History returns an agent's episodes.
func (s *Supervisor) History(ctx context.Context, ref string) ([]client.Episode, error) {
	out := []client.Episode{}
	err := s.st.View(ctx, func(tx *store.Tx) error {
		a, err := resolve(tx, ref)
		if err != nil {
			return err
		}
		eps, err := tx.Episodes(a.ID, 0)
		if eps != nil {
			out = eps
		}
		return err
	})
	return out, err
}

// Proposals returns an agent's proposals.
func (s *Supervisor) Proposals(ctx context.Context, ref string) ([]client.Proposal, error) {
	out := []client.Proposal{}
	err := s.st.View(ctx, func(tx *store.Tx) error {
		a, err := resolve(tx, ref)
		if err != nil {
			return err
		}
		ps, err := tx.Proposals(a.ID)
		if ps != nil {
			out = ps
		}
		return err
	})
	return out, err
}

// Subscribe streams events.
func (s *Supervisor) Subscribe(ref string, since int64) (<-chan client.Event, func(), error) {
	id := ""
	if ref != "" {
		a, err := s.Agent(context.Background(), ref)
		if err != nil {
			return nil, nil, err
		}
		id = a.ID
	}
	ch, cancel := s.events.Subscribe(id, since)
	return ch, cancel, nil
}

// mutate runs fn on the agent under its runner's lock in one transaction, then publishes
// the agent's new state and wakes its loop.
func (s *Supervisor) mutate(ctx context.Context, ref string, fn func(tx *store.Tx, a *store.Agent, r *runner) error) (*client.Agent, error) {
	return s.mutateThen(ctx, ref, fn, nil)
}

// mutateThen is mutate that also publishes events(agent) before the state event. Events
// are published under the agent's lock, so followers see them in the order of the commits,
// and before the loop is woken, so a decision is never shown after its result.
func (s *Supervisor) mutateThen(ctx context.Context, ref string, fn func(tx *store.Tx, a *store.Agent, r *runner) error, events func(*client.Agent) []client.Event) (*client.Agent, error) {
	var id string
	if err := s.st.View(ctx, func(tx *store.Tx) error {
		a, err := resolve(tx, ref)
		if err == nil {
			id = a.ID
		}
		return err
	}); err != nil {
		return nil, err
	}
	r := s.runner(id)
	r.mu.Lock()
	var out *client.Agent
	err := s.st.Tx(ctx, func(tx *store.Tx) error {
		a, err := tx.Agent(id)
		if errors.Is(err, store.ErrNotFound) {
			return notFound("no agent %q: see `agentctl ls`", ref)
		} else if err != nil {
			return err
		}
		if err := fn(tx, a, r); err != nil {
			return err
		}
		if err := tx.UpdateAgent(a); err != nil {
			return err
		}
		out, err = view(tx, a)
		return err
	})
	if err == nil {
		if events != nil {
			for _, ev := range events(out) {
				s.events.Publish(ev)
			}
		}
		s.events.Publish(client.Event{Type: client.EventState, AgentID: id, Agent: out})
	}
	r.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if active(out.State) {
		s.kick(id)
	}
	return out, nil
}

// Pause stops an agent after its current command; a model call in flight is cancelled.
// Its helpers (theirs too) pause with it: they work for the run that paused.
func (s *Supervisor) Pause(ctx context.Context, ref string) (*client.Agent, error) {
	out, err := s.pause(ctx, ref, "paused by a person")
	if err == nil {
		s.pauseHelpers(ctx, out.ID, out.Name)
	}
	return out, err
}

// pause is Pause of the agent alone, with the reason it shows.
func (s *Supervisor) pause(ctx context.Context, ref, reason string) (*client.Agent, error) {
	return s.mutate(ctx, ref, func(tx *store.Tx, a *store.Agent, r *runner) error {
		if !active(a.State) {
			return conflict("agent %s is %s, not running: nothing to pause", a.Name, a.State)
		}
		if _, _, err := transit(tx, a, nil, cycle.Event{Kind: cycle.Pause, Reason: reason}); err != nil {
			return err
		}
		r.cancelThinking()
		return tx.Audit(a.ID, "paused", map[string]string{"reason": reason})
	})
}

// Resume continues a paused or failed agent where it stopped, with the helpers that
// were paused because it was.
func (s *Supervisor) Resume(ctx context.Context, ref string) (*client.Agent, error) {
	out, err := s.resume(ctx, ref, "")
	if err == nil {
		s.resumeHelpers(ctx, out.ID, out.Name)
	}
	return out, err
}

// resume is Resume of the agent alone; with only set, only an agent paused for that
// reason is resumed.
func (s *Supervisor) resume(ctx context.Context, ref, only string) (*client.Agent, error) {
	return s.mutate(ctx, ref, func(tx *store.Tx, a *store.Agent, r *runner) error {
		if only != "" && (a.State != client.StatePaused || a.StateReason != only) {
			return conflict("agent %s is %s (%s), not paused with its parent", a.Name, a.State, a.StateReason)
		}
		if a.State != client.StatePaused && a.State != client.StateFailed {
			return conflict("agent %s is %s, not paused", a.Name, a.State)
		}
		if a.RunID == "" || a.Task == "" {
			return conflict("agent %s has no run to resume: give it a task with `agentctl task`", a.Name)
		}
		if _, why := s.agentOver(a); why != "" {
			return conflict("agent %s is over its budget: %s", a.Name, why)
		}
		if _, _, err := transit(tx, a, nil, cycle.Event{Kind: cycle.Resume}); err != nil {
			return err
		}
		a.Strikes = 0
		return tx.Audit(a.ID, "resumed", nil)
	})
}

// Stop ends the current run: an open proposal is superseded, a question withdrawn and a
// running command cancelled. The agent stays, idle, with its history.
func (s *Supervisor) Stop(ctx context.Context, ref string) (*client.Agent, error) {
	return s.stop(ctx, ref, "stopped by a person")
}

// stop is Stop, with the reason the run ends for.
func (s *Supervisor) stop(ctx context.Context, ref, reason string) (*client.Agent, error) {
	var runID string
	out, err := s.mutate(ctx, ref, func(tx *store.Tx, a *store.Agent, r *runner) error {
		if a.State == client.StateIdle {
			return conflict("agent %s is idle already", a.Name)
		}
		r.cancelAll()
		p, err := tx.OpenProposal(a.ID)
		if errors.Is(err, store.ErrNotFound) {
			p, err = nil, nil
		} else if err != nil {
			return err
		}
		withdraw := cycle.Event{Kind: cycle.Withdraw, Result: "withdrawn: the run was stopped"}
		if p != nil && p.Status == client.ProposalStarted && p.Command == commands.AskUser {
			if _, _, err := transit(tx, a, p, withdraw); err != nil {
				return err
			}
		} else if p != nil && p.Status == client.ProposalStarted {
			// A proposal waiting for a helper has no execution to cancel: withdraw it
			// (the helper is stopped once this run's end is recorded).
			if waiting, err := tx.DeleteWait(p.ID); err != nil {
				return err
			} else if waiting {
				if _, _, err := transit(tx, a, p, withdraw); err != nil {
					return err
				}
			}
		}
		if err := tx.ClearQuestions(a.ID); err != nil {
			return err
		}
		// An open proposal not started is superseded; the run ends.
		if _, _, err := transit(tx, a, p, cycle.Event{Kind: cycle.Stop, Reason: reason, Detail: reason}); err != nil {
			return err
		}
		a.Policy.AutoSteps = 0
		runID = a.RunID
		return tx.Audit(a.ID, "stopped", nil)
	})
	if err == nil {
		s.runEnded(runID)
	}
	return out, err
}

// Task gives an idle agent a follow-up task; its history carries over into the new run.
func (s *Supervisor) Task(ctx context.Context, ref string, task string) (*client.Agent, error) {
	return s.task(ctx, ref, task, nil)
}

// TaskRun is Task as the API asks for it: with a budget, when set, for the new run.
func (s *Supervisor) TaskRun(ctx context.Context, ref string, req client.TaskRequest) (*client.Agent, error) {
	opt, err := requestOptions(req.Budget)
	if err != nil {
		return nil, err
	}
	return s.task(ctx, ref, req.Task, opt)
}

// task is Task; opt, when set, applies to the new run.
func (s *Supervisor) task(ctx context.Context, ref string, task string, opt *run.Options) (*client.Agent, error) {
	var pats []string
	if opt != nil {
		var err error
		if pats, err = checkRunOptions(opt); err != nil {
			return nil, err
		}
	}
	var runID string
	task = strings.TrimSpace(task)
	if task == "" {
		return nil, badRequest("empty task")
	}
	if len(task) > 8000 {
		return nil, badRequest("task is %d bytes: at most 8000", len(task))
	}
	out, err := s.mutate(ctx, ref, func(tx *store.Tx, a *store.Agent, r *runner) error {
		if a.State != client.StateIdle && a.State != client.StateFailed {
			return conflict("agent %s is %s: stop it first (`agentctl stop %s`) or wait until it is idle", a.Name, a.State, a.Name)
		}
		// Refused now rather than accepted and paused before its first step.
		if _, why := s.agentOver(a); why != "" {
			return conflict("agent %s is over its budget, so it cannot take a task: %s", a.Name, why)
		}
		if err := newRunTx(tx, a, task); err != nil {
			return err
		}
		if opt != nil {
			if opt.Policy != nil {
				a.Policy = *opt.Policy
			}
			if err := applyRunOptions(tx, a, opt, pats); err != nil {
				return err
			}
			// Cached before the commit: the loop, woken after it, must see the budget.
			runID = a.RunID
			s.setBudget(a.RunID, a.ID, opt.Budget, tx.Now(), a.PromptTokens+a.EvalTokens)
		}
		return tx.Audit(a.ID, "task", map[string]string{"task": task, "run": a.RunID})
	})
	if err != nil && runID != "" {
		s.dropBudget(runID)
	}
	return out, err
}

// newRunTx starts a new run of the idle agent a with task; the caller writes a.
func newRunTx(tx *store.Tx, a *store.Agent, task string) error {
	// Nothing of the last run may be decided in the new one: the task supersedes it.
	p, err := tx.OpenProposal(a.ID)
	if errors.Is(err, store.ErrNotFound) {
		p, err = nil, nil
	} else if err != nil {
		return err
	}
	if _, _, err := transit(tx, a, p, cycle.Event{Kind: cycle.Task}); err != nil {
		return err
	}
	if err := tx.ClearQuestions(a.ID); err != nil {
		return err
	}
	a.RunID, a.Task, a.Step, a.Strikes = newID("r-"), task, 0, 0
	return tx.StartRun(a.RunID, a.ID, task)
}
