// Package agenttest is test support for the front ends' tests (bots, the web console, team
// runs, schedules): a supervisor's parts as one value, api.AgentService, which meets each
// front end's narrow interface as the server's compositions do in the daemon; and the one
// way those tests open a store and set up the supervisor they start (OpenStore, Options).
package agenttest

import (
	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/agent"
)

// API is every part of a supervisor, each serving its slice of api.AgentService.
type API struct {
	agent.Runs
	agent.Views
	api.DecisionService
	agent.Policies
	api.MemoryService
	api.AuditService
	api.DoctorService
	api.BudgetService
	api.CheckpointService
}

var _ api.AgentService = API{}

// Of is sup's parts.
func Of(sup *agent.Supervisor) API {
	p := sup.API()
	return API{p.Runs, p.Views, p.Decisions, p.Policies, p.Memory, p.Audit, p.Doctor, p.Budgets, p.Checkpoints}
}
