package localapi

import "github.com/agentd/agentd/daemon/client"

// Service is what the local API serves, declared beside the route table in the wire
// package (daemon/client); these aliases keep the daemon's parts naming it from here.
type (
	Service         = client.Service
	AgentService    = client.AgentService
	ScheduleService = client.ScheduleService
	DaemonService   = client.DaemonService
	TeamService     = client.TeamService
	WebService      = client.WebService
)
