package agent

import (
	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/agent/cycle"
	"github.com/agentd/agentd/daemon/agent/policy"
	"github.com/agentd/agentd/daemon/store"
)

// What the applier's effects write beyond the agent and its proposal: a budget's end, a
// count grant's end, an episode, an effect preview's record. They need nothing above the store and the policy, so
// the applier (transit.go, publish.go and this file) sits below every part that applies
// an event.

// exhausted is what record_budget records: the budget that ran out as the API shows it,
// and why.
type exhausted struct {
	api.BudgetExhausted
	why string
}

// recordBudget carries out record_budget: the budget that ran out is audited; a run's
// also ends the run's auto-approval and withdraws its open question.
func (c *change) recordBudget(tx *store.Tx) error {
	ex := c.exhausted
	if ex == nil || c.a == nil {
		return errMissing
	}
	if ex.Scope == api.BudgetScopeAgent {
		return tx.Audit(c.a.ID, "agent_budget_exhausted", map[string]string{"run": ex.RunID, "budget": ex.Kind, "reason": ex.why})
	}
	if err := tx.ClearQuestions(c.a.ID); err != nil {
		return err
	}
	c.a.Policy.AutoSteps = 0
	if c.a.Policy.Mode == "auto" {
		c.a.Policy.Mode = "ask"
	}
	return tx.Audit(c.a.ID, string(api.RunBudgetExhausted), map[string]string{"run": ex.RunID, "reason": ex.why})
}

// endGrant cancels what is left of a's count grants (the cycle's EndGrant) in tx, and
// its mode that mirrors them; the caller writes a. Exact and pattern grants stay: they
// approve one call or one pattern a person chose, not a number of steps.
func endGrant(tx *store.Tx, a *store.Agent) error {
	if err := policy.EndCountGrants(tx, a, "the watchdog"); err != nil {
		return err
	}
	_, err := policy.SyncPolicy(tx, a)
	return err
}

// episodeOf is the episode that remembers what happened to p.
func episodeOf(p *api.Proposal, outcome, result, feedback string) *api.Episode {
	return &api.Episode{
		RunID: p.RunID, Step: p.Step, ProposalID: p.ID, Command: p.Command, Args: p.Args,
		Reasoning: p.Thoughts.Reasoning, Outcome: outcome, Result: result, Feedback: feedback,
	}
}

// previewEffect carries out the effects on a proposal's effect preview: apply_preview
// records, before anything is applied, that the captured change and not the command is
// what this step runs (the runner then applies it); drop_preview stores why the change
// can no longer be applied, so the next approval runs the command itself.
func previewEffect(tx *store.Tx, p *api.Proposal, e cycle.Effect, rerun *api.Preview) error {
	if p == nil || p.Preview == nil || !p.Preview.Effect.Appliable() {
		return errMissing
	}
	eff := p.Preview.Effect
	if e.Kind == cycle.ApplyPreview {
		return tx.Audit(p.AgentID, "apply_preview", map[string]any{"proposal": p.ID, "command": p.Command,
			"from_checkpoint": eff.From, "to_checkpoint": eff.To, "change": eff.Summary})
	}
	if rerun != nil && rerun.Effect.Appliable() { // the person is asked again with what it would do now
		p.Preview = rerun
		return tx.SetProposalPreview(p.ID, p.Preview)
	}
	pv, dropped := *p.Preview, *eff
	dropped.None, dropped.From, dropped.To = e.Reason, 0, 0
	pv.Effect, p.Preview = &dropped, &pv
	return tx.SetProposalPreview(p.ID, p.Preview)
}
