package cli

import (
	"context"

	"github.com/agentd/agentd/api"
)

var feedbackCmd = &command{
	name:  "feedback",
	args:  "AGENT TEXT...",
	short: "don't run the proposal; tell the agent what to do instead",
	long: `Feedback declines the command the agent is waiting on without stopping it: the command
does not run, and TEXT goes to the agent as your feedback for its next step.

Everything after AGENT is the text, so quotes are optional:
  agentctl feedback bob search the docs first, not the web`,
	run: verb(decisionVerbs.runFeedback),
}

func (a decisionVerbs) runFeedback(ctx context.Context, args []string) error {
	pos, err := a.parse(a.newFlagSet(), args, 1)
	if err != nil {
		return err
	}
	ref, text, err := agentAndText(pos, "TEXT", "missing TEXT: what should agent %s do instead?")
	if err != nil {
		return err
	}
	if api.IsHelp(text) {
		return usagef("%q asks for help, so it was not sent as feedback: write what agent %s should do instead, in words", text, ref)
	}
	return a.decide(ctx, ref, api.DecideRequest{Kind: api.DecisionFeedback, Feedback: text})
}
