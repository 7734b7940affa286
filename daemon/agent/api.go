package agent

import (
	"context"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/metrics"
	"github.com/agentd/agentd/daemon/run"
	"github.com/agentd/agentd/daemon/store"
)

// API is the supervisor's parts as the local API, the scheduler, team runs and the bots
// reach them: one field per responsibility, none promoted onto the Supervisor.
type API struct {
	Runs      Runs
	Views     Views
	Decisions api.DecisionService
	Policies  api.PolicyService
	Memory    api.MemoryService
	Audit     api.AuditService
	Doctor    api.DoctorService
	Budgets   api.BudgetService
}

// Runs starts, changes and ends runs: the local API's and those of schedules and teams.
type Runs interface {
	api.RunService
	// Task gives an idle agent a follow-up task without a budget.
	Task(ctx context.Context, ref string, task string) (*api.Agent, error)
	// StartTask and CreateRun start a run bounded by opt (schedules, team turns).
	StartTask(ctx context.Context, ref, task string, opt run.Options) (*api.Agent, error)
	CreateRun(ctx context.Context, req api.CreateAgentRequest, opt run.Options) (*api.Agent, error)
}

// Views are the read-only views, and the state the metrics endpoint samples.
type Views interface {
	api.ViewService
	// Agents lists every agent, whole, for the daemon's own parts.
	Agents(ctx context.Context) ([]api.Agent, error)
	MetricsState(ctx context.Context) (metrics.State, error)
}

// API returns the supervisor's parts.
func (s *Supervisor) API() API {
	return API{
		Runs: s.runs, Views: s.agentViews, Decisions: s.decisions, Policies: s.policyService,
		Memory: s.memoryService, Audit: s.auditLog, Doctor: s.doctor, Budgets: s.agentBudgets,
	}
}

// host is what the parts reach back for, each method served by the supervisor or the
// part that owns it; the parts see it only through their narrow interfaces.
type host struct{ s *Supervisor }

func (h host) stepOf(a *store.Agent) *commands.Step { return h.s.stepOf(a) }
func (h host) commandsFor(ctx context.Context, l *live, a *store.Agent, step *commands.Step) commands.Set {
	return h.s.commandsFor(ctx, l, a, step)
}
func (h host) specIn(ctx context.Context, l *live, tx *store.Tx, a *store.Agent, name string) *commands.Spec {
	return h.s.specIn(ctx, l, tx, a, name)
}
func (h host) live() *live                                 { return h.s.live() }
func (h host) kick(id string)                              { h.s.kick(id) }
func (h host) runner(id string) *runner                    { return h.s.runner(id) }
func (h host) dropRunner(id string)                        { h.s.dropRunner(id) }
func (h host) forgetHistory(id string)                     { h.s.episodeHistory.forgetHistory(id) }
func (h host) workspace(id string) string                  { return h.s.workspaceDirs.workspace(id) }
func (h host) runEnded(runID string)                       { h.s.runs.runEnded(runID) }
func (h host) countDecision(tx *store.Tx, d *api.Decision) { h.s.stepCounters.countDecision(tx, d) }
func (h host) recordEpisode(tx *store.Tx, agentID string, p *api.Proposal, ep *api.Episode) error {
	return h.s.recordEpisode(tx, agentID, p, ep)
}
func (h host) mutateThen(ctx context.Context, ref string, fn func(tx *store.Tx, a *store.Agent, r *runner) error, events func(*api.Agent) []api.Event) (*api.Agent, error) {
	return h.s.runs.mutateThen(ctx, ref, fn, events)
}
func (h host) pause(ctx context.Context, ref, reason string) (*api.Agent, error) {
	return h.s.runs.pause(ctx, ref, reason)
}
func (h host) resume(ctx context.Context, ref, only string) (*api.Agent, error) {
	return h.s.runs.resume(ctx, ref, only)
}
func (h host) stop(ctx context.Context, ref, reason string) (*api.Agent, error) {
	return h.s.runs.stop(ctx, ref, reason)
}

// Facade is every part's methods in one value, for what serves all of them: the local
// API, the schedules, team runs and chat bots. It is only the parts' interfaces, each
// method one part's; it holds no state and declares nothing of its own.
type Facade struct {
	Runs
	Views
	api.DecisionService
	api.PolicyService
	api.MemoryService
	api.AuditService
	api.DoctorService
	api.BudgetService
}

// Facade gathers the parts into one Facade.
func (a API) Facade() Facade {
	return Facade{a.Runs, a.Views, a.Decisions, a.Policies, a.Memory, a.Audit, a.Doctor, a.Budgets}
}
