package bots

import (
	"context"

	"github.com/agentd/agentd/api"
)

// Service is the part of the daemon's localapi.Service the relay uses; the agent Supervisor's
// parts satisfy it in-process, composed by daemon/server.
type Service interface {
	Agents(ctx context.Context) ([]api.Agent, error)
	Agent(ctx context.Context, ref string) (*api.Agent, error)
	CreateAgent(ctx context.Context, req api.CreateAgentRequest) (*api.Agent, error)
	Decide(ctx context.Context, ref string, req api.DecideRequest) (*api.Decision, error)
	Answer(ctx context.Context, ref string, req api.AnswerRequest) error
	Task(ctx context.Context, ref string, task string) (*api.Agent, error)
	Pause(ctx context.Context, ref string) (*api.Agent, error)
	Resume(ctx context.Context, ref string) (*api.Agent, error)
	Stop(ctx context.Context, ref string) (*api.Agent, error)
	Proposals(ctx context.Context, ref string) ([]api.Proposal, error)
	// Diff and Rewind are the workspace checkpoints: what a result's step changed, and a
	// rewind asked for in chat.
	Diff(ctx context.Context, ref string, req api.DiffRequest) (*api.StepChange, error)
	Rewind(ctx context.Context, ref string, req api.RewindRequest) (*api.Rewind, error)
	Subscribe(ref string, since int64) (events <-chan api.Event, cancel func(), err error)
}

// Bindings stores which thread each run is bound to, and the messages posted for
// proposals and questions. Lookups return nil, nil when there is nothing.
type Bindings interface {
	Bind(ctx context.Context, b Binding) error
	BindingByThread(ctx context.Context, platform, channel, thread string) (*Binding, error)
	Bindings(ctx context.Context) ([]*Binding, error)
	// ThreadsOf is the threads an agent's events go to: its latest binding on each
	// platform, or a helper's nearest bound parent's; none when neither is bound.
	ThreadsOf(ctx context.Context, agentID string) ([]*Binding, error)
	SetMessage(ctx context.Context, m ChatMessage) error
	Message(ctx context.Context, proposalID, platform, kind string) (*ChatMessage, error)
	// MessageAt finds the proposal or question whose message has id message in channel
	// (the message a reply names); nil, nil for any other message.
	MessageAt(ctx context.Context, platform, channel, message string) (*ChatMessage, error)
	// CloseMessage closes a proposal's message on platform to decisions and reports
	// whether this call did: the first of a decision and a run's end edits it, once, also
	// across restarts. Posting the proposal again (SetMessage) opens it again.
	CloseMessage(ctx context.Context, proposalID, platform string) (bool, error)
	// OpenMessages is the messages of an agent's proposals not closed yet, each with the
	// proposal it shows.
	OpenMessages(ctx context.Context, agentID string) ([]*ChatMessage, error)
	// FirstDelivery records key, a message or click the relay handles, in scope on
	// platform and reports whether it is new there: a redelivery of it reports false,
	// also after a restart. Each scope keeps its last DeliveriesKept keys.
	FirstDelivery(ctx context.Context, platform, scope, key string) (bool, error)
	// Answer records the first answer to the question whose message has id message in
	// channel and reports whether this is it: a later answer reports false for as long
	// as the question is kept, also after a restart.
	Answer(ctx context.Context, platform, channel, message string) (bool, error)
	// The threads of team runs started from chat, one per team run and platform.
	BindTeam(ctx context.Context, b TeamBinding) error
	TeamBindingByThread(ctx context.Context, platform, channel, thread string) (*TeamBinding, error)
	TeamBindings(ctx context.Context) ([]*TeamBinding, error)
	// TeamBindingsOf is a team run's threads, running or ended.
	TeamBindingsOf(ctx context.Context, teamID string) ([]*TeamBinding, error)
	SetTeamSeq(ctx context.Context, teamID, platform string, seq int) error
}
