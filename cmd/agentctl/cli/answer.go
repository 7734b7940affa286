package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentd/agentd/api"
)

var answerCmd = &command{
	name:  "answer",
	args:  "AGENT TEXT...",
	short: "answer the question an agent asks you",
	long: `Answer replies to the question the agent asked with its ask_user command (see it with
'agentctl show AGENT'). Everything after AGENT is the answer, so quotes are optional:
  agentctl answer bob the staging server, not production`,
	run: verb(decisionVerbs.runAnswer),
}

// agentAndText splits AGENT TEXT... (everything after AGENT is the text, so quotes are
// optional): what names the text, missing asks for it (%s is the agent).
func agentAndText(pos []string, what, missing string) (ref, text string, err error) {
	if len(pos) == 0 {
		return "", "", usagef("missing AGENT and %s", what)
	}
	ref, text = pos[0], strings.TrimSpace(strings.Join(pos[1:], " "))
	if text == "" {
		return "", "", usagef(missing, ref)
	}
	return ref, text, nil
}

func (a decisionVerbs) runAnswer(ctx context.Context, args []string) error {
	pos, err := a.parse(a.newFlagSet(), args, 1)
	if err != nil {
		return err
	}
	ref, text, err := agentAndText(pos, "TEXT", "missing TEXT: the answer to agent %s's question")
	if err != nil {
		return err
	}
	ag, err := api.AgentRoute.Do(ctx, a.api(), ref, api.None{})
	if err != nil {
		return agentErr(ref, err)
	}
	q := ag.Question
	if q == nil {
		return fmt.Errorf("agent %s asks no question right now (it is %s)", refOf(ag), stateString(ag))
	}
	req := api.AnswerRequest{ProposalID: q.ProposalID, Text: text, By: user()}
	if err := api.AnswerRoute.Send(ctx, a.api(), ag.ID, req); err != nil {
		return err
	}
	if !a.json {
		fmt.Fprintf(a.stdout, "answered %q\n", oneParagraph(q.Text))
	}
	return nil
}
