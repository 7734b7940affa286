package api

import "context"

// Service is what the local API serves; the daemon implements it (daemon/agent's
// Supervisor the agents, daemon/schedule's Manager the schedules, daemon/team's Engine the
// team runs). Errors wrap this package's sentinels (ErrNotFound → 404, ErrConflict
// → 409, ErrBadRequest → 400, ErrForbidden → 403) and their text is shown to
// the user as is.
type Service interface {
	AgentService
	ScheduleService
	DaemonService
	TeamService
	WebService
}

// DaemonService is the daemon's own part of the API.
type DaemonService interface {
	// Reload re-reads the config file and applies what can change while agents run; a
	// bad file is refused with every problem and the old config stays in use.
	Reload(ctx context.Context) (*ReloadResult, error)
}

// ScheduleService is the schedules' half of the API. Schedule references are a
// schedule's id or its unique name.
type ScheduleService interface {
	Schedules(ctx context.Context) ([]Schedule, error)
	// Schedule returns one schedule with its status and next fire times.
	Schedule(ctx context.Context, ref string) (*Schedule, error)
	// AddSchedule returns the new schedule with its next fire times.
	AddSchedule(ctx context.Context, req ScheduleRequest) (*Schedule, error)
	RemoveSchedule(ctx context.Context, ref string) error
	PauseSchedule(ctx context.Context, ref string) (*Schedule, error)
	ResumeSchedule(ctx context.Context, ref string) (*Schedule, error)
	// RunSchedule fires a schedule now and returns the firing's record.
	RunSchedule(ctx context.Context, ref string) (*ScheduleRun, error)
	// ScheduleHistory returns the firing records, newest first; limit 0 is all.
	ScheduleHistory(ctx context.Context, ref string, limit int) ([]ScheduleRun, error)
	// SetScheduleWhen replaces a schedule's wake conditions; empty ones clear them (every
	// firing wakes the model).
	SetScheduleWhen(ctx context.Context, ref string, when WakeConditions) (*Schedule, error)
}

// AgentService is the agents' half of the API. Agent references are an agent id or its
// unique name. It is the sum of small services, one per part of daemon/agent's Supervisor.
type AgentService interface {
	ViewService
	AuditService
	DoctorService
	RunService
	BudgetService
	DecisionService
	PolicyService
	MemoryService
	CheckpointService
}

// ViewService is the read-only views of agents: status, agents, history, proposals, events.
type ViewService interface {
	Status(ctx context.Context) (*Status, error)
	// ListAgents returns a page of the agents, oldest first: at most p.Limit (0: all)
	// after the cursor p.After, and the cursor to go on from.
	ListAgents(ctx context.Context, q AgentQuery, p Page) (*AgentList, error)
	Agent(ctx context.Context, ref string) (*Agent, error)
	History(ctx context.Context, ref string) ([]Episode, error)
	Proposals(ctx context.Context, ref string) ([]Proposal, error)
	// Subscribe streams events of one agent (ref != "") or of all agents (ref == "").
	// Events with Seq > since still held by the daemon are delivered first. The channel is
	// closed when cancel is called or the subscriber falls too far behind.
	Subscribe(ref string, since int64) (events <-chan Event, cancel func(), err error)
}

// AuditService is the audit log and run replays.
type AuditService interface {
	// Audit lists audit log entries, oldest first.
	Audit(ctx context.Context, q AuditQuery) ([]AuditEntry, error)
	// Replay returns a run step by step: ref is a run id, or an agent for its latest run.
	Replay(ctx context.Context, ref string) (*Replay, error)
}

// DoctorService is agentctl doctor.
type DoctorService interface {
	// Doctor runs the health checks agentctl doctor shows; problems are findings, not errors.
	Doctor(ctx context.Context) (*DoctorReport, error)
}

// RunService is agents created, given tasks, paused, resumed, stopped and removed.
type RunService interface {
	CreateAgent(ctx context.Context, req CreateAgentRequest) (*Agent, error)
	DeleteAgent(ctx context.Context, ref string) error
	// TaskRun gives an idle agent a follow-up task, its budget (if set) bounding the run.
	TaskRun(ctx context.Context, ref string, req TaskRequest) (*Agent, error)
	Pause(ctx context.Context, ref string) (*Agent, error)
	Resume(ctx context.Context, ref string) (*Agent, error)
	Stop(ctx context.Context, ref string) (*Agent, error)
}

// BudgetService is each agent's budget over all its runs.
type BudgetService interface {
	// SetBudget changes the agent's own budget over all its runs and returns the agent
	// with its budget; an agent paused by its budget resumes when the new one allows.
	SetBudget(ctx context.Context, ref string, req BudgetRequest) (*Agent, error)
}

// DecisionService is people's decisions on proposals and answers to questions.
type DecisionService interface {
	Decide(ctx context.Context, ref string, req DecideRequest) (*Decision, error)
	Answer(ctx context.Context, ref string, req AnswerRequest) error
}

// PolicyService is the commands agents may use and the permission patterns that decide them.
type PolicyService interface {
	// Why explains the decision on the agent's last decided proposal: who or which rule
	// made it, from where, and why.
	Why(ctx context.Context, ref string) (*Why, error)
	// Commands lists the commands the agent may use now, with their effective policy;
	// ref "" lists what a new agent gets, under the global patterns.
	Commands(ctx context.Context, ref string) ([]CommandInfo, error)
	// Policy shows every permission pattern that applies to the agent.
	Policy(ctx context.Context, ref string) (*PolicyView, error)
	// AddPermission stores a pattern for the agent; RemovePermission deletes a stored one.
	AddPermission(ctx context.Context, ref string, req PermissionRequest) (*PolicyView, error)
	RemovePermission(ctx context.Context, ref string, req PermissionRequest) (*PolicyView, error)
	// TestPolicy says how the agent's patterns would decide a proposal, without proposing it.
	TestPolicy(ctx context.Context, ref string, req PolicyTestRequest) (*PolicyTest, error)
	// Grants lists the agent's grants; AddGrant previews a pattern grant and, unless a
	// dry run, stores it; RevokeGrant ends one before the agent's next proposal.
	Grants(ctx context.Context, ref string) (*GrantList, error)
	AddGrant(ctx context.Context, ref string, req GrantRequest) (*GrantPreview, error)
	RevokeGrant(ctx context.Context, ref string, req RevokeRequest) (*Grant, error)
}

// MemoryService is long-term memory.
type MemoryService interface {
	// Memories lists memories, newest first; AddMemory saves one (a shared one without an
	// agent); SearchMemory ranks them against a query, with scores; DeleteMemory removes one;
	// ReindexMemory rebuilds the index from the store and swaps it in; MemoryStats describes it.
	Memories(ctx context.Context, req MemoryListRequest) ([]Memory, error)
	AddMemory(ctx context.Context, req MemoryAddRequest) (*Memory, error)
	SearchMemory(ctx context.Context, req MemorySearchRequest) ([]Memory, error)
	DeleteMemory(ctx context.Context, id string) error
	ReindexMemory(ctx context.Context) (*MemoryStats, error)
	MemoryStats(ctx context.Context) (*MemoryStats, error)
	// ImportMemory stores a batch of records in one transaction, all or none; ExportMemory
	// pages through memories in id order as records import reads back.
	ImportMemory(ctx context.Context, req MemoryImportRequest) (*MemoryImportResult, error)
	ExportMemory(ctx context.Context, req MemoryExportRequest) (*MemoryExportPage, error)
}

// TeamService is the team runs' part of the API (SOP workflows of several roles). Team
// references are a team run's id.
type TeamService interface {
	// Teams lists team runs, newest first, without transcripts.
	Teams(ctx context.Context) ([]TeamRun, error)
	// StartTeam checks the workflow (problems are ErrBadRequest naming file:line) and
	// starts a run of it.
	StartTeam(ctx context.Context, req TeamRunRequest) (*TeamRun, error)
	// Team returns one team run with its transcript.
	Team(ctx context.Context, ref string) (*TeamRun, error)
	// StopTeam stops a running team run and the role agent's run it waits for.
	StopTeam(ctx context.Context, ref string) (*TeamRun, error)
	// PlanTeam asks the planner for a workflow for a task.
	PlanTeam(ctx context.Context, req TeamPlanRequest) (*TeamPlan, error)
	// SubscribeTeam streams a team run's transcript as EventTeam events: the entries
	// after seq since, then each new one; the channel closes after the run's end (or
	// when the follower falls behind and must come back with the last seq it saw).
	SubscribeTeam(ref string, since int64) (events <-chan Event, cancel func(), err error)
}
