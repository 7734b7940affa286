// Package chatstore keeps the chat relay's records (thread bindings of runs and team
// runs, messages posted for proposals and questions) in the daemon's store. It is the
// one place the two meet: package bots declares what it needs (bots.Bindings) and never
// imports daemon/store; the server wires New(store) into the relay.
package chatstore

import (
	"context"
	"errors"

	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/daemon/store"
)

// Bindings keeps the relay's records in st; it has the team bindings too.
type Bindings struct{ st *store.Store }

var _ bots.Bindings = Bindings{}

// New returns the relay's records kept in st.
func New(st *store.Store) Bindings { return Bindings{st} }

// Bind stores b, replacing the thread's earlier binding.
func (s Bindings) Bind(ctx context.Context, b bots.Binding) error {
	return s.st.Tx(ctx, func(tx *store.Tx) error { return tx.Bind(&b) })
}

// BindingByThread returns the thread's binding, or nil, nil when there is none.
func (s Bindings) BindingByThread(ctx context.Context, platform, channel, thread string) (*bots.Binding, error) {
	b, err := store.Read(ctx, s.st, func(tx *store.Tx) (*store.Binding, error) { return tx.BindingByThread(platform, channel, thread) })
	return b, absent(err)
}

// Bindings returns every binding.
func (s Bindings) Bindings(ctx context.Context) ([]*bots.Binding, error) {
	return store.Read(ctx, s.st, func(tx *store.Tx) ([]*store.Binding, error) { return tx.Bindings() })
}

// ThreadsOf returns the threads agentID's events go to: its own, or its nearest bound
// parent's.
func (s Bindings) ThreadsOf(ctx context.Context, agentID string) ([]*bots.Binding, error) {
	return store.Read(ctx, s.st, func(tx *store.Tx) ([]*store.Binding, error) { return tx.ThreadsOf(agentID) })
}

// SetMessage stores m, replacing the earlier message of its proposal, platform and kind.
func (s Bindings) SetMessage(ctx context.Context, m bots.ChatMessage) error {
	return s.st.Tx(ctx, func(tx *store.Tx) error { return tx.SetChatMessage(&m) })
}

// Message returns the message posted for a proposal, or nil, nil when there is none.
func (s Bindings) Message(ctx context.Context, proposalID, platform, kind string) (*bots.ChatMessage, error) {
	m, err := store.Read(ctx, s.st, func(tx *store.Tx) (*store.ChatMessage, error) { return tx.ChatMessage(proposalID, platform, kind) })
	return m, absent(err)
}

// MessageAt returns the proposal's or question's message with id message in channel, or
// nil, nil when the message is none of those.
func (s Bindings) MessageAt(ctx context.Context, platform, channel, message string) (*bots.ChatMessage, error) {
	m, err := store.Read(ctx, s.st, func(tx *store.Tx) (*store.ChatMessage, error) { return tx.ChatMessageAt(platform, channel, message) })
	return m, absent(err)
}

// FirstDelivery records a message or click the relay handles and reports whether it is
// new in its platform's scope; each scope keeps its last bots.DeliveriesKept.
func (s Bindings) FirstDelivery(ctx context.Context, platform, scope, key string) (bool, error) {
	var first bool
	err := s.st.Tx(ctx, func(tx *store.Tx) (err error) {
		first, err = tx.FirstDelivery(platform, scope, key, bots.DeliveriesKept)
		return err
	})
	return first, err
}

// Answer records the first answer to the question posted as message in channel and
// reports whether this is it (kept on the question's row).
func (s Bindings) Answer(ctx context.Context, platform, channel, message string) (bool, error) {
	var first bool
	err := s.st.Tx(ctx, func(tx *store.Tx) (err error) {
		first, err = tx.AnswerChatMessage(platform, channel, message)
		return err
	})
	return first, err
}

// CloseMessage closes a proposal's message on platform to decisions and reports whether
// this call did (the first close wins).
func (s Bindings) CloseMessage(ctx context.Context, proposalID, platform string) (bool, error) {
	var first bool
	err := s.st.Tx(ctx, func(tx *store.Tx) (err error) {
		first, err = tx.CloseChatMessage(proposalID, platform)
		return err
	})
	return first, err
}

// OpenMessages returns the messages of an agent's proposals still open to decisions, each
// with its proposal.
func (s Bindings) OpenMessages(ctx context.Context, agentID string) ([]*bots.ChatMessage, error) {
	return store.Read(ctx, s.st, func(tx *store.Tx) ([]*store.ChatMessage, error) { return tx.OpenChatMessages(agentID) })
}

// absent is err, but nil for a row that is not there: the relay's nil, nil.
func absent(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}

// Audit appends a chat action the relay refused to the daemon's audit log, under the
// agent it named (else the thread's).
func (s Bindings) Audit(ctx context.Context, e bots.AuditEvent) error {
	agentID := e.AgentID
	if agentID == "" {
		agentID = e.ThreadAgent
	}
	return s.st.Tx(ctx, func(tx *store.Tx) error { return tx.Audit(agentID, bots.AuditKind, e) })
}

// BindTeam stores b, a team run's thread on one platform.
func (s Bindings) BindTeam(ctx context.Context, b bots.TeamBinding) error {
	return s.st.Tx(ctx, func(tx *store.Tx) error { return tx.BindTeam(&b) })
}

// TeamBindingByThread returns the thread's team binding, or nil, nil when there is none.
func (s Bindings) TeamBindingByThread(ctx context.Context, platform, channel, thread string) (*bots.TeamBinding, error) {
	b, err := store.Read(ctx, s.st, func(tx *store.Tx) (*store.TeamBinding, error) {
		return tx.TeamBindingByThread(platform, channel, thread)
	})
	return b, absent(err)
}

// TeamBindings returns every team binding.
func (s Bindings) TeamBindings(ctx context.Context) ([]*bots.TeamBinding, error) {
	return store.Read(ctx, s.st, func(tx *store.Tx) ([]*store.TeamBinding, error) { return tx.TeamBindings() })
}

// TeamBindingsOf returns a team run's threads, whether it runs or ended.
func (s Bindings) TeamBindingsOf(ctx context.Context, teamID string) ([]*bots.TeamBinding, error) {
	return store.Read(ctx, s.st, func(tx *store.Tx) ([]*store.TeamBinding, error) { return tx.TeamBindingsOf(teamID) })
}

// SetTeamSeq records the last transcript entry posted in a team run's thread.
func (s Bindings) SetTeamSeq(ctx context.Context, teamID, platform string, seq int) error {
	return s.st.Tx(ctx, func(tx *store.Tx) error { return tx.SetTeamSeq(teamID, platform, seq) })
}
