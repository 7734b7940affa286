package discord

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"github.com/agentd/agentd/api"
)

// feedbackInputID is the custom_id of the modal's one text input.
const feedbackInputID = "feedback"

// maxFeedback is the feedback input's max_length, in characters: Discord counts
// characters (at most 4,000) and the daemon takes api.MaxTextBytes bytes, so a limit
// of MaxTextBytes/4 characters (a character is at most 4 bytes in UTF-8) can never let
// through more than the daemon accepts.
const maxFeedback = min(maxTextInput, api.MaxTextBytes/utf8.UTFMax)

// maxTextInput is Discord's limit on a text input's max_length.
const maxTextInput = 4000

// ParseFeedback reads a feedback modal's submit into the decision it stands for.
func ParseFeedback(d discordgo.ModalSubmitInteractionData, by string) (api.DecideRequest, error) {
	id, err := ParseCustomID(d.CustomID)
	if err != nil {
		return api.DecideRequest{}, err
	}
	if id.Action != ActionFeedbackModal {
		return api.DecideRequest{}, &CustomIDError{ID: d.CustomID, Reason: "not a feedback modal"}
	}
	var text string
	found := false
	for _, c := range d.Components {
		row, ok := c.(*discordgo.ActionsRow)
		if !ok {
			continue
		}
		for _, rc := range row.Components {
			if in, ok := rc.(*discordgo.TextInput); ok && in.CustomID == feedbackInputID {
				text, found = in.Value, true
			}
		}
	}
	if !found {
		return api.DecideRequest{}, fmt.Errorf("discord: feedback modal %s: no %q input in the submit", id.ProposalID, feedbackInputID)
	}
	if strings.TrimSpace(text) == "" {
		return api.DecideRequest{}, fmt.Errorf("discord: feedback modal %s: the feedback is empty", id.ProposalID)
	}
	if len(text) > api.MaxTextBytes {
		return api.DecideRequest{}, fmt.Errorf("discord: feedback modal %s: the feedback is %d bytes, over the %d the agent takes; shorten it and send it again", id.ProposalID, len(text), api.MaxTextBytes)
	}
	return api.DecideRequest{ProposalID: id.ProposalID, Hash: id.Hash, Kind: api.DecisionFeedback, Feedback: text, By: by, Source: "discord"}, nil
}
