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
// answers, and the replays the protocol lists as artifacts.
type chatAgents struct {
	runAgents
	api.DecisionService
	api.AuditService
}

// agentAPI is the local API's agents, api.AgentService: every part.
type agentAPI struct {
	chatAgents
	api.MemoryService
	api.DoctorService
	api.BudgetService
	api.CheckpointService
}

func agentsOf(sup *agent.Supervisor) agentAPI {
	p := sup.API()
	return agentAPI{chatAgents{runAgents{p.Runs, p.Views, p.Policies}, p.Decisions, p.Audit}, p.Memory, p.Doctor, p.Budgets, p.Checkpoints}
}
