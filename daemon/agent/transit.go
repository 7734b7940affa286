package agent

import (
	"fmt"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/agent/cycle"
	"github.com/agentd/agentd/daemon/store"
)

// transit applies ev to agent a and its proposal p in tx: cycle.Next says what they
// become, and this is the only code that writes an agent's state or a proposal's status.
// It persists the proposal (inserting one not stored yet), ends the run when the cycle
// says so, and sets a's state for the caller to write; the caller carries out the other
// effects. a nil means p's run is over (the agent is on another), p nil that the agent
// has no open proposal. moved is false when the store found p no longer in the status
// the caller read (decided or withdrawn meanwhile): then nothing else was written.
func transit(tx *store.Tx, a *store.Agent, p *api.Proposal, ev cycle.Event) (moved bool, effects []cycle.Effect, err error) {
	from := cycle.State{Agent: cycle.RunOver}
	if a != nil {
		from.Agent = a.State
	}
	if p != nil {
		from.Proposal = p.Status
	}
	_, effects, err = cycle.Next(from, ev)
	if err != nil {
		return false, nil, fmt.Errorf("agent %s: %w", agentID(a, p), err)
	}
	for _, e := range effects {
		switch e.Kind {
		case cycle.SetProposal:
			if from.Proposal == cycle.None {
				p.Status = e.Proposal
				if err := tx.InsertProposal(p); err != nil {
					return false, nil, err
				}
				continue
			}
			if ok, err := tx.SetProposalStatus(p.ID, e.Proposal, e.Result, from.Proposal); err != nil || !ok {
				return false, nil, err
			}
			p.Status = e.Proposal
		case cycle.SetAgent:
			a.State, a.StateReason = e.Agent, e.Reason
		case cycle.EndGrant:
			if err := endGrant(tx, a); err != nil {
				return false, nil, err
			}
		case cycle.EndRun:
			if err := tx.EndRun(a.RunID, e.Outcome, e.Detail); err != nil {
				return false, nil, err
			}
		}
	}
	return true, effects, nil
}

// settles reports whether ev would change a's state or reason (with no open proposal).
func settles(a *store.Agent, ev cycle.Event) bool {
	to, eff, err := cycle.Next(cycle.State{Agent: a.State}, ev)
	return err == nil && len(eff) > 0 && (to.Agent != a.State || a.StateReason != ev.Reason)
}

// has reports whether effects hold one of kind k.
func has(effects []cycle.Effect, k cycle.EffectKind) bool {
	for _, e := range effects {
		if e.Kind == k {
			return true
		}
	}
	return false
}

func agentID(a *store.Agent, p *api.Proposal) string {
	if a != nil {
		return a.ID
	}
	return p.AgentID
}

func active(st api.AgentState) bool { return cycle.Active(st) }
