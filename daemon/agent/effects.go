package agent

import (
	"encoding/json"
	"errors"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/agent/cycle"
	"github.com/agentd/agentd/daemon/agent/policy"
	"github.com/agentd/agentd/daemon/store"
)

// What the applier's effects write beyond the agent and its proposal: a count grant's
// end, an episode, an effect preview's record. They need nothing above the store and the
// policy, so the applier (transit.go and this file) sits below every part that applies
// an event.

// errMissing is apply's answer to an effect whose input the change lacks: the caller
// computed an effect it would have dropped.
var errMissing = errors.New("the change lacks what an effect needs")

// exhausted is what record_budget records: the budget that ran out as the API shows it,
// and why.
type exhausted struct {
	api.BudgetExhausted
	why string
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
// what this step runs (the runner then applies it); drop_preview stores the preview run
// again (rerun) when it captured a change, else why there is none to apply, with no diff
// left of the stale one, so the next approval runs the command itself, as the person
// is shown. Only a run again replaces a preview with nothing to apply (one dropped
// before it came in).
func previewEffect(tx *store.Tx, p *api.Proposal, e cycle.Effect, rerun *api.Preview) error {
	if p == nil || p.Preview == nil || !p.Preview.Effect.Appliable() && (rerun == nil || e.Kind == cycle.ApplyPreview) {
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
	pv := *p.Preview
	if rerun != nil {
		pv = *rerun // the programs as the line runs now
	}
	pv.Effect, pv.Diff, pv.DiffCut = &api.Effect{None: e.Reason}, "", false
	p.Preview = &pv
	return tx.SetProposalPreview(p.ID, p.Preview)
}

// questionText is ask_user's question in p's args: what ask_person asks.
func questionText(p *api.Proposal) string {
	var args struct {
		Question string `json:"question"`
	}
	_ = json.Unmarshal(p.Args, &args) // validated when proposed
	if args.Question == "" {
		return "(the agent asked an empty question)"
	}
	return args.Question
}
