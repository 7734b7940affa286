package localapi

import "github.com/agentd/agentd/api"

// Service is what the local API serves, declared beside the route table in the wire
// package (api); these aliases keep the daemon's parts naming it from here.
type (
	Service         = api.Service
	AgentService    = api.AgentService
	ScheduleService = api.ScheduleService
	DaemonService   = api.DaemonService
	TeamService     = api.TeamService
	WebService      = api.WebService
)
