package discord

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/internal/display"
)

// FromMessage renders the relay's platform-neutral message as Discord markdown and
// buttons. Every piece of text is escaped, and mentions render but never ping (see
// noMentions). Content over Discord's 2,000 characters is cut where it is longest (see
// fitParts), and the whole text goes along as an attached file.
func FromMessage(m bots.Message) Message { return render(m, "") }

// render is FromMessage under a line of markdown of the bot's own (head; "" for none),
// which is not escaped: a channel link, say.
func render(m bots.Message, head string) Message {
	parts := markdown.Parts(m.Parts)
	if len(parts) == 0 {
		parts = []string{Escape(m.Summary)}
	}
	if head != "" {
		parts = append([]string{head}, parts...)
	}
	out := Message{Content: strings.Join(parts, "\n")}
	if Len(out.Content) > MaxContent {
		out = fitParts(parts, m.PlainText())
	}
	if len(m.Buttons) > 0 {
		out.Components = buttons(m.Buttons)
	}
	return out
}

// markdown is how Discord writes a message's text (its markdown).
var markdown = bots.Markup{
	Escape:  Escape,
	Code:    func(s string) string { return "```\n" + codeBlock(s) + "\n```" },
	Bold:    "**",
	Mention: Who,
}

// fitParts makes a message over Discord's limit fit by cutting its longest parts with
// bots.Fit (the escaped text, on a safe boundary, fences closed), so the parts after them
// — the decision, the reply hint — stay whole; it says so and attaches the full text.
func fitParts(parts []string, full string) Message {
	const name = "message.txt"
	note := truncatedNote(name)
	parts = slices.Clone(parts)
	for range 8 {
		text := strings.Join(parts, "\n") + note
		over := Len(text) - MaxContent
		if over <= 0 {
			return Message{Content: text, Files: []*discordgo.File{textFile(name, full)}}
		}
		longest := 0
		for i := range parts {
			if Len(parts[i]) > Len(parts[longest]) {
				longest = i
			}
		}
		parts[longest], _ = bots.Fit(parts[longest], max(Len(parts[longest])-over, 0), Len)
	}
	return fitContent(strings.Join(parts, "\n")+"\n", full, name) // many parts, each short
}

// buttons lays the proposal's buttons out in one row (Discord allows five).
func buttons(bs []bots.Button) []discordgo.MessageComponent {
	var row []discordgo.MessageComponent
	for _, btn := range bs {
		id := CustomID{Action: Action(btn.Action), ProposalID: btn.Ref.ProposalID, Hash: shownHash(btn.Ref.Hash)}
		if btn.Action == bots.ActionRewind || btn.Action == bots.ActionRewindCancel {
			id.AgentID = btn.Ref.AgentID
		}
		style := discordgo.SecondaryButton
		switch btn.Action {
		case bots.ActionApprove:
			style = discordgo.SuccessButton
		case bots.ActionApproveN:
			if btn.Count < 2 || btn.Count > MaxApproveN {
				continue
			}
			id.N, style = btn.Count, discordgo.PrimaryButton
		case bots.ActionDeny:
			style = discordgo.DangerButton
		case bots.ActionFeedback, bots.ActionRewindCancel:
		case bots.ActionRewind:
			style = discordgo.DangerButton
		default:
			continue
		}
		if _, err := ParseCustomID(id.encode()); err != nil {
			continue // a custom_id that would not parse back is never sent
		}
		row = append(row, discordgo.Button{Label: Truncate(btn.Label, 80), Style: style, CustomID: id.String()})
		if len(row) == 5 {
			break
		}
	}
	if len(row) == 0 {
		return nil
	}
	return []discordgo.MessageComponent{discordgo.ActionsRow{Components: row}}
}

// feedbackModalFor is the feedback modal for a proposal known only by reference.
func feedbackModalFor(ref bots.Ref, prompt string) *discordgo.InteractionResponse {
	return &discordgo.InteractionResponse{Type: discordgo.InteractionResponseModal, Data: &discordgo.InteractionResponseData{
		CustomID: CustomID{Action: ActionFeedbackModal, ProposalID: ref.ProposalID, Hash: shownHash(ref.Hash)}.String(),
		Title:    Truncate("Feedback on "+display.Escape(prompt, display.Line), 45), // plain text: no markdown to escape
		Components: []discordgo.MessageComponent{discordgo.ActionsRow{Components: []discordgo.MessageComponent{
			discordgo.TextInput{
				CustomID: feedbackInputID, Label: "What should the agent do instead?",
				Style: discordgo.TextInputParagraph, Required: true, MinLength: 1, MaxLength: maxFeedback,
				Placeholder: fmt.Sprintf("Up to %d characters. The command is not run; this text goes to the model.", maxFeedback),
			},
		}}},
	}}
}
