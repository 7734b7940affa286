package chattest

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/testutil"
)

// AgentOf returns the agent bound to the chat thread.
func (d *Daemon) AgentOf(platform, channel, thread string) *api.Agent {
	d.T.Helper()
	var id string
	d.St.View(context.Background(), func(tx *store.Tx) error {
		b, err := tx.BindingByThread(platform, channel, thread)
		if err == nil {
			id = b.AgentID
		}
		return err
	})
	a, err := d.Sup.API().Views.Agent(context.Background(), id)
	if err != nil {
		d.T.Fatalf("agent of thread %s: %v", thread, err)
	}
	return a
}

// Decisions counts the decisions recorded on the proposal.
func (d *Daemon) Decisions(proposalID string) int {
	var n int
	d.St.View(context.Background(), func(tx *store.Tx) error {
		var err error
		n, err = tx.CountDecisions(proposalID)
		return err
	})
	return n
}

// DecisionsOf lists an agent's decisions, oldest first; a proposal with more than one
// fails the test.
func (d *Daemon) DecisionsOf(agentID string) []api.Decision {
	d.T.Helper()
	ps, err := d.Sup.API().Views.Proposals(context.Background(), agentID)
	if err != nil {
		d.T.Fatal(err)
	}
	var out []api.Decision
	d.St.View(context.Background(), func(tx *store.Tx) error {
		for _, p := range ps {
			if n, _ := tx.CountDecisions(p.ID); n > 1 {
				d.T.Errorf("proposal %s has %d decisions", p.ID, n)
			}
			if dec, err := tx.LastDecision(p.ID); err == nil {
				out = append(out, *dec)
			}
		}
		return nil
	})
	return out
}

// AuditRows returns the audit log's refused chat actions under agentID.
func (d *Daemon) AuditRows(agentID string) []bots.AuditEvent {
	d.T.Helper()
	var out []bots.AuditEvent
	err := d.St.View(context.Background(), func(tx *store.Tx) error {
		entries, err := tx.AuditEntries(store.AuditFilter{AgentID: agentID})
		for _, en := range entries {
			if en.Kind == bots.AuditKind {
				var ev bots.AuditEvent
				json.Unmarshal(en.Detail, &ev)
				out = append(out, ev)
			}
		}
		return err
	})
	if err != nil {
		d.T.Fatal(err)
	}
	return out
}

// NoDecisionHeld checks, for a while, that the agent bound to thread waits undecided
// on proposal id.
func (d *Daemon) NoDecisionHeld(platform, channel, thread, id string) {
	d.T.Helper()
	if !testutil.Hold(200*time.Millisecond, func() bool {
		a := d.AgentOf(platform, channel, thread)
		return a.Pending != nil && a.Pending.ID == id && d.Decisions(id) == 0
	}) {
		d.T.Fatalf("proposal %s was decided: agent %+v, %d decisions", id, d.AgentOf(platform, channel, thread), d.Decisions(id))
	}
}

// ModelSaw reports whether a model request carried text.
func (d *Daemon) ModelSaw(text string) bool {
	for _, r := range d.Model.Requests() {
		for _, m := range r.Messages {
			if strings.Contains(m.Content, text) {
				return true
			}
		}
	}
	return false
}
