package api

import (
	"cmp"
	"fmt"
	"strings"
	"time"
)

// Grant is a standing decision that approves more than one proposal without asking:
// `y -N` (a count), `y!` (this exact command), a pattern added with `agentctl policy
// add`, or a schedule's autonomy. Every approval it makes names it (Decision.Grant), and
// `agentctl policy AGENT` lists and revokes it.
type Grant struct {
	ID      string    `json:"id"`
	AgentID string    `json:"agent_id"`
	Kind    GrantKind `json:"kind"`
	// By is who made it and Source from where: agentctl, slack, discord, schedule, config, api.
	By     string `json:"by"`
	Source string `json:"source"`
	// Label is how it was made, as people say it: "y -3", "y!", "policy add", "--auto 5",
	// "autonomy of schedule nightly".
	Label string `json:"label"`
	// What it matches. Exact: Command and Hash, the proposal's hash of command and
	// canonical args (a write with other contents asks again). Pattern: Pattern, a
	// permission pattern such as write_file(notes/*). Count: any proposal a person would
	// be asked about, except execute commands (they need an explicit grant).
	Command string `json:"command,omitempty"`
	Hash    string `json:"hash,omitempty"`
	Pattern string `json:"pattern,omitempty"`
	// Files, on an exact grant of an execute command (execute_shell, execute_python_file),
	// are the workspace files its line names — a script, a program, a makefile — with
	// their contents when it was granted: it approves only while the line names the same
	// files with the same contents, so a rewritten check.py asks again.
	Files []BoundFile `json:"files,omitempty"`
	// Its end: Count proposals (0: no count bound; Used of them approved so far), the
	// time ExpiresAt, or the end of the run RunID — whichever comes first; or revoked.
	Count     int        `json:"count,omitempty"`
	Used      int        `json:"used"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	RunID     string     `json:"run_id,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
	RevokedBy string     `json:"revoked_by,omitempty"`
	// State is the grant's state when it was read: GrantActive, or why it approves
	// nothing any more.
	State string `json:"state,omitempty"`
}

// BoundFile is a workspace file an exact grant binds: its path as the line names it,
// from the top of the workspace, and the sha256 of its contents.
type BoundFile struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// GrantKind is what a grant matches.
type GrantKind string

// Grant kinds.
const (
	GrantCount   GrantKind = "count"   // y -N, --auto N, a schedule's autonomy: the next N proposals
	GrantExact   GrantKind = "exact"   // y!: the same command with the same args
	GrantPattern GrantKind = "pattern" // agentctl policy add: proposals the pattern allows
)

// Grant states.
const (
	GrantActive  = "active"
	GrantUsedUp  = "used up"
	GrantExpired = "expired"
	GrantRunOver = "run over"
	GrantRevoked = "revoked"
)

// Left is how many more proposals a count-bound grant approves; -1 when no count bounds it.
func (g *Grant) Left() int {
	if g.Count <= 0 {
		return -1
	}
	return max(g.Count-g.Used, 0)
}

// StateAt is the grant's state at now for an agent (or its top agent) on run runID.
func (g *Grant) StateAt(now time.Time, runID string) string {
	switch {
	case g.RevokedAt != nil:
		return GrantRevoked
	case g.Left() == 0:
		return GrantUsedUp
	case g.ExpiresAt != nil && !now.Before(*g.ExpiresAt):
		return GrantExpired
	case g.RunID != "" && g.RunID != runID:
		return GrantRunOver
	}
	return GrantActive
}

// Mark sets State to the grant's state at now on run runID, as the daemon shows it.
func (g *Grant) Mark(now time.Time, runID string) { g.State = g.StateAt(now, runID) }

// Describe names the grant for people, with what is left of it: "root's y -3 (1 of 2
// left)", "rule write_file(notes/*) added by root 2026-11-24", "root's y! on this exact
// write_file".
func (g *Grant) Describe() string {
	s := g.Name()
	var end []string
	if g.Left() >= 0 {
		end = append(end, LeftOf(g.Left(), g.Count))
	}
	if g.ExpiresAt != nil {
		end = append(end, "until "+g.ExpiresAt.UTC().Format("2006-01-02 15:04Z"))
	}
	if len(end) > 0 {
		s += " (" + strings.Join(end, ", ") + ")"
	}
	return s
}

// Name names the grant for people, without what is left of it: "root's y -3". A
// decision the grant made carries it as GrantLabel, and the count as fields.
func (g *Grant) Name() string {
	who := cmp.Or(g.By, g.Source)
	switch g.Kind {
	case GrantPattern:
		return "rule " + g.Pattern + " added by " + who + " " + g.CreatedAt.UTC().Format(time.DateOnly)
	case GrantExact:
		return who + "'s " + g.Label + " on this exact " + g.Command
	}
	if g.By == "" || strings.HasPrefix(g.Label, "autonomy of ") {
		return g.Label
	}
	return who + "'s " + g.Label
}

// LeftOf is the one wording of what is left of a count-bound grant, everywhere it is
// shown (follow, history, policy, chat): "1 of 2 left", where count is how many
// proposals the grant approves without asking (a y -3 approves the proposal answered
// and grants the next 2).
func LeftOf(left, count int) string { return fmt.Sprintf("%d of %d left", left, count) }

// GrantRequest adds a pattern grant to an agent (agentctl policy AGENT add PATTERN).
// With DryRun it only previews: which of the agent's last Preview proposals the
// pattern would have approved. Widening is an explicit choice: the preview comes first.
type GrantRequest struct {
	Pattern string `json:"pattern"`
	By      string `json:"by,omitempty"`
	Source  string `json:"source,omitempty"` // agentctl, slack, discord, api (default)
	// Count bounds how many proposals it approves (0: no bound); Expires is a duration
	// from now such as 2h (""; no time bound); Run ends it with the agent's current run.
	Count   int    `json:"count,omitempty"`
	Expires string `json:"expires,omitempty"`
	Run     bool   `json:"run,omitempty"`
	Preview int    `json:"preview,omitempty"` // proposals to look back over; 0 means 20
	DryRun  bool   `json:"dry_run,omitempty"`
}

// GrantPreview is what a pattern grant would have approved among the agent's last
// proposals, and the grant itself once stored (nil on a dry run).
type GrantPreview struct {
	AgentID string `json:"agent_id"`
	Pattern string `json:"pattern"`
	// Looked is how many of the agent's latest proposals were weighed; Matches those the
	// pattern would have approved, newest first.
	Looked  int          `json:"looked"`
	Matches []GrantMatch `json:"matches"`
	Grant   *Grant       `json:"grant,omitempty"`
}

// GrantMatch is one past proposal a pattern would have approved.
type GrantMatch struct {
	ProposalID string `json:"proposal_id"`
	Step       int    `json:"step"`
	Command    string `json:"command"`
	// Subject is what the pattern matched (a path, a shell line), or the args in JSON.
	Subject string `json:"subject"`
}

// GrantList is an agent's grants, newest first: active ones and those that ended.
type GrantList struct {
	AgentID string  `json:"agent_id"`
	Agent   string  `json:"agent"`
	Grants  []Grant `json:"grants"`
}

// RevokeRequest revokes one of an agent's grants by id.
type RevokeRequest struct {
	ID string `json:"id"`
	By string `json:"by,omitempty"`
}
