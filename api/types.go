// Package api is agentd's local API as Go: the request, response and event types that go
// over the unix socket under /v0/, and a Client that calls them.
//
// agentctl, the chat bots' tests and the integration tests all use this package; it never
// imports the daemon, so it can be vendored by anyone who wants to drive agentd.
package api

import (
	"encoding/json"
	"strings"
	"time"
)

// AgentState is what an agent is doing now.
type AgentState string

// The states an agent shows.
const (
	StateThinking         AgentState = "thinking"          // the model is being asked
	StateAwaitingDecision AgentState = "awaiting_decision" // a proposal or a question waits for a person
	StateExecuting        AgentState = "executing"         // an approved command runs
	StateWaitingForModel  AgentState = "waiting_for_model" // Ollama is down or busy; retrying
	StatePaused           AgentState = "paused"            // stopped by a person or by a watchdog; StateReason says why
	StateIdle             AgentState = "idle"              // no run; ready for a task
	StateFailed           AgentState = "failed"            // cannot go on; StateReason says why
)

// Policy decides which proposals run without asking.
type Policy struct {
	// Mode is "ask" (default), "auto" (the next AutoSteps proposals run without asking)
	// or "continuous" (every proposal runs without asking, up to ContinuousLimit steps).
	Mode string `json:"mode"`
	// AutoSteps is how many more proposals run without asking: set at creation (--auto N),
	// it becomes a count grant of the run; after that it mirrors what the agent's count
	// grants (y -N, a schedule's autonomy) have left. GET .../grants lists them.
	AutoSteps int `json:"auto_steps,omitempty"`
	// ContinuousLimit bounds continuous mode; 0 means the configured default.
	ContinuousLimit int `json:"continuous_limit,omitempty"`
}

// Directives are the rules an agent works under; base ones come from config.
type Directives struct {
	Constraints   []string `json:"constraints,omitempty"`
	Resources     []string `json:"resources,omitempty"`
	BestPractices []string `json:"best_practices,omitempty"`
}

// Agent is one hosted agent.
type Agent struct {
	ID          string     `json:"id"`
	Name        string     `json:"name"`
	Description string     `json:"description"`
	Goals       []string   `json:"goals,omitempty"`
	Directives  Directives `json:"directives"`
	// Task is the current run's task (empty when idle with no run yet).
	Task        string     `json:"task,omitempty"`
	State       AgentState `json:"state"`
	StateReason string     `json:"state_reason,omitempty"`
	// Unchecked, when set, says a step wrote to the workspace what could not be checked
	// against the agent's write-deny rules (which step, what): until a person resumes the
	// agent, any run it starts pauses first. It survives restarts.
	Unchecked string `json:"unchecked,omitempty"`
	Policy    Policy `json:"policy"`
	// RunID is the current or last run.
	RunID string `json:"run_id,omitempty"`
	// Step counts proposals made in the current run.
	Step      int    `json:"step"`
	Workspace string `json:"workspace"`
	// ParentID names the agent that started this one as its helper (start_agent); empty
	// for an agent people started.
	ParentID string `json:"parent_id,omitempty"`
	// Commands, when set, are the only commands the agent may use, besides finish and
	// ask_user (a team role's agent gets its role's); empty: every command the daemon
	// offers. Fixed when the agent is created.
	Commands []string `json:"commands,omitempty"`
	// Pending is the proposal awaiting a decision, if any.
	Pending *Proposal `json:"pending,omitempty"`
	// Question is an ask_user question awaiting an answer, if any.
	Question *Question `json:"question,omitempty"`
	// PromptTokens and EvalTokens total the model's token counts over the agent's life.
	PromptTokens int64 `json:"prompt_tokens"`
	EvalTokens   int64 `json:"eval_tokens"`
	// StepsTotal counts the proposals the agent made over all its runs.
	StepsTotal int `json:"steps_total"`
	// BusyMS is the time in milliseconds the agent spent thinking and executing over
	// all its runs (not the time it waited for people).
	BusyMS int64 `json:"busy_ms"`
	// DiskBytes is the disk its workspace took (its helpers' inside it included) when
	// last measured: after each command that may write, while its disk budget is set.
	DiskBytes int64 `json:"disk_bytes"`
	// Budget bounds the agent over all its runs, from the config or `agentctl budget`;
	// an agent that reaches one pauses until it is raised. Set by the agent and list
	// calls; events leave it empty.
	Budget *Budget `json:"budget,omitempty"`
	// Runs are the agent's latest runs, newest first, with their steps and tokens; set
	// by the single-agent call (agentctl show), not by lists or events.
	Runs      []Run     `json:"runs,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// StateSince is when the agent entered State: for a thinking agent, when its call to
	// the model began, which every follower's spinner counts from.
	StateSince time.Time `json:"state_since,omitzero"`
}

// UncheckedWaits begins what people are shown of an agent marked with an unchecked
// change (Agent.Unchecked).
const UncheckedWaits = "an unchecked change waits for a person"

// ShownReason is the agent's state reason as people are shown it: with its mark of an
// unchecked change, when the reason does not say so already (an idle or failed agent's
// reason is its last run's).
func (a *Agent) ShownReason() string {
	if a.Unchecked == "" || strings.HasPrefix(a.StateReason, UncheckedWaits) {
		return a.StateReason
	}
	note := UncheckedReason(a.Unchecked)
	if a.StateReason == "" {
		return note
	}
	return a.StateReason + "; " + note
}

// UncheckedReason is the reason an agent pauses for on an unchecked change (what).
func UncheckedReason(what string) string {
	return UncheckedWaits + ": " + what + "; look at the workspace (agentctl diff), then resume it"
}

// AgentQuery selects what a listing of the agents shows of each.
type AgentQuery struct {
	// Brief leaves out what a list does not show: of the pending proposal, its thoughts,
	// args, preview and result (its id, step, command, hash and status stay).
	Brief bool `query:"brief"`
}

// Brief is what a brief listing (AgentQuery.Brief) shows of a proposal: which it is and
// its command, without its thoughts, args, preview or result.
func (p *Proposal) Brief() *Proposal {
	return &Proposal{ID: p.ID, AgentID: p.AgentID, RunID: p.RunID, Step: p.Step, Command: p.Command, Hash: p.Hash,
		Status: p.Status, Model: p.Model, PromptTokens: p.PromptTokens, EvalTokens: p.EvalTokens, CreatedAt: p.CreatedAt}
}

// AgentList is a page of the agents, oldest first.
type AgentList struct {
	Agents []Agent `json:"agents"`
	// Next is the cursor of the page that follows (Page.After); "" when none does.
	Next string `json:"next,omitempty"`
}

// Thoughts is the reasoning that came with a proposal.
type Thoughts struct {
	Observations  string `json:"observations"`
	Text          string `json:"text"`
	Reasoning     string `json:"reasoning"`
	SelfCriticism string `json:"self_criticism"`
	Plan          string `json:"plan"`
	Speak         string `json:"speak"`
}

// ProposalStatus tracks a proposal from the model's reply to its result.
type ProposalStatus string

// Proposal statuses. pending and interrupted proposals take decisions; approved → started →
// succeeded|failed is the write-ahead execution record.
const (
	ProposalPending    ProposalStatus = "pending"
	ProposalApproved   ProposalStatus = "approved"
	ProposalDenied     ProposalStatus = "denied"
	ProposalFeedback   ProposalStatus = "feedback"   // not run; the person's text went to the model
	ProposalSuperseded ProposalStatus = "superseded" // the run moved on without a decision
	ProposalStarted    ProposalStatus = "started"
	ProposalSucceeded  ProposalStatus = "succeeded"
	ProposalFailed     ProposalStatus = "failed"
	// ProposalInterrupted is a proposal asked of a person again, to decide anew: either
	// the daemon stopped while it ran (or the store lost its result), or its effect
	// preview was run again before it ran (the workspace changed since the preview, or it
	// ran ahead in a pattern's bounded profile and is left to a person, so it ran ahead
	// again in theirs).
	ProposalInterrupted ProposalStatus = "interrupted"
)

// Decidable reports whether a decision may still be made on a proposal in this status.
func (s ProposalStatus) Decidable() bool {
	return s == ProposalPending || s == ProposalInterrupted
}

// Proposal is one command the model wants to run.
type Proposal struct {
	ID       string          `json:"id"`
	AgentID  string          `json:"agent_id"`
	RunID    string          `json:"run_id"`
	Step     int             `json:"step"`
	Thoughts Thoughts        `json:"thoughts"`
	Command  string          `json:"command"`
	Args     json.RawMessage `json:"args"`
	// Hash is sha256 of the command name and its canonical args (what an exact grant
	// and the watchdog match); a decision is bound to Ref, which adds the change shown.
	Hash   string         `json:"hash"`
	Status ProposalStatus `json:"status"`
	// Preview is what the command would do (a file's diff, the programs a shell line
	// runs, the host a clone reaches), worked out when the proposal was made; nil for
	// commands that have none, and for proposals made before previews existed.
	Preview *Preview `json:"preview,omitempty"`
	// Result is the command's output (or error text) once it ran.
	Result       string    `json:"result,omitempty"`
	Model        string    `json:"model"`
	PromptTokens int       `json:"prompt_tokens"`
	EvalTokens   int       `json:"eval_tokens"`
	CreatedAt    time.Time `json:"created_at"`
}

// Question is an ask_user question waiting for an answer.
type Question struct {
	ProposalID string    `json:"proposal_id"`
	Text       string    `json:"text"`
	AskedAt    time.Time `json:"asked_at"`
}

// DecisionKind is what a person decided about a proposal.
type DecisionKind string

// Decision kinds.
const (
	DecisionApprove  DecisionKind = "approve"
	DecisionDeny     DecisionKind = "deny"
	DecisionFeedback DecisionKind = "feedback"
)

// Decision is one recorded decision.
type Decision struct {
	ProposalID string       `json:"proposal_id"`
	Kind       DecisionKind `json:"kind"`
	// Count is how many proposals an approval covers: this one and the next Count-1.
	Count    int    `json:"count,omitempty"`
	Feedback string `json:"feedback,omitempty"`
	By       string `json:"by"`
	// ByName is how people know By when By is an id: a chat user's display name. A local
	// decider's By is already a name (the daemon looks up the socket peer's uid).
	ByName string `json:"by_name,omitempty"`
	// UID is the local user who decided, as the kernel reported the socket's peer; kept
	// in the audit log beside the name.
	UID    *uint32 `json:"uid,omitempty"`
	Source string  `json:"source"` // agentctl, slack, discord, api; policy or grant when automatic
	// Scope is how far the decision reaches: "" (this proposal), "agent" (an approval that
	// also made an exact grant: this command with these args, Grant) or "deny" (a denial
	// that stored a deny pattern). Pattern is the deny pattern stored, or for an automatic
	// decision the pattern that matched.
	Scope   string `json:"scope,omitempty"`
	Pattern string `json:"pattern,omitempty"`
	// Grant is the id of the grant this decision made (y -N, y!) or, for an automatic
	// approval (Source "grant"), the grant that approved it; GrantLabel names that grant
	// for people: "root's y -3".
	Grant      string `json:"grant,omitempty"`
	GrantLabel string `json:"grant_label,omitempty"`
	// GrantCount is how many proposals that grant approves without asking, when a count
	// bounds it, and GrantLeft how many of them were left once this decision was made
	// (a y -3 makes a grant of the next 2: count 2, 2 left; its first approval leaves 1).
	// GrantText shows them.
	GrantCount int `json:"grant_count,omitempty"`
	GrantLeft  int `json:"grant_left,omitempty"`
	// Profile is how an execute command this decision approved runs: "" as a person
	// approved it (the sandbox as configured), or ProfileBounded / ProfileBoundedWrite
	// when a pattern or a pattern grant approved it unasked.
	Profile string    `json:"profile,omitempty"`
	At      time.Time `json:"at"`
}

// Profiles of an approved execute command (Decision.Profile).
const (
	// ProfileBounded: approved unasked, it runs with the workspace read-only, no network
	// and an empty HOME, so that its worst case does not depend on the program.
	ProfileBounded = "bounded"
	// ProfileBoundedWrite: as ProfileBounded, but the workspace writable: the pattern
	// that approved it ends in +write.
	ProfileBoundedWrite = "bounded-write"
)

// ProfileText says what a profile lets the programs do, for people: "" for a person's
// approval (the sandbox as configured).
func ProfileText(profile string) string {
	switch profile {
	case ProfileBounded:
		return "bounded: workspace read-only, no network, empty HOME"
	case ProfileBoundedWrite:
		return "bounded: workspace writable (+write), no network, empty HOME"
	}
	return ""
}

// GrantText names the decision's grant with what was left of it then: "root's y -3 (1 of
// 2 left)" (see LeftOf); "" without a grant.
func (d *Decision) GrantText() string {
	if d.GrantLabel == "" || d.GrantCount <= 0 {
		return d.GrantLabel
	}
	return d.GrantLabel + " (" + LeftOf(d.GrantLeft, d.GrantCount) + ")"
}

// Decision scopes.
const (
	ScopeOnce  = ""      // this proposal only
	ScopeAgent = "agent" // approve always: grant this exact command with these args to the agent
	ScopeDeny  = "deny"  // deny always: store a deny pattern for the agent
)

// Permission is a permission pattern, `command(glob)`, that allows or denies commands
// without asking. Patterns come from config (global or per agent) or were stored for an
// agent by a decision or `agentctl policy`.
type Permission struct {
	ID      int64  `json:"id,omitempty"` // stored patterns only
	Effect  string `json:"effect"`       // allow or deny
	Pattern string `json:"pattern"`
	// Source is where the pattern comes from: config, agent-config or stored.
	Source    string    `json:"source,omitempty"`
	CreatedBy string    `json:"created_by,omitempty"`
	CreatedAt time.Time `json:"created_at,omitzero"`
	// Profile, on an allow pattern for a sandboxed command, is how what it approves runs
	// (Decision.Profile); Paths, on a deny pattern for file commands, says the paths it
	// names are kept from every program too.
	Profile string `json:"profile,omitempty"`
	Paths   bool   `json:"paths,omitempty"`
}

// PolicyView is an agent's permissions: every pattern that applies to it, and whether
// read-class commands run without asking.
type PolicyView struct {
	AgentID     string       `json:"agent_id"`
	AutoRead    bool         `json:"auto_read"`
	Permissions []Permission `json:"permissions"`
	// Warnings say where the patterns hold less than they read: write-deny rules while
	// the daemon's checkpoints are off, which then have no second wall.
	Warnings []string `json:"warnings,omitempty"`
}

// PermissionRequest adds or removes a stored pattern of an agent.
type PermissionRequest struct {
	Effect  string `json:"effect"` // allow or deny
	Pattern string `json:"pattern"`
	By      string `json:"by,omitempty"`
}

// PolicyTestRequest asks how an agent's permission patterns would decide a proposal,
// without proposing it (agentctl policy AGENT test). Give Args, or Subject for a command
// whose patterns match one arg (execute_shell's command line, read_file's path...).
type PolicyTestRequest struct {
	Command string          `json:"command"`           // the command's name, e.g. execute_shell
	Args    json.RawMessage `json:"args,omitempty"`    // its args, as the model would give them
	Subject string          `json:"subject,omitempty"` // or the value of its subject arg alone
}

// PolicyTest is how the agent's authorization would decide the proposal if the agent
// proposed it next, and why: by the same function as a real proposal — patterns, grants
// (an exact one only while the files it bound are unchanged) and the mode.
type PolicyTest struct {
	AgentID string          `json:"agent_id"`
	Command string          `json:"command"`
	Args    json.RawMessage `json:"args"`
	Subject string          `json:"subject"` // what the patterns match
	Effect  string          `json:"effect"`  // allow (runs unasked), deny (refused) or ask
	// Pattern is the pattern that decided, and Source the rules that hold it: stored,
	// agent-config or config (empty when no pattern decided).
	Pattern string `json:"pattern,omitempty"`
	Source  string `json:"source,omitempty"`
	Reason  string `json:"reason"`
	// Decision is the decision the daemon would record without asking: by a pattern, a
	// grant or the mode (its By, Pattern, Grant and GrantLabel say which); nil when a
	// person would be asked.
	Decision *Decision `json:"decision,omitempty"`
	// Grant is the grant that would approve it, with that approval counted in Used.
	Grant *Grant `json:"grant,omitempty"`
	// Unbound says why an exact grant of this command and args would not approve it: a
	// file its line names changed since it was granted.
	Unbound string `json:"unbound,omitempty"`
	// Commands, for a shell line of plain commands, says what the patterns decide for
	// each one.
	Commands []PolicyTestCommand `json:"commands,omitempty"`
}

// PolicyTestCommand is the decision on one simple command of a shell line.
type PolicyTestCommand struct {
	Command string `json:"command"` // the program and its arguments, requoted
	Effect  string `json:"effect"`  // allow, deny or ask
	Pattern string `json:"pattern,omitempty"`
	Source  string `json:"source,omitempty"`
	Reason  string `json:"reason"`
}

// CommandInfo describes one command an agent may use.
type CommandInfo struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Class       string          `json:"class"`
	Idempotent  bool            `json:"idempotent"`
	Params      json.RawMessage `json:"params"`
	// Policy is what happens when the agent proposes it with no pattern matching: ask,
	// or allow (read commands when auto_read is on). Execute commands always ask.
	Policy string `json:"policy"`
	// Provider is the component that offers it (commands, context, web, shell, mcp...).
	Provider string `json:"provider"`
	// Patterns are the permission patterns that can decide its proposals without asking
	// (deny ones first); whether one does depends on the proposal's args.
	Patterns []Permission `json:"patterns"`
}

// Episode is one completed step: the action, its outcome and the reasoning behind it.
type Episode struct {
	RunID      string          `json:"run_id"`
	Step       int             `json:"step"`
	ProposalID string          `json:"proposal_id"`
	Command    string          `json:"command"`
	Args       json.RawMessage `json:"args"`
	Reasoning  string          `json:"reasoning"`
	// Outcome is succeeded, failed, denied or feedback.
	Outcome  string    `json:"outcome"`
	Result   string    `json:"result"`
	Feedback string    `json:"feedback,omitempty"`
	At       time.Time `json:"at"`
	// Decision is the last decision on the episode's proposal — who or which grant let it
	// run, or ended it — in an agent's history (GET /v0/agents/{agent}/history); nil in
	// events and where none was recorded.
	Decision *Decision `json:"decision,omitempty"`
}

// EventType names an event on an agent's stream.
type EventType string

// Event types.
const (
	EventState    EventType = "state"    // Agent carries the new state
	EventProposal EventType = "proposal" // Proposal awaits a decision or runs by policy
	EventDecision EventType = "decision" // Decision was recorded
	EventResult   EventType = "result"   // Episode carries the outcome
	EventQuestion EventType = "question" // Question awaits an answer
	EventFinish   EventType = "finish"   // the run ended; Message is the reason
	EventError    EventType = "error"    // Message says what went wrong (the agent may go on)
	EventRemoved  EventType = "removed"  // the agent was deleted
)

// Event is one line of an NDJSON event stream.
type Event struct {
	Seq      int64     `json:"seq"`
	Type     EventType `json:"type"`
	AgentID  string    `json:"agent_id"`
	Time     time.Time `json:"time"`
	Agent    *Agent    `json:"agent,omitempty"`
	Proposal *Proposal `json:"proposal,omitempty"`
	Decision *Decision `json:"decision,omitempty"`
	Episode  *Episode  `json:"episode,omitempty"`
	Question *Question `json:"question,omitempty"`
	Message  string    `json:"message,omitempty"`
	// Team is set on EventTeam, the events of a team run's stream (its AgentID is then
	// the team run's id).
	Team *TeamEvent `json:"team,omitempty"`
	// Exhausted is set on the state and finish events of an agent a budget stopped: it
	// says which budget, so a front end can show "paused: over its token budget" without
	// reading the reason's words.
	Exhausted *BudgetExhausted `json:"budget_exhausted,omitempty"`
	// Threads is set on EventRemoved: the chat threads the agent's events went to (its
	// own, or its nearest bound parent's), which the store no longer has. Only the
	// in-process chat relay reads it, so it stays off the wire.
	Threads []*ChatBinding `json:"-"`
	// Messages is set on EventRemoved too: the messages of the agent's proposals still
	// open in chat, with their proposals, which the store dropped with the agent.
	Messages []*ChatMessage `json:"-"`
	// Decided is set on EventDecision: the proposal decided, as it was asked (its status
	// before the decision), which the chat relay shows with the decision however the
	// agent moved on since. Only the in-process relay reads it.
	Decided *Proposal `json:"-"`
	// Unchanged is set on an EventState that shows the agent in the state, and with the
	// reason people are shown (Agent.ShownReason), it had before: the event tells of
	// something else (a policy edit, a late step's end), so the chat relay posts no state
	// note for it. Only the in-process relay reads it.
	Unchanged bool `json:"-"`
}

// Scopes of a BudgetExhausted.
const (
	BudgetScopeAgent = "agent" // the agent's own budget, over all its runs: it is paused
	BudgetScopeRun   = "run"   // the run's budget: the run ended, the agent is idle
)

// BudgetExhausted is the budget that stopped an agent.
type BudgetExhausted struct {
	// Scope is BudgetScopeAgent or BudgetScopeRun.
	Scope string `json:"scope"`
	// Kind is the bound reached: steps, tokens or time.
	Kind string `json:"kind"`
	// RunID is the run that was going on (for a run's budget, the run it ended).
	RunID string `json:"run_id,omitempty"`
	// Budget is the whole budget in force, the reached bound among its fields.
	Budget Budget `json:"budget"`
}

// CreateAgentRequest creates an agent: either from a free-text Task (the model writes the
// profile) or from Name, Description and Goals.
type CreateAgentRequest struct {
	Name        string   `json:"name,omitempty"`
	Description string   `json:"description,omitempty"`
	Goals       []string `json:"goals,omitempty"`
	Task        string   `json:"task,omitempty"`
	Policy      *Policy  `json:"policy,omitempty"`
	// Start begins a run at once (default true when Task or Goals are given).
	Start *bool `json:"start,omitempty"`
	// Budget, when set, bounds the run this request starts (so it needs one to start); a
	// run that reaches it ends with the outcome budget_exhausted.
	Budget *Budget `json:"budget,omitempty"`
	// Commands limits the agent to these commands (finish and ask_user are always
	// offered); empty offers every command the daemon has.
	Commands []string `json:"commands,omitempty"`
}

// GoalsTask is the task of an agent created with goals and no task: its run works on its
// Goals. Front ends show the goals where they would show this text.
const GoalsTask = "Achieve the goals below."

// DecideRequest decides on a proposal. ProposalID must name the agent's current proposal.
type DecideRequest struct {
	ProposalID string       `json:"proposal_id"`
	Kind       DecisionKind `json:"kind"`
	Count      int          `json:"count,omitempty"`
	Feedback   string       `json:"feedback,omitempty"`
	By         string       `json:"by,omitempty"`
	// ByName is the decider's display name when By is an id (a chat user's).
	ByName string `json:"by_name,omitempty"`
	// UID is set by the daemon to the socket peer's uid; a value sent is replaced.
	UID    *uint32 `json:"uid,omitempty"`
	Source string  `json:"source,omitempty"`
	// Hash, when set, is the Ref (or a prefix of at least 16 hex characters) of the
	// proposal as the person saw it, which binds the decision to the change it was
	// shown; the decision is refused when it is not this proposal's Ref now. agentctl,
	// chat buttons, typed replies and the web console carry it.
	Hash string `json:"hash,omitempty"`
	// Scope widens the decision: ScopeAgent (with an approval) also approves, from now
	// on, every proposal of this agent with the same command and args (an exact grant);
	// ScopeDeny (with a denial) refuses every proposal matching the proposal's exact
	// command and subject (a deny pattern). Empty decides this proposal only.
	Scope string `json:"scope,omitempty"`
}

// MaxTextBytes caps a task, feedback or an answer sent to an agent, in bytes: what a
// person writes goes into the model's history whole. Front ends size their dialogs and
// check lengths with it, so a person learns the limit before the daemon refuses.
const MaxTextBytes = 8000

// AnswerRequest answers an agent's pending ask_user question.
type AnswerRequest struct {
	ProposalID string `json:"proposal_id,omitempty"`
	Text       string `json:"text"`
	By         string `json:"by,omitempty"`
	// ByName and UID are as in DecideRequest: a chat user's display name, and the socket
	// peer's uid that the daemon sets.
	ByName string  `json:"by_name,omitempty"`
	UID    *uint32 `json:"uid,omitempty"`
}

// TaskRequest gives an idle agent a follow-up task; its history carries over.
type TaskRequest struct {
	Task string `json:"task"`
	// Budget, when set, bounds the run the task starts; a run that reaches it ends with
	// the outcome budget_exhausted.
	Budget *Budget `json:"budget,omitempty"`
}

// OllamaStatus is what the daemon knows about the model server.
type OllamaStatus struct {
	Host string `json:"host"`
	// HostFrom says where agentd took Host from: "config" (its config file), "OLLAMA_HOST"
	// (its environment) or "default", so a hint names what to change.
	HostFrom      string   `json:"host_from,omitempty"`
	Reachable     bool     `json:"reachable"`
	Version       string   `json:"version,omitempty"`
	Model         string   `json:"model"`
	SmartModel    string   `json:"smart_model,omitempty"`
	ModelPresent  bool     `json:"model_present"`
	ContextLength int      `json:"context_length,omitempty"`
	Capabilities  []string `json:"capabilities,omitempty"`
	Error         string   `json:"error,omitempty"`
	// CheckedAt is when the daemon last heard from the server (a probe, about once a
	// minute, or a model call) or failed to: Reachable is as of then. Zero before the
	// first probe.
	CheckedAt time.Time `json:"checked_at,omitzero"`
	// Hosts are the Ollama servers calls go to ([[ollama.hosts]], or the one [ollama]
	// host), as the daemon's pool sees them now.
	Hosts []OllamaHostStatus `json:"hosts,omitempty"`
	// Queue is the daemon's queue of model calls, one entry per class: interactive
	// (agents a person is waiting on) then batch (schedules and teams).
	Queue []ModelQueueStatus `json:"queue,omitempty"`
}

// OllamaHostStatus is one Ollama server of the pool.
type OllamaHostStatus struct {
	URL string `json:"url"`
	// Up is false while the server does not answer: calls go to the others, and it is
	// asked again with backoff (RetryInMS from now).
	Up bool `json:"up"`
	// Slots is how many calls it serves at once; Busy how many are in flight now.
	Slots int `json:"slots"`
	Busy  int `json:"busy"`
	// Served counts the calls it answered since the daemon started.
	Served int64 `json:"served"`
	// Models are the models sent there: the configured list when ModelsConfigured, else
	// what its /api/tags listed.
	Models           []string `json:"models,omitempty"`
	ModelsConfigured bool     `json:"models_configured,omitempty"`
	RetryInMS        int64    `json:"retry_in_ms,omitempty"`
	Error            string   `json:"error,omitempty"`
	// CheckedAt is when the daemon last heard from it (a probe or a call) or failed to:
	// Up is as of then. Zero before the first.
	CheckedAt time.Time `json:"checked_at,omitzero"`
	// Failing are the models the server, up, cannot run now (it answered HTTP 500, e.g.
	// too little memory to load one): their calls go to other servers until RetryInMS.
	Failing []OllamaModelFailing `json:"failing,omitempty"`
}

// OllamaModelFailing is a model one Ollama server cannot run now.
type OllamaModelFailing struct {
	Model     string `json:"model"`
	RetryInMS int64  `json:"retry_in_ms"`
	Error     string `json:"error"`
}

// ModelQueueStatus is one class of the daemon's queue of model calls.
type ModelQueueStatus struct {
	Class  string `json:"class"`  // interactive or batch
	Queued int    `json:"queued"` // calls waiting for a slot now
	Served int64  `json:"served"` // calls that got a slot since the daemon started
	// Waits over the last 512 calls of the class, in milliseconds.
	WaitP50MS float64 `json:"wait_p50_ms"`
	WaitP99MS float64 `json:"wait_p99_ms"`
	WaitMaxMS float64 `json:"wait_max_ms"`
}

// Status is the daemon's health at a glance.
type Status struct {
	Version string    `json:"version"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	// EventSeq is the seq of the newest event when the status was read: follow
	// subscribes since it, so nothing between this and its snapshot of the agent is lost.
	EventSeq int64          `json:"event_seq"`
	StateDir string         `json:"state_dir"`
	Ollama   OllamaStatus   `json:"ollama"`
	Agents   map[string]int `json:"agents"` // count by state
	// Bots are the enabled chat bots' connections, by platform; none without bots.
	Bots []BotStatus `json:"bots,omitempty"`
	// HTTP is the optional TCP listener ([http]); its zero value is a listener that is off.
	HTTP HTTPStatus `json:"http"`
	// Shell is the sandbox of execute_shell ([shell]); its zero value is shell off.
	Shell ShellStatus `json:"shell"`
	// Web is the web console ([web_console], agentctl web); its zero value is off.
	Web WebStatus `json:"web"`
}

// WebStatus is the web console's address while it serves.
type WebStatus struct {
	// URL is where it serves, like http://127.0.0.1:7077/; "" while it is off.
	URL string `json:"url,omitempty"`
}

// ShellStatus is the sandbox execute_shell and execute_python_file run in.
type ShellStatus struct {
	// Enabled is [shell] enabled: the commands are offered.
	Enabled bool `json:"enabled"`
	// Sandbox says what confines their programs, or that they are refused or unconfined.
	Sandbox string `json:"sandbox,omitempty"`
	// Confined is false when their programs run unconfined (sandbox "none") or are
	// refused (no working sandbox).
	Confined bool `json:"confined"`
	// Limits says how each agent's programs are bounded together (a cgroup per agent:
	// processes, memory, CPU), or what is weaker without, and the fix.
	Limits string `json:"limits,omitempty"`
	// LimitsPerAgent is true when every one of those bounds is per agent.
	LimitsPerAgent bool `json:"limits_per_agent"`
}

// HTTPStatus is the optional TCP listener ([http]) as the daemon bound it.
type HTTPStatus struct {
	// Listening is false when [http] listen is unset: nothing but the socket is served.
	Listening bool `json:"listening"`
	// Addr is the address actually bound, like "127.0.0.1:7070" (a port 0 in the config
	// shows here as the one the system chose).
	Addr string `json:"addr,omitempty"`
	// Metrics and AgentProtocol tell what it serves: /metrics and /ap/v1, both behind
	// the bearer token.
	Metrics       bool `json:"metrics"`
	AgentProtocol bool `json:"agent_protocol"`
	// Remote is set when allow_remote let it bind an address other machines can reach.
	Remote bool `json:"remote,omitempty"`
}

// BotStatus is one chat bot's connection to its platform.
type BotStatus struct {
	Platform string `json:"platform"` // slack, discord
	// State is connecting, connected, reconnecting, stopped, or "not started": the bot
	// is enabled but its secrets are missing (Error names each; doctor says the fix).
	State string    `json:"state"`
	Since time.Time `json:"since"` // when State began
	// Attempt counts reconnect attempts since the connection was last up.
	Attempt int `json:"attempt,omitempty"`
	// Error is why the connection is down, or why the bot did not start, when it is.
	Error string `json:"error,omitempty"`
}

// AuditEntry is one line of the append-only audit log: a proposal, decision (who, from
// where), execution start, outcome, or a change to an agent.
type AuditEntry struct {
	ID      int64           `json:"id"`
	At      time.Time       `json:"at"`
	AgentID string          `json:"agent_id"`
	Agent   string          `json:"agent,omitempty"` // its name, while the agent exists
	Kind    string          `json:"kind"`
	Detail  json.RawMessage `json:"detail"`
}

// AuditQuery selects audit entries: Agent (name or id; "" for all), Since, and the
// newest Limit of them (0 means 100).
type AuditQuery struct {
	Agent string    `query:"agent"`
	Kind  string    `query:"kind"` // one kind of entry, e.g. "decision"; "" for all
	Since time.Time `query:"since"`
	Limit int       `query:"limit"`
	// Before, when not 0, keeps entries with an ID below it: the next page back, after a
	// page whose oldest entry had this ID (one listing holds at most 10,000).
	Before int64 `query:"before" want:"an audit entry id (a whole number)"`
}

// Run is one task an agent worked on, from its start to its end.
type Run struct {
	ID        string    `json:"id"`
	AgentID   string    `json:"agent_id"`
	Agent     string    `json:"agent,omitempty"`
	Task      string    `json:"task"`
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
	// Outcome is empty while the run goes on.
	Outcome RunOutcome `json:"outcome,omitempty"`
	Reason  string     `json:"reason,omitempty"`
	// Steps and Tokens are the run's proposals and model tokens (prompt and reply), so
	// far while it goes on.
	Steps  int   `json:"steps"`
	Tokens int64 `json:"tokens"`
	// Budget is the run's own budget (from a schedule, a team or the request that
	// started it); nil when the run has none.
	Budget *Budget `json:"budget,omitempty"`
}

// ReplayStep is one step of a run: the proposal, every decision on it, the episode.
type ReplayStep struct {
	Proposal  Proposal   `json:"proposal"`
	Decisions []Decision `json:"decisions"`
	Episode   *Episode   `json:"episode,omitempty"`
}

// Replay is a run step by step (agentctl replay).
type Replay struct {
	Run   Run          `json:"run"`
	Steps []ReplayStep `json:"steps"`
}

// Check is one finding of agentctl doctor.
type Check struct {
	Name   string `json:"name"`   // what was checked: ollama, model, store, disk, ...
	Status string `json:"status"` // ok, warn or fail
	Detail string `json:"detail"` // what was found
	Fix    string `json:"fix,omitempty"`
}

// The statuses of a Check.
const (
	CheckOK   = "ok"
	CheckWarn = "warn"
	CheckFail = "fail"
)

// DoctorReport is the daemon's side of agentctl doctor: every check it ran, in order.
type DoctorReport struct {
	Checks []Check `json:"checks"`
}

// ErrorResponse is the body of every non-2xx reply.
type ErrorResponse struct {
	Error string `json:"error"`
}

// Budget bounds one run, or an agent over all its runs (Agent.Budget); a zero field
// sets no bound. A run that reaches one stops cleanly: the agent goes idle and the run's
// outcome is budget_exhausted. An agent that reaches its own is paused until the
// budget is raised (BudgetRequest).
type Budget struct {
	// MaxSteps is how many proposals the run (or agent) may make.
	MaxSteps int `json:"max_steps,omitempty"`
	// MaxTokens bounds the model's tokens (prompt and reply) over the run (or agent).
	MaxTokens int64 `json:"max_tokens,omitempty"`
	// MaxTime bounds the run's wall time, or the agent's busy time (thinking and
	// executing), as a Go duration such as "30m" or "1h30m".
	MaxTime string `json:"max_time,omitempty"`
	// MaxDisk bounds the bytes the agent's workspace takes on disk (an agent's budget
	// only, not a run's).
	MaxDisk int64 `json:"max_disk,omitempty"`
}

// BudgetRequest changes an agent's own budget. A nil field is left as it is; 0 sets no
// bound. Reset first drops every value set this way, back to the config's.
type BudgetRequest struct {
	MaxSteps  *int    `json:"max_steps,omitempty"`
	MaxTokens *int64  `json:"max_tokens,omitempty"`
	MaxTime   *string `json:"max_time,omitempty"`
	MaxDisk   *int64  `json:"max_disk,omitempty"` // bytes
	Reset     bool    `json:"reset,omitempty"`
}

// Autonomy modes of a scheduled run.
const (
	AutonomyAsk      = "ask"      // every proposal waits for a person (the default)
	AutonomyAuto     = "auto"     // the first Steps proposals run without asking
	AutonomyPatterns = "patterns" // proposals matching Allow run; the rest ask
)

// Autonomy says which proposals of a scheduled run go ahead without a person.
type Autonomy struct {
	// Mode is ask (default), auto or patterns.
	Mode string `json:"mode"`
	// Steps (auto only) is how many proposals run without asking; 0 means the budget's
	// max_steps. Execute-class commands still ask unless an allow pattern names them.
	Steps int `json:"steps,omitempty"`
	// Allow (patterns only) are permission patterns, command(glob), stored for the agent.
	Allow []string `json:"allow,omitempty"`
}

// DeliveryAgentctl is the default delivery: results and pending approvals of a scheduled
// run are seen with agentctl (show, follow, schedule history). The other deliveries are
// chat channels, PLATFORM:CHANNEL_ID ("slack:C0123ABC", "discord:123456789012345678"): each run gets a thread there,
// decided there like a run started from chat.
const DeliveryAgentctl = "agentctl"

// Schedule is a recurring goal: a cron spec that gives an agent a task.
type Schedule struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Spec is the cron spec as given, e.g. "0 9 * * 1-5", "@every 90m" or
	// "CRON_TZ=Europe/Berlin 30 2 * * *".
	Spec string `json:"spec"`
	// TimeZone is the zone the spec is read in (IANA name, or Local).
	TimeZone string `json:"time_zone"`
	// Agent is the existing agent that gets the goal (its id); Template is set instead
	// when every run creates a fresh agent named Template-xxxxxx.
	Agent       string   `json:"agent,omitempty"`
	Template    string   `json:"template,omitempty"`
	Description string   `json:"description,omitempty"` // the template agents' description
	Goal        string   `json:"goal"`
	Autonomy    Autonomy `json:"autonomy"`
	Budget      Budget   `json:"budget"`
	// Runs, Steps and Tokens total the schedule's firings that ran, over its kept
	// history, with their steps and model tokens; set by the single-schedule call.
	Runs        int       `json:"runs"`
	Steps       int       `json:"steps"`
	Tokens      int64     `json:"tokens"`
	Delivery    string    `json:"delivery"`
	Concurrency string    `json:"concurrency"` // skip, queue or parallel
	Missed      string    `json:"missed"`      // skip, run_once or run_if_within=DURATION
	Paused      bool      `json:"paused"`
	CreatedAt   time.Time `json:"created_at"`
	// LastFired is the time of its newest firing (scheduled or run-now; run, skipped or
	// missed); absent when it never fired.
	LastFired time.Time `json:"last_fired,omitzero"`
	// Next is the next fire time; zero when paused or the spec fires no more.
	Next time.Time `json:"next,omitzero"`
	// NextTimes are the next fire times (up to 5), in the schedule's zone.
	NextTimes []time.Time `json:"next_times,omitempty"`
	// Running are the runs of this schedule that have not ended.
	Running []string `json:"running,omitempty"`
	// Queued is set when a firing waits for the running run (concurrency queue).
	Queued bool `json:"queued,omitempty"`
	// When are the wake conditions checked at each firing before any model call; nil
	// (none) wakes the model at every firing.
	When *WakeConditions `json:"when,omitempty"`
	// Wake is what the conditions' checks left (set by the single-schedule call when
	// the schedule has conditions).
	Wake *WakeStatus `json:"wake,omitempty"`
}

// WakeConditions are a schedule's wake conditions (agentctl's --when-changed PATH,
// --when-url URL, --when 'COMMAND', --when-network, --when-any|--when-all, --when-failed skip|wake,
// --when-failed-after N; the config file's [[schedules]] when).
type WakeConditions struct {
	// Changed is one condition: a file or folder among these changed since the last run
	// that started. A relative path is in the agent's workspace; an absolute one must lie
	// under one of the agent's configured read-only paths.
	Changed []string `json:"changed,omitempty"`
	// URLs are one condition each: the page's content changed since the last run that
	// started, as read_webpage's fetcher (and its network guard) reads it.
	URLs []string `json:"urls,omitempty"`
	// Commands are one condition each: a shell line run as execute_shell runs it, with the
	// workspace read-only and no network; exit 0 wakes the model (its output is the run's
	// first observation), exit 1 is nothing to do, anything else is a failed check.
	Commands []string `json:"commands,omitempty"`
	// Network lets the Commands reach the network the agent's config grants it
	// (--when-network). Without it they run offline: a check may run a file the agent
	// can rewrite, at every firing, with nobody asked.
	Network bool `json:"network,omitempty"`
	// All wakes the model only when every condition says wake; the default is any.
	All bool `json:"all,omitempty"`
	// OnFailure is what a firing does once FailAfter checks in a row have failed: "skip"
	// (the default) or "wake". Before that a failed check skips.
	OnFailure string `json:"on_failure,omitempty"`
	// FailAfter is how many failed checks in a row are surfaced (schedule show, doctor,
	// the delivery channel) and then follow OnFailure; 0 is the default, 3.
	FailAfter int `json:"fail_after,omitempty"`
}

// WakeStatus is what a schedule's wake checks left.
type WakeStatus struct {
	// SeenAt is when the run whose start the conditions compare with started; zero
	// when none did since they were set (the first firing wakes).
	SeenAt time.Time `json:"seen_at,omitzero"`
	// Failures counts the firings in a row whose check failed; Failing is set once it
	// reached the conditions' fail_after (the failure is surfaced).
	Failures int  `json:"failures,omitempty"`
	Failing  bool `json:"failing,omitempty"`
	// LastError and FailedAt are the latest failed check's.
	LastError string    `json:"last_error,omitempty"`
	FailedAt  time.Time `json:"failed_at,omitzero"`
}

// ScheduleRequest adds a schedule. Give Agent or Template, not both.
type ScheduleRequest struct {
	Name        string   `json:"name"`
	Spec        string   `json:"spec"`
	TimeZone    string   `json:"time_zone,omitempty"`
	Agent       string   `json:"agent,omitempty"`
	Template    string   `json:"template,omitempty"`
	Description string   `json:"description,omitempty"`
	Goal        string   `json:"goal"`
	Autonomy    Autonomy `json:"autonomy"`
	Budget      Budget   `json:"budget"`
	// Delivery is where results and approvals go: "" or "agentctl", or a chat channel
	// served by an enabled bot, "slack:CHANNEL_ID" or "discord:CHANNEL_ID".
	Delivery    string `json:"delivery,omitempty"`
	Concurrency string `json:"concurrency,omitempty"`
	Missed      string `json:"missed,omitempty"`
	Paused      bool   `json:"paused,omitempty"`
	// When are the wake conditions; nil or empty wakes the model at every firing.
	When *WakeConditions `json:"when,omitempty"`
}

// ScheduleRun is the record of one firing of a schedule.
type ScheduleRun struct {
	ID         string `json:"id"`
	ScheduleID string `json:"schedule_id"`
	// Scheduled is the fire time; for run-now, when it was asked.
	Scheduled time.Time `json:"scheduled"`
	Started   time.Time `json:"started,omitzero"`
	Ended     time.Time `json:"ended,omitzero"`
	Manual    bool      `json:"manual,omitempty"`
	// Outcome is queued, started, finished, failed, budget_exhausted, skipped, missed,
	// nothing_to_do or check_failed.
	Outcome RunOutcome `json:"outcome"`
	Reason  string     `json:"reason,omitempty"`
	AgentID string     `json:"agent_id,omitempty"`
	RunID   string     `json:"run_id,omitempty"`
	Steps   int        `json:"steps"`
	Tokens  int64      `json:"tokens"`
}

// ReloadResult is what a config reload did (agentctl reload, or SIGHUP to agentd).
type ReloadResult struct {
	// Config is the file read; "" when agentd runs on the defaults alone.
	Config string `json:"config"`
	// Applied are the keys whose new values are in use now, dotted as in the file
	// ("ollama.model", "agents.NAME.allow"). Steps under way finish with the old ones.
	Applied []string `json:"applied"`
	// NeedsRestart are the keys changed since agentd started that only a restart
	// applies (state_dir, socket, ollama.hosts, [memory], [web_commands], [shell], [mcp], …).
	NeedsRestart []string `json:"needs_restart"`
	// BotsRestarted tells whether the chat bots were restarted with the new settings.
	BotsRestarted bool `json:"bots_restarted"`
	// Warnings are settings in the new file that are valid but do nothing (as
	// agentd --check-config warns).
	Warnings []string `json:"warnings,omitempty"`
}
