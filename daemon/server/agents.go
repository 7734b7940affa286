package server

import (
	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/agent"
)

// Each front end declares the narrow interface it uses of the agents (schedule.Agents,
// team.Agents, bots.Service, agentprotocol.Agents); these are the supervisor's parts each
// calls, composed here where the daemon wires them, from the narrowest to the local API's.

// runAgents are what the schedules and team runs call: runs started and ended, agents
// read, and the commands a new agent gets.
type runAgents struct {
	agent.Runs
	agent.Views
	agent.Policies
}

// chatAgents are what the chat bots and the Agent Protocol call besides: decisions and
// answers, the replays the protocol lists as artifacts, and the checkpoints (a result's
// diff, a rewind asked in chat).
type chatAgents struct {
	runAgents
	api.DecisionService
	api.AuditService
	api.CheckpointService
}

// agentAPI is the local API's agents, api.AgentService: every part.
type agentAPI struct {
	chatAgents
	api.MemoryService
	api.DoctorService
	api.BudgetService
}

func agentsOf(sup *agent.Supervisor) agentAPI {
	p := sup.API()
	return agentAPI{chatAgents{runAgents{p.Runs, p.Views, p.Policies}, p.Decisions, p.Audit, p.Checkpoints}, p.Memory, p.Doctor, p.Budgets}
}
