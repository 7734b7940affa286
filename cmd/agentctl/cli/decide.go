package cli

import (
	"context"
	"fmt"

	"github.com/agentd/agentd/api"
)

// The decision commands (approve, deny, feedback) share this: each fetches the agent,
// takes the proposal now waiting and decides on exactly that one, so a decision typed for
// one proposal never lands on the next.

// pendingProposal returns the agent and its proposal waiting for a decision.
func (a decisionVerbs) pendingProposal(ctx context.Context, ref string) (*api.Agent, *api.Proposal, error) {
	ag, err := api.AgentRoute.Do(ctx, a.api(), ref, api.None{})
	if err != nil {
		return nil, nil, agentErr(ref, err)
	}
	if p := ag.Pending; p != nil && p.Status.Decidable() {
		return ag, p, nil
	}
	if ag.Question != nil {
		return nil, nil, fmt.Errorf("agent %s has no proposal to decide; it asks: %q: answer with: agentctl answer %s TEXT",
			refOf(ag), oneParagraph(ag.Question.Text), refOf(ag))
	}
	return nil, nil, fmt.Errorf("agent %s has no proposal waiting for a decision (it is %s)", refOf(ag), stateString(ag))
}

// decide sends req for the agent's pending proposal and prints what was decided.
func (a decisionVerbs) decide(ctx context.Context, ref string, req api.DecideRequest) error {
	ag, p, err := a.pendingProposal(ctx, ref)
	if err != nil {
		return err
	}
	req.ProposalID, req.Hash = p.ID, p.Ref() // bound to the preview fetched: one run again since is refused
	req.Source = "agentctl"
	req.By = user()
	d, err := api.DecideRoute.Do(ctx, a.api(), ag.ID, req)
	return printResult(a.app, d, err, func() { // a 409 carries the daemon's reason: superseded, already decided, …
		call := formatCall(p.Command, p.Args)
		switch req.Kind {
		case api.DecisionApprove:
			more := ""
			if req.Count > 1 {
				more = " and the next " + nextProposals(req.Count-1)
			}
			fmt.Fprintf(a.stdout, "approved %s%s\n", call, more)
		case api.DecisionDeny:
			fmt.Fprintf(a.stdout, "denied %s\n", call)
			a.note("agent %s stops and waits; give it a new task with: agentctl task %s \"TASK\"", refOf(ag), refOf(ag))
		case api.DecisionFeedback:
			fmt.Fprintf(a.stdout, "sent feedback instead of running %s\n", call)
		}
	})
}
