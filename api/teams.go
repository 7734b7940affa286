package api

import "time"

// Team run statuses. Every status but running is final and comes with a reason.
const (
	TeamRunning   = "running"
	TeamFinished  = "finished"   // a transition led to the end state
	TeamTurnLimit = "turn_limit" // the workflow's max_turns were used up
	TeamStopped   = "stopped"    // stopped by a person
	TeamFailed    = "failed"     // the model failed for good, a role agent was removed, …
)

// Kinds of team turns.
const (
	TurnMessage    = "message"    // a role spoke
	TurnConclusion = "conclusion" // a phase's conclusion stored into a variable
	TurnPhaseEnd   = "phase_end"  // a phase ended; Mode says how
	TurnTransition = "transition" // the run moved to another state
	TurnEnd        = "end"        // the run ended; Mode is its status
)

// EventTeam is a team run's event: a transcript entry, a wait for a role agent, or the
// run's end (Event.Team says which).
const EventTeam EventType = "team"

// TeamEvent is what a team run's event carries.
type TeamEvent struct {
	TeamID string `json:"team_id"`
	// Status is the run's status after the event; Reason why it ended, once it has.
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	// Waiting names the role agent whose run the team now waits for (its proposals are
	// decided like any agent's); set on the event that starts the wait.
	Waiting string `json:"waiting,omitempty"`
	// Turn is the transcript entry the event reports (its Text cut to 1000 characters;
	// the transcript has it whole). Kind TurnEnd is the run's end.
	Turn *TeamTurn `json:"turn,omitempty"`
}

// TeamRun is a run of an SOP workflow: several roles working through its states.
type TeamRun struct {
	ID       string `json:"id"`
	Workflow string `json:"workflow"` // the workflow's name
	File     string `json:"file,omitempty"`
	Task     string `json:"task"`
	Status   string `json:"status"`
	Reason   string `json:"reason,omitempty"`
	// State and Phase are where the run is (or ended).
	State string `json:"state"`
	Phase string `json:"phase,omitempty"`
	// Vars are the shared variables (task, and what the phases stored).
	Vars map[string]string `json:"vars"`
	// Agents are the daemon agents of the roles that use commands, by role. They are
	// removed with their workspaces when the run ends, unless KeepAgents; the transcript
	// keeps what they said.
	Agents map[string]string `json:"agents,omitempty"`
	// KeepAgents keeps the role agents after the run ends (agentctl team run --keep-agents).
	KeepAgents bool `json:"keep_agents,omitempty"`
	// Waiting names the role agent whose run the team waits for (its proposals are decided
	// like any agent's: `agentctl approve AGENT`).
	Waiting   string    `json:"waiting,omitempty"`
	Turns     int       `json:"turns"` // messages so far
	MaxTurns  int       `json:"max_turns"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
	// Transcript is every turn, oldest first; only TeamRun (one run) fills it.
	Transcript []TeamTurn `json:"transcript,omitempty"`
}

// TeamTurn is one entry of a team run's transcript.
type TeamTurn struct {
	Seq   int    `json:"seq"`
	Kind  string `json:"kind"`
	State string `json:"state"`
	Phase string `json:"phase,omitempty"`
	Cycle int    `json:"cycle,omitempty"` // of a composed phase, from 1
	Role  string `json:"role,omitempty"`
	// AgentID and RunID are set for a message a role agent's run produced.
	AgentID string `json:"agent_id,omitempty"`
	RunID   string `json:"run_id,omitempty"`
	Text    string `json:"text"`
	// Mode says why a phase or the run ended: info, turn_limit, state_turn_limit,
	// role_flip, repeated_instruction, flake_reply, message_loop, no_reply, …
	Mode string    `json:"mode,omitempty"`
	At   time.Time `json:"at"`
}

// TeamRunRequest starts a team run.
type TeamRunRequest struct {
	// Workflow is the workflow file's content (TOML); File its name, for error messages.
	Workflow string `json:"workflow"`
	File     string `json:"file,omitempty"`
	Task     string `json:"task"`
	// By names who started it, for the audit log.
	By string `json:"by,omitempty"`
	// KeepAgents keeps the role agents (and their workspaces) after the run ends; by
	// default they are removed.
	KeepAgents bool `json:"keep_agents,omitempty"`
}

// TeamPlanRequest asks the planner for roles and a plan for a task.
type TeamPlanRequest struct {
	Task string `json:"task"`
}

// TeamPlan is the planner's answer: a workflow file to read, save and run.
type TeamPlan struct {
	Workflow string `json:"workflow"` // TOML, valid
	// Revised says the observer found Problems in the first plan and the model revised it.
	Revised  bool     `json:"revised"`
	Problems []string `json:"problems,omitempty"`
}
