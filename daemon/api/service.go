package api

import (
	"context"

	"github.com/agentd/agentd/daemon/client"
)

// Service is what the local API serves; the daemon implements it (daemon/agent's
// Supervisor the agents, daemon/schedule's Manager the schedules, daemon/team's Engine the
// team runs). Errors wrap client's sentinels (client.ErrNotFound → 404, client.ErrConflict
// → 409, client.ErrBadRequest → 400, client.ErrForbidden → 403) and their text is shown to
// the user as is.
type Service interface {
	AgentService
	ScheduleService
	DaemonService
	TeamService
}

// DaemonService is the daemon's own part of the API.
type DaemonService interface {
	// Reload re-reads the config file and applies what can change while agents run; a
	// bad file is refused with every problem and the old config stays in use.
	Reload(ctx context.Context) (*client.ReloadResult, error)
}

// ScheduleService is the schedules' half of the API. Schedule references are a
// schedule's id or its unique name.
type ScheduleService interface {
	Schedules(ctx context.Context) ([]client.Schedule, error)
	// Schedule returns one schedule with its status and next fire times.
	Schedule(ctx context.Context, ref string) (*client.Schedule, error)
	// AddSchedule returns the new schedule with its next fire times.
	AddSchedule(ctx context.Context, req client.ScheduleRequest) (*client.Schedule, error)
	RemoveSchedule(ctx context.Context, ref string) error
	PauseSchedule(ctx context.Context, ref string) (*client.Schedule, error)
	ResumeSchedule(ctx context.Context, ref string) (*client.Schedule, error)
	// RunSchedule fires a schedule now and returns the firing's record.
	RunSchedule(ctx context.Context, ref string) (*client.ScheduleRun, error)
	// ScheduleHistory returns the firing records, newest first; limit 0 is all.
	ScheduleHistory(ctx context.Context, ref string, limit int) ([]client.ScheduleRun, error)
}

// AgentService is the agents' half of the API. Agent references are an agent id or its
// unique name.
type AgentService interface {
	Status(ctx context.Context) (*client.Status, error)
	// Audit lists audit log entries, oldest first.
	Audit(ctx context.Context, q client.AuditQuery) ([]client.AuditEntry, error)
	// Replay returns a run step by step: ref is a run id, or an agent for its latest run.
	Replay(ctx context.Context, ref string) (*client.Replay, error)
	// Doctor runs the health checks agentctl doctor shows; problems are findings, not errors.
	Doctor(ctx context.Context) (*client.DoctorReport, error)
	Agents(ctx context.Context) ([]client.Agent, error)
	CreateAgent(ctx context.Context, req client.CreateAgentRequest) (*client.Agent, error)
	Agent(ctx context.Context, ref string) (*client.Agent, error)
	DeleteAgent(ctx context.Context, ref string) error
	Decide(ctx context.Context, ref string, req client.DecideRequest) (*client.Decision, error)
	Answer(ctx context.Context, ref string, req client.AnswerRequest) error
	// TaskRun gives an idle agent a follow-up task, its budget (if set) bounding the run.
	TaskRun(ctx context.Context, ref string, req client.TaskRequest) (*client.Agent, error)
	Pause(ctx context.Context, ref string) (*client.Agent, error)
	Resume(ctx context.Context, ref string) (*client.Agent, error)
	Stop(ctx context.Context, ref string) (*client.Agent, error)
	// SetBudget changes the agent's own budget over all its runs and returns the agent
	// with its budget; an agent paused by its budget resumes when the new one allows.
	SetBudget(ctx context.Context, ref string, req client.BudgetRequest) (*client.Agent, error)
	History(ctx context.Context, ref string) ([]client.Episode, error)
	Proposals(ctx context.Context, ref string) ([]client.Proposal, error)
	// Commands lists the commands the agent may use now, with their effective policy;
	// ref "" lists what a new agent gets, under the global patterns.
	Commands(ctx context.Context, ref string) ([]client.CommandInfo, error)
	// Policy shows every permission pattern that applies to the agent.
	Policy(ctx context.Context, ref string) (*client.PolicyView, error)
	// AddPermission stores a pattern for the agent; RemovePermission deletes a stored one.
	AddPermission(ctx context.Context, ref string, req client.PermissionRequest) (*client.PolicyView, error)
	RemovePermission(ctx context.Context, ref string, req client.PermissionRequest) (*client.PolicyView, error)
	// TestPolicy says how the agent's patterns would decide a proposal, without proposing it.
	TestPolicy(ctx context.Context, ref string, req client.PolicyTestRequest) (*client.PolicyTest, error)
	// Memories lists memories, newest first; AddMemory saves one (a shared one without an
	// agent); SearchMemory ranks them against a query, with scores; DeleteMemory removes one;
	// ReindexMemory rebuilds the index from the store and swaps it in; MemoryStats describes it.
	Memories(ctx context.Context, req client.MemoryListRequest) ([]client.Memory, error)
	AddMemory(ctx context.Context, req client.MemoryAddRequest) (*client.Memory, error)
	SearchMemory(ctx context.Context, req client.MemorySearchRequest) ([]client.Memory, error)
	DeleteMemory(ctx context.Context, id string) error
	ReindexMemory(ctx context.Context) (*client.MemoryStats, error)
	MemoryStats(ctx context.Context) (*client.MemoryStats, error)
	// Subscribe streams events of one agent (ref != "") or of all agents (ref == "").
	// Events with Seq > since still held by the daemon are delivered first. The channel is
	// closed when cancel is called or the subscriber falls too far behind.
	Subscribe(ref string, since int64) (events <-chan client.Event, cancel func(), err error)
}
