package bots

import (
	"context"
	"errors"

	"github.com/agentd/agentd/daemon/client"
	"github.com/agentd/agentd/daemon/store"
)

// Service is the part of the daemon's localapi.Service the relay uses; the agent Supervisor
// satisfies it in-process.
type Service interface {
	Agents(ctx context.Context) ([]client.Agent, error)
	Agent(ctx context.Context, ref string) (*client.Agent, error)
	CreateAgent(ctx context.Context, req client.CreateAgentRequest) (*client.Agent, error)
	Decide(ctx context.Context, ref string, req client.DecideRequest) (*client.Decision, error)
	Answer(ctx context.Context, ref string, req client.AnswerRequest) error
	Task(ctx context.Context, ref string, task string) (*client.Agent, error)
	Pause(ctx context.Context, ref string) (*client.Agent, error)
	Resume(ctx context.Context, ref string) (*client.Agent, error)
	Stop(ctx context.Context, ref string) (*client.Agent, error)
	Proposals(ctx context.Context, ref string) ([]client.Proposal, error)
	Subscribe(ref string, since int64) (events <-chan client.Event, cancel func(), err error)
}

// Bindings stores which thread each run is bound to, and the messages posted for
// proposals and questions. Lookups return nil, nil when there is nothing.
type Bindings interface {
	Bind(ctx context.Context, b store.Binding) error
	BindingByThread(ctx context.Context, platform, channel, thread string) (*store.Binding, error)
	Bindings(ctx context.Context) ([]*store.Binding, error)
	SetMessage(ctx context.Context, m store.ChatMessage) error
	Message(ctx context.Context, proposalID, platform, kind string) (*store.ChatMessage, error)
}

// StoreBindings keeps bindings in the daemon's store.
func StoreBindings(st *store.Store) Bindings { return storeBindings{st} }

type storeBindings struct{ st *store.Store }

func (s storeBindings) Bind(ctx context.Context, b store.Binding) error {
	return s.st.Tx(ctx, func(tx *store.Tx) error { return tx.Bind(&b) })
}

func (s storeBindings) BindingByThread(ctx context.Context, platform, channel, thread string) (*store.Binding, error) {
	var b *store.Binding
	err := s.st.View(ctx, func(tx *store.Tx) error {
		var err error
		b, err = tx.BindingByThread(platform, channel, thread)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return b, err
}

func (s storeBindings) Bindings(ctx context.Context) ([]*store.Binding, error) {
	var out []*store.Binding
	err := s.st.View(ctx, func(tx *store.Tx) error {
		var err error
		out, err = tx.Bindings()
		return err
	})
	return out, err
}

func (s storeBindings) SetMessage(ctx context.Context, m store.ChatMessage) error {
	return s.st.Tx(ctx, func(tx *store.Tx) error { return tx.SetChatMessage(&m) })
}

func (s storeBindings) Message(ctx context.Context, proposalID, platform, kind string) (*store.ChatMessage, error) {
	var m *store.ChatMessage
	err := s.st.View(ctx, func(tx *store.Tx) error {
		var err error
		m, err = tx.ChatMessage(proposalID, platform, kind)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return m, err
}

func (s storeBindings) BindTeam(ctx context.Context, b store.TeamBinding) error {
	return s.st.Tx(ctx, func(tx *store.Tx) error { return tx.BindTeam(&b) })
}

func (s storeBindings) TeamBindingByThread(ctx context.Context, platform, channel, thread string) (*store.TeamBinding, error) {
	var b *store.TeamBinding
	err := s.st.View(ctx, func(tx *store.Tx) error {
		var err error
		b, err = tx.TeamBindingByThread(platform, channel, thread)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return b, err
}

func (s storeBindings) TeamBindings(ctx context.Context) ([]*store.TeamBinding, error) {
	var out []*store.TeamBinding
	err := s.st.View(ctx, func(tx *store.Tx) error {
		var err error
		out, err = tx.TeamBindings()
		return err
	})
	return out, err
}

func (s storeBindings) SetTeamSeq(ctx context.Context, teamID, platform string, seq int) error {
	return s.st.Tx(ctx, func(tx *store.Tx) error { return tx.SetTeamSeq(teamID, platform, seq) })
}
