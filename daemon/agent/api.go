package agent

import (
	"context"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/metrics"
	"github.com/agentd/agentd/daemon/run"
)

// API is the supervisor's parts as the local API, the scheduler, team runs and the bots
// reach them: one field per responsibility, none promoted onto the Supervisor. Each front
// end declares the narrow interface it calls; the server composes the parts that meet it.
type API struct {
	Runs      Runs
	Views     Views
	Decisions api.DecisionService
	Policies  Policies
	Memory    api.MemoryService
	Audit     api.AuditService
	Doctor    api.DoctorService
	Budgets   api.BudgetService
	// Checkpoints are what steps changed in workspaces, and rewinds.
	Checkpoints api.CheckpointService
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

// Policies serve the local API's policy endpoints, and the deny rules the checks run on
// an agent's behalf (a schedule's) keep to.
type Policies interface {
	api.PolicyService
	// DeniedPaths are the workspace paths agent ref's deny rules keep from its programs
	// (nil: none).
	DeniedPaths(ctx context.Context, ref string) (commands.PathRules, error)
}

// Views are the read-only views, and the state the metrics endpoint samples.
type Views interface {
	api.ViewService
	// Agents lists every agent, whole, for the daemon's own parts.
	Agents(ctx context.Context) ([]api.Agent, error)
	MetricsState(ctx context.Context) (metrics.State, error)
}

// Each part serves its own slice of the local API (api.go).
var (
	_ Runs                = (*runs)(nil)
	_ Views               = (*agentViews)(nil)
	_ api.DecisionService = (*decisions)(nil)
	_ Policies            = (*policyService)(nil)
	_ api.MemoryService   = (*memoryService)(nil)
	_ api.AuditService    = (*auditLog)(nil)
	_ api.DoctorService   = (*doctor)(nil)
	_ api.BudgetService   = (*budgets)(nil)
)

// API returns the supervisor's parts.
func (s *Supervisor) API() API {
	return API{
		Runs: s.runs, Views: s.agentViews, Decisions: s.decisions, Policies: s.policyService,
		Memory: s.memoryService, Audit: s.auditLog, Doctor: s.doctor, Budgets: s.budgets, Checkpoints: s.rewinds,
	}
}
