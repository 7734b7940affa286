package bots

import "time"

// The relay's records, kept by whatever Bindings the daemon gives it (the server keeps
// them in its store, daemon/server/chatstore); the relay never opens the store itself.

// Binding ties a chat thread to an agent's run: the thread where its proposals and
// questions are posted and where replies to it are read.
type Binding struct {
	Platform  string // slack, discord
	Team      string // workspace or guild
	Channel   string
	Thread    string // the thread's id (Slack: the root message's ts)
	AgentID   string
	RunID     string
	CreatedBy string
	CreatedAt time.Time
	// EndPost is the id of the relay's post in the thread that showed the end of run
	// EndRun (its finish or failure note); "" until a run's end is shown there.
	EndPost string
	EndRun  string
}

// ChatMessage is a message posted for a proposal (kind "proposal") or a question
// (kind "question"), kept so the message can be edited when the decision comes.
type ChatMessage struct {
	ProposalID string
	Platform   string
	Kind       string
	Channel    string
	Message    string
	PostedAt   time.Time
}

// TeamBinding ties a chat thread to a team run (one per platform).
type TeamBinding struct {
	TeamRunID string
	Platform  string
	Team      string // workspace or guild
	Channel   string
	Thread    string
	// Seq is the last transcript entry posted in the thread.
	Seq       int
	CreatedBy string
}
