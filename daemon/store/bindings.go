package store

import (
	"errors"
	"fmt"

	"github.com/agentd/agentd/api"
)

// Binding and ChatMessage are the chat relay's records (api.ChatBinding, api.ChatMessage).
type (
	Binding     = api.ChatBinding
	ChatMessage = api.ChatMessage
)

const bindingCols = `platform, team, channel, thread, agent_id, run_id, created_by, created_at, end_post, end_run`

func scanBinding(sc scanner) (*Binding, error) {
	var b Binding
	var at int64
	err := sc.Scan(&b.Platform, &b.Team, &b.Channel, &b.Thread, &b.AgentID, &b.RunID, &b.CreatedBy, &at, &b.EndPost, &b.EndRun)
	if err != nil {
		return nil, rowError("reading chat binding", err)
	}
	b.CreatedAt = fromMS(at)
	return &b, nil
}

// Bind stores (or replaces) the binding of a thread.
func (t *Tx) Bind(b *Binding) error {
	b.CreatedAt = t.now
	return t.write("chat binding", `INSERT OR REPLACE INTO chat_bindings (`+bindingCols+`) VALUES (?,?,?,?,?,?,?,?,?,?)`,
		b.Platform, b.Team, b.Channel, b.Thread, b.AgentID, b.RunID, b.CreatedBy, ms(t.now), b.EndPost, b.EndRun)
}

// BindingByThread returns the binding of a thread, or ErrNotFound.
func (t *Tx) BindingByThread(platform, channel, thread string) (*Binding, error) {
	return scanBinding(t.queryRow(`SELECT `+bindingCols+` FROM chat_bindings WHERE platform = ? AND channel = ? AND thread = ?`,
		platform, channel, thread))
}

// Bindings returns every agent's latest binding on each platform, oldest first.
func (t *Tx) Bindings() ([]*Binding, error) {
	return queryAll(t, nil, "chat bindings", scanBinding, `SELECT `+bindingCols+` FROM chat_bindings b
		WHERE created_at = (SELECT MAX(created_at) FROM chat_bindings c WHERE c.agent_id = b.agent_id AND c.platform = b.platform)
		ORDER BY created_at, agent_id`)
}

// MaxHelperHops bounds a walk up an agent's parent links.
const MaxHelperHops = 8

// ThreadsOf returns the threads agentID's events go to: its latest binding on each
// platform, or, for a helper that has none, those of its nearest parent that has one
// (within MaxHelperHops); none when neither is bound.
func (t *Tx) ThreadsOf(agentID string) ([]*Binding, error) {
	return queryAll(t, nil, "chat threads", scanBinding, `WITH RECURSIVE up(id, hops) AS (
			SELECT ?, 0
			UNION ALL
			SELECT a.parent_id, up.hops + 1 FROM up JOIN agents a ON a.id = up.id
			WHERE a.parent_id <> '' AND up.hops < ? AND NOT EXISTS (SELECT 1 FROM chat_bindings c WHERE c.agent_id = up.id)
		)
		SELECT `+bindingCols+` FROM chat_bindings b
		WHERE agent_id = (SELECT id FROM up WHERE EXISTS (SELECT 1 FROM chat_bindings c WHERE c.agent_id = up.id) ORDER BY hops LIMIT 1)
		AND created_at = (SELECT MAX(created_at) FROM chat_bindings c WHERE c.agent_id = b.agent_id AND c.platform = b.platform)
		ORDER BY created_at, platform`, agentID, MaxHelperHops)
}

// SetChatMessage records the message posted for a proposal or a question, open to
// decisions unless m.Closed; a proposal asked again is open again.
func (t *Tx) SetChatMessage(m *ChatMessage) error {
	m.PostedAt = t.now
	closed := int64(0)
	if m.Closed {
		closed = max(ms(t.now), 1)
	}
	return t.write("chat message", `INSERT OR REPLACE INTO chat_messages (proposal_id, platform, kind, channel, message, posted_at, shown_ref, closed_at) VALUES (?,?,?,?,?,?,?,?)`,
		m.ProposalID, m.Platform, m.Kind, m.Channel, m.Message, ms(t.now), m.Ref, closed)
}

const chatMessageCols = `proposal_id, platform, kind, channel, message, posted_at, shown_ref, closed_at`

func scanChatMessage(sc scanner) (*ChatMessage, error) {
	var m ChatMessage
	var at, closed int64
	if err := sc.Scan(&m.ProposalID, &m.Platform, &m.Kind, &m.Channel, &m.Message, &at, &m.Ref, &closed); err != nil {
		return nil, rowError("chat message", err)
	}
	m.PostedAt, m.Closed = fromMS(at), closed != 0
	return &m, nil
}

// ChatMessage returns the message posted for a proposal or question, or ErrNotFound.
func (t *Tx) ChatMessage(proposalID, platform, kind string) (*ChatMessage, error) {
	return scanChatMessage(t.queryRow(`SELECT `+chatMessageCols+` FROM chat_messages WHERE proposal_id = ? AND platform = ? AND kind = ?`,
		proposalID, platform, kind))
}

// ChatMessageAt returns the proposal's or question's message with the platform's id
// message in channel (what a chat reply names as the message it answers), or ErrNotFound.
func (t *Tx) ChatMessageAt(platform, channel, message string) (*ChatMessage, error) {
	return scanChatMessage(t.queryRow(`SELECT `+chatMessageCols+` FROM chat_messages WHERE platform = ? AND channel = ? AND message = ? ORDER BY posted_at DESC LIMIT 1`,
		platform, channel, message))
}

// CloseChatMessage closes a proposal's message on platform to decisions and reports
// whether this call did: a second close reports false, whoever closes first, until the
// proposal is posted (asked) again.
func (t *Tx) CloseChatMessage(proposalID, platform string) (bool, error) {
	return t.affected("close chat message", `UPDATE chat_messages SET closed_at = ? WHERE proposal_id = ? AND platform = ? AND kind = 'proposal' AND closed_at = 0`,
		max(ms(t.now), 1), proposalID, platform)
}

// OpenChatMessages returns the messages of agentID's proposals not closed yet, each
// with its proposal and, when that was decided (not superseded), its decision, oldest
// first.
func (t *Tx) OpenChatMessages(agentID string) ([]*ChatMessage, error) {
	out, err := queryAll(t, nil, "open chat messages", scanChatMessage, `SELECT `+chatMessageCols+` FROM chat_messages
		WHERE kind = 'proposal' AND closed_at = 0 AND proposal_id IN (SELECT id FROM proposals WHERE agent_id = ?)
		ORDER BY posted_at, platform`, agentID)
	for _, m := range out {
		if err == nil {
			m.Proposal, err = t.Proposal(m.ProposalID)
		}
		if err == nil && !m.Proposal.Status.Decidable() && m.Proposal.Status != api.ProposalSuperseded {
			if m.Decision, err = t.LastDecision(m.ProposalID); errors.Is(err, ErrNotFound) {
				err = nil
			}
		}
	}
	return out, err
}

// AnswerChatMessage records the first answer to the question posted as message in
// channel, on its row, and reports whether this is it: a second answer reports false,
// whoever answers first, for as long as the question's row is kept (a question posted
// again for the same step is a new row, unanswered). A message that is no question's
// reports false.
func (t *Tx) AnswerChatMessage(platform, channel, message string) (bool, error) {
	return t.affected("chat answer", `UPDATE chat_messages SET answered_at = ? WHERE platform = ? AND channel = ? AND message = ? AND answered_at = 0`,
		max(ms(t.now), 1), platform, channel, message)
}

// FirstDelivery records key, a chat message or click the relay handles, in platform's
// scope and reports whether it is new there: a second call with the same key reports
// false, whoever calls first. Each scope keeps its last keep keys; older ones are
// forgotten, so memory is bounded however much a platform delivers.
func (t *Tx) FirstDelivery(platform, scope, key string, keep int) (bool, error) {
	ok, err := t.affected("chat delivery", `INSERT OR IGNORE INTO chat_deliveries (platform, scope, key, at) VALUES (?,?,?,?)`,
		platform, scope, key, ms(t.now))
	if err != nil || !ok {
		return false, err
	}
	_, err = t.exec(`DELETE FROM chat_deliveries WHERE platform = ? AND scope = ? AND id <= (
		SELECT id FROM chat_deliveries WHERE platform = ? AND scope = ? ORDER BY id DESC LIMIT 1 OFFSET ?)`,
		platform, scope, platform, scope, keep)
	if err != nil {
		return false, fmt.Errorf("store: forgetting old chat deliveries: %w", err)
	}
	return true, nil
}
