package discord

import (
	"fmt"
	"slices"

	"github.com/bwmarrin/discordgo"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/bots"
)

// What only the tests use: the approver check, the decision and the modal the loopback
// fake bot (fake_test.go) builds from a click, and Fit/FitCode for the render tests.

// Approvers lists who may decide on proposals in a channel or for an agent: Discord user
// IDs and role IDs. An empty list lets nobody decide, so a missing config fails closed.
type Approvers struct {
	Users []string
	Roles []string
}

// Allows reports whether a may decide: listed by user ID, or holding a listed role.
func (a Approvers) Allows(who Actor) bool {
	if who.UserID == "" || who.Bot {
		return false
	}
	if slices.Contains(a.Users, who.UserID) {
		return true
	}
	for _, r := range who.Roles {
		if slices.Contains(a.Roles, r) {
			return true
		}
	}
	return false
}

// DecideRequest turns a button press into the decision agentctl would send. Feedback has no
// decision yet (the modal collects the text), so ok is false for it and for the modal ID.
func (c CustomID) DecideRequest(by string) (req api.DecideRequest, ok bool) {
	req = api.DecideRequest{ProposalID: c.ProposalID, Hash: c.Hash, By: by, Source: "discord"}
	switch c.Action {
	case ActionApprove:
		req.Kind, req.Count = api.DecisionApprove, 1
	case ActionApproveN:
		req.Kind, req.Count = api.DecisionApprove, c.N
	case ActionDeny:
		req.Kind = api.DecisionDeny
	default:
		return api.DecideRequest{}, false
	}
	return req, true
}

// Fit returns text as one message's content when it fits Discord's limit; otherwise the
// message holds its start and a note, and the full text is attached as a file called name.
func Fit(text, name string) Message { return fitContent(text, text, name) }

// FitCode renders header (markdown, already escaped) and body in a code block. A body too
// long for one message is cut in the message (the block stays closed) and attached in
// full as a file called name.
func FitCode(header, body, name string) Message {
	return fitContent(header+"\n```\n"+codeBlock(body)+"\n```", body, name)
}

// FeedbackModal is the response to a Feedback… click: a modal asking what the agent should
// do instead. Its submit comes back as a modal interaction that ParseFeedback reads.
func FeedbackModal(p *api.Proposal) *discordgo.InteractionResponse {
	return feedbackModalFor(bots.Ref{ProposalID: p.ID, Hash: p.Ref()}, fmt.Sprintf("step %d: %s", p.Step, p.Command))
}
