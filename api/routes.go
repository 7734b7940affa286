package api

import (
	"context"
)

// The API's routes: each method of Service once, with its method, path and status; the
// daemon serves them all (daemon/localapi) and a client calls one with its Do. A new verb
// is one file here (its types and its Route, as why.go) and a line in the Service
// interface.
var (
	StatusRoute = register(Route[None, *Status]{Method: "GET", Path: "/v0/status",
		Call: byNothing(Service.Status)})
	AgentsRoute = register(ListRoute[AgentQuery, Agent]{Path: "/v0/agents",
		Call: func(ctx context.Context, s Service, q AgentQuery, p Page) ([]Agent, string, error) {
			l, err := s.ListAgents(ctx, q, p)
			if err != nil {
				return nil, "", err
			}
			return l.Agents, l.Next, nil
		}})
	CreateAgentRoute = register(Route[CreateAgentRequest, *Agent]{Method: "POST", Path: "/v0/agents", Status: 201,
		Call: byRequest(Service.CreateAgent)})
	AgentRoute = register(Route[None, *Agent]{Method: "GET", Path: "/v0/agents/{agent}",
		Call: byRef(Service.Agent)})
	DeleteAgentRoute = register(Route[None, None]{Method: "DELETE", Path: "/v0/agents/{agent}", Status: 204,
		Call: byRefNoReply(Service.DeleteAgent)})
	DecideRoute = register(Route[DecideRequest, *Decision]{Method: "POST", Path: "/v0/agents/{agent}/decision",
		Call: byRefRequest(Service.Decide)})
	AnswerRoute = register(Route[AnswerRequest, None]{Method: "POST", Path: "/v0/agents/{agent}/answer", Status: 204,
		Call: func(ctx context.Context, s Service, ref string, in AnswerRequest) (None, error) {
			return None{}, s.Answer(ctx, ref, in)
		}})
	TaskRoute = register(Route[TaskRequest, *Agent]{Method: "POST", Path: "/v0/agents/{agent}/task",
		Call: byRefRequest(Service.TaskRun)})
	PauseRoute = register(Route[None, *Agent]{Method: "POST", Path: "/v0/agents/{agent}/pause",
		Call: byRef(Service.Pause)})
	ResumeRoute = register(Route[None, *Agent]{Method: "POST", Path: "/v0/agents/{agent}/resume",
		Call: byRef(Service.Resume)})
	StopRoute = register(Route[None, *Agent]{Method: "POST", Path: "/v0/agents/{agent}/stop",
		Call: byRef(Service.Stop)})
	BudgetRoute = register(Route[BudgetRequest, *Agent]{Method: "POST", Path: "/v0/agents/{agent}/budget",
		Call: byRefRequest(Service.SetBudget)})
	HistoryRoute = register(Route[None, []Episode]{Method: "GET", Path: "/v0/agents/{agent}/history",
		Call: byRef(Service.History)})
	ProposalsRoute = register(Route[None, []Proposal]{Method: "GET", Path: "/v0/agents/{agent}/proposals",
		Call: byRef(Service.Proposals)})
	DoctorRoute = register(Route[None, *DoctorReport]{Method: "GET", Path: "/v0/doctor",
		Call: byNothing(Service.Doctor)})
	ReloadRoute = register(Route[None, *ReloadResult]{Method: "POST", Path: "/v0/reload",
		Call: byNothing(Service.Reload)})
	AuditRoute = register(Route[AuditQuery, []AuditEntry]{Method: "GET", Path: "/v0/audit",
		Call: byRequest(Service.Audit)})
	ReplayRoute = register(Route[None, *Replay]{Method: "GET", Path: "/v0/runs/{run}/replay",
		Call: byRef(Service.Replay)})
	CommandsRoute = register(Route[None, []CommandInfo]{Method: "GET", Path: "/v0/commands",
		Call: func(ctx context.Context, s Service, _ string, _ None) ([]CommandInfo, error) {
			return s.Commands(ctx, "")
		}})
	AgentCommandsRoute = register(Route[None, []CommandInfo]{Method: "GET", Path: "/v0/agents/{agent}/commands",
		Call: byRef(Service.Commands)})
	PolicyRoute = register(Route[None, *PolicyView]{Method: "GET", Path: "/v0/agents/{agent}/policy",
		Call: byRef(Service.Policy)})
	AddPermissionRoute = register(Route[PermissionRequest, *PolicyView]{Method: "POST", Path: "/v0/agents/{agent}/policy",
		Call: byRefRequest(Service.AddPermission)})
	RemovePermissionRoute = register(Route[PermissionRequest, *PolicyView]{Method: "DELETE", Path: "/v0/agents/{agent}/policy",
		Call: byRefRequest(Service.RemovePermission)})
	TestPolicyRoute = register(Route[PolicyTestRequest, *PolicyTest]{Method: "POST", Path: "/v0/agents/{agent}/policy/test",
		Call: byRefRequest(Service.TestPolicy)})
	GrantsRoute = register(Route[None, *GrantList]{Method: "GET", Path: "/v0/agents/{agent}/grants",
		Call: byRef(Service.Grants)})
	AddGrantRoute = register(Route[GrantRequest, *GrantPreview]{Method: "POST", Path: "/v0/agents/{agent}/grants",
		Call: byRefRequest(Service.AddGrant)})
	RevokeGrantRoute = register(Route[RevokeRequest, *Grant]{Method: "POST", Path: "/v0/agents/{agent}/grants/revoke",
		Call: byRefRequest(Service.RevokeGrant)})
	MemoriesRoute = register(Route[MemoryListRequest, []Memory]{Method: "GET", Path: "/v0/memories",
		Call: byRequest(Service.Memories)})
	AddMemoryRoute = register(Route[MemoryAddRequest, *Memory]{Method: "POST", Path: "/v0/memories", Status: 201,
		Call: byRequest(Service.AddMemory)})
	DeleteMemoryRoute = register(Route[None, None]{Method: "DELETE", Path: "/v0/memories/{id}", Status: 204,
		Call: byRefNoReply(Service.DeleteMemory)})
	SearchMemoryRoute = register(Route[MemorySearchRequest, []Memory]{Method: "POST", Path: "/v0/memory/search",
		Call: byRequest(Service.SearchMemory)})
	ReindexMemoryRoute = register(Route[None, *MemoryStats]{Method: "POST", Path: "/v0/memory/reindex",
		Call: byNothing(Service.ReindexMemory)})
	MemoryStatsRoute = register(Route[None, *MemoryStats]{Method: "GET", Path: "/v0/memory/stats",
		Call: byNothing(Service.MemoryStats)})
	SchedulesRoute = register(Route[None, []Schedule]{Method: "GET", Path: "/v0/schedules",
		Call: byNothing(Service.Schedules)})
	AddScheduleRoute = register(Route[ScheduleRequest, *Schedule]{Method: "POST", Path: "/v0/schedules", Status: 201,
		Call: byRequest(Service.AddSchedule)})
	ScheduleRoute = register(Route[None, *Schedule]{Method: "GET", Path: "/v0/schedules/{schedule}",
		Call: byRef(Service.Schedule)})
	RemoveScheduleRoute = register(Route[None, None]{Method: "DELETE", Path: "/v0/schedules/{schedule}", Status: 204,
		Call: byRefNoReply(Service.RemoveSchedule)})
	PauseScheduleRoute = register(Route[None, *Schedule]{Method: "POST", Path: "/v0/schedules/{schedule}/pause",
		Call: byRef(Service.PauseSchedule)})
	ResumeScheduleRoute = register(Route[None, *Schedule]{Method: "POST", Path: "/v0/schedules/{schedule}/resume",
		Call: byRef(Service.ResumeSchedule)})
	RunScheduleRoute = register(Route[None, *ScheduleRun]{Method: "POST", Path: "/v0/schedules/{schedule}/run",
		Call: byRef(Service.RunSchedule)})
	SetScheduleWhenRoute = register(Route[WakeConditions, *Schedule]{Method: "PUT", Path: "/v0/schedules/{schedule}/when",
		Call: byRefRequest(Service.SetScheduleWhen)})
	ScheduleHistoryRoute = register(Route[ScheduleHistoryQuery, []ScheduleRun]{Method: "GET", Path: "/v0/schedules/{schedule}/history",
		Call: func(ctx context.Context, s Service, ref string, q ScheduleHistoryQuery) ([]ScheduleRun, error) {
			return s.ScheduleHistory(ctx, ref, q.Limit)
		}})
	TeamsRoute = register(Route[None, []TeamRun]{Method: "GET", Path: "/v0/teams",
		Call: byNothing(Service.Teams)})
	StartTeamRoute = register(Route[TeamRunRequest, *TeamRun]{Method: "POST", Path: "/v0/teams", Status: 201,
		Call: byRequest(Service.StartTeam)})
	PlanTeamRoute = register(Route[TeamPlanRequest, *TeamPlan]{Method: "POST", Path: "/v0/team-plans",
		Call: byRequest(Service.PlanTeam)})
	TeamRoute = register(Route[None, *TeamRun]{Method: "GET", Path: "/v0/teams/{team}",
		Call: byRef(Service.Team)})
	StopTeamRoute = register(Route[None, *TeamRun]{Method: "POST", Path: "/v0/teams/{team}/stop",
		Call: byRef(Service.StopTeam)})
)

// The API's event streams.
var (
	EventsRoute = StreamRoute{Path: "/v0/events", Since: "the seq of the last event seen",
		Subscribe: func(s Service, _ string, since int64) (<-chan Event, func(), error) { return s.Subscribe("", since) }}
	AgentEventsRoute = StreamRoute{Path: "/v0/agents/{agent}/events", Since: "the seq of the last event seen",
		Subscribe: func(s Service, ref string, since int64) (<-chan Event, func(), error) { return s.Subscribe(ref, since) }}
	TeamEventsRoute = StreamRoute{Path: "/v0/teams/{team}/events", Since: "the seq of the last transcript entry seen",
		Subscribe: func(s Service, ref string, since int64) (<-chan Event, func(), error) {
			return s.SubscribeTeam(ref, since)
		}}
)

// ScheduleHistoryQuery selects a schedule's firing records: the newest Limit (0: all).
type ScheduleHistoryQuery struct {
	Limit int `query:"limit"`
}
