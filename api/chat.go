package api

import "time"

// The chat relay's records: bots keeps them through its Bindings, the daemon stores them
// (daemon/store), one type each for both.

// ChatBinding ties an agent's runs to a chat thread: its events are posted there and
// replies there steer it. An agent has at most one binding per platform that counts,
// its latest.
type ChatBinding struct {
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
	// Ref is the proposal's Ref as the message shows it: what a typed reply approves.
	Ref string
	// Closed is set once the message takes no decision any more (decided, or closed
	// when its run ended): its buttons are gone and it is edited no more for that.
	Closed bool
	// Proposal is the proposal the message shows, as it was posted; OpenMessages and an
	// EventRemoved's Messages set it (the store keeps the proposal's own row).
	Proposal *Proposal
	// Decision is the decision on Proposal when it was decided before the message was
	// closed (the relay had not shown it yet); set where Proposal is.
	Decision *Decision
}

// TeamBinding ties a team run to a chat thread (one per platform): its turns are posted
// there, labelled with their roles, and its role agents' proposals are decided there.
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
