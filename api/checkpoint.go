package api

import (
	"context"
	"time"
)

// CheckpointService is the workspace checkpoints taken before each step that may change
// an agent's workspace: what a step changed, and putting the workspace back.
type CheckpointService interface {
	// Diff returns what a step changed in the agent's workspace: step req.Step of run
	// req.Run (by default the latest run with that step number), or with no step the
	// latest step that may have changed it.
	Diff(ctx context.Context, ref string, req DiffRequest) (*StepChange, error)
	// Rewind puts the agent's workspace back as it was before step req.To of run req.Run
	// (by default the latest run with that step number), or before the step or rewind
	// req.ID names (req.Undo: undoes that rewind); with DryRun it only says what would be
	// restored. Refused
	// (ErrConflict) while a step of the agent is in flight.
	Rewind(ctx context.Context, ref string, req RewindRequest) (*Rewind, error)
}

// DiffRequest names the step to show; 0 is the latest.
type DiffRequest struct {
	Step int `json:"step,omitempty" query:"step" want:"a step number like 3 (agentctl history lists them)"`
	// Run is the run whose step Step is (its id, as `agentctl history` shows it): a step
	// number starts again at 1 in every run. "" takes the latest run with that step.
	// With no Step, all the run's checkpointed steps together (Kind "run"): a team's turn
	// is a run of its role agent.
	Run string `json:"run,omitempty" query:"run"`
}

// StepChange is what one step — or a rewind — changed in an agent's workspace.
type StepChange struct {
	AgentID string `json:"agent_id"`
	Agent   string `json:"agent"`
	// ID is the step's proposal id, or the rewind's (rw-…).
	ID    string `json:"id"`
	RunID string `json:"run_id"`
	Step  int    `json:"step"`
	// OtherRuns are the agent's other runs with a checkpointed step of this number, the
	// latest first: DiffRequest.Run or RewindRequest.Run picks one of them.
	OtherRuns []string `json:"other_runs,omitempty"`
	// Kind is "step", "rewind", or "run" for all a run's steps together (ID is the run's).
	Kind    string `json:"kind"`
	Command string `json:"command,omitempty"`
	// Running says the step has not ended: the change shown is the workspace now against
	// the checkpoint before it.
	Running bool `json:"running,omitempty"`
	// Files counts the paths changed; Added and Removed the text lines.
	Files   int `json:"files"`
	Added   int `json:"added"`
	Removed int `json:"removed"`
	// Summary is the change in one line: "changed 3 files (+12 −4)", or "no changes".
	Summary string `json:"summary"`
	// Preview is the change as proposal previews show one (PreviewChange): the paths
	// changed, then each text file's unified diff.
	Preview *Preview `json:"preview,omitempty"`
	// Notice says what the checkpoints could not capture ("" when whole).
	Notice string    `json:"notice,omitempty"`
	At     time.Time `json:"at"`
}

// RewindRequest asks to put an agent's workspace back as it was before step To (of run
// Run, by default the latest run with that step number), or before the step ID names
// (StepChange.ID: a chat button carries it), or to undo the rewind Undo (its rw-… id).
type RewindRequest struct {
	To int `json:"to,omitempty"`
	// Run alone (no To) names the run's first checkpointed step: the workspace goes back
	// to as it was before the run (a team's turn) changed it.
	Run string `json:"run,omitempty"`
	// ID names the step (its proposal id) or the rewind (rw-…) instead of To and Run.
	ID   string `json:"id,omitempty"`
	Undo string `json:"undo,omitempty"`
	// DryRun only says what would be restored.
	DryRun bool `json:"dry_run,omitempty"`
	// Shown is the dry run's Rewind.From (at least its first 16 hex characters): the
	// workspace the person was shown the change against. A rewind applies only to that
	// workspace: one changed since is refused ("ask again"), and so is a rewind without
	// Shown (an older client: ask with DryRun first and send its From back).
	Shown string `json:"shown,omitempty"`
	// By names who asked, for the agent's history and the audit log ("" for agentctl's
	// user); Source is where from: agentctl, web, slack, discord.
	By     string `json:"by,omitempty"`
	Source string `json:"source,omitempty"`
}

// Rewind is what a rewind did, or with DryRun would do.
type Rewind struct {
	AgentID string `json:"agent_id"`
	Agent   string `json:"agent"`
	// Step is the step the workspace goes back to before; 0 when undoing a rewind.
	Step int `json:"step"`
	// Restore is what it changes (or changed): the workspace now against before Step.
	Restore StepChange `json:"restore"`
	// From names the workspace a dry run compared (the SHA-256 root of its checkpoint,
	// 64 hex): the rewind that applies this change sends it back as RewindRequest.Shown.
	From string `json:"from,omitempty"`
	// Done says the workspace was put back; Undo is then the rewind's id, which
	// `agentctl rewind AGENT --undo ID` takes to undo it.
	Done bool   `json:"done"`
	Undo string `json:"undo,omitempty"`
}

// DiffRoute serves CheckpointService.Diff.
var DiffRoute = register(Route[DiffRequest, *StepChange]{Method: "GET", Path: "/v0/agents/{agent}/diff",
	Call: byRefRequest(Service.Diff)})

// RewindRoute serves CheckpointService.Rewind.
var RewindRoute = register(Route[RewindRequest, *Rewind]{Method: "POST", Path: "/v0/agents/{agent}/rewind",
	Call: func(ctx context.Context, s Service, ref string, in RewindRequest) (*Rewind, error) {
		return s.Rewind(ctx, ref, in)
	}})
