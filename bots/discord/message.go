package discord

import (
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/daemon/client/display"
)

// FromMessage renders the relay's platform-neutral message as Discord markdown and
// buttons. Every piece of text is escaped, and mentions render but never ping (see
// noMentions). Content over Discord's 2,000 characters is cut, and the whole text goes
// along as an attached file.
func FromMessage(m bots.Message) Message {
	out := Message{Content: content(m.Parts)}
	if out.Content == "" {
		out.Content = Escape(m.Summary)
	}
	if Len(out.Content) > MaxContent {
		out = fitParts(m.Parts, out.Content)
	}
	if len(m.Buttons) > 0 {
		out.Components = buttons(m.Buttons)
	}
	return out
}

func content(parts []bots.Part) string {
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteString("\n")
		}
		switch {
		case p.Code != "":
			b.WriteString("```\n" + codeBlock(p.Code) + "\n```")
		case p.Quote:
			for j, line := range strings.Split(spans(p.Spans), "\n") {
				if j > 0 {
					b.WriteString("\n")
				}
				b.WriteString("> " + line)
			}
		default:
			b.WriteString(spans(p.Spans))
		}
	}
	return b.String()
}

// fitParts makes a message over Discord's limit fit by cutting its longest code block
// (so no fence is left open), and attaches the whole text.
func fitParts(parts []bots.Part, full string) Message {
	const note = "\n(the full text is attached as message.txt)"
	parts = append([]bots.Part(nil), parts...)
	for range 4 {
		text := content(parts) + note
		over := Len(text) - MaxContent
		if over <= 0 {
			return Message{Content: text, Files: []*discordgo.File{textFile("message.txt", full)}}
		}
		longest := -1
		for i, p := range parts {
			if p.Code != "" && (longest < 0 || Len(p.Code) > Len(parts[longest].Code)) {
				longest = i
			}
		}
		if longest < 0 {
			break
		}
		parts[longest].Code = Truncate(parts[longest].Code, max(Len(parts[longest].Code)-over-20, 0))
	}
	return Fit(full, "message.txt") // the prose itself is too long
}

func spans(ss []bots.Span) string {
	var b strings.Builder
	for _, s := range ss {
		switch {
		case s.User != "":
			b.WriteString(Who(s.User))
		case s.Bold && strings.TrimSpace(s.Text) != "":
			// Spaces stay outside the markers: "**Plan: **" would not render bold.
			t := strings.TrimSpace(s.Text)
			lead, trail := s.Text[:strings.Index(s.Text, t)], s.Text[strings.Index(s.Text, t)+len(t):]
			b.WriteString(lead + "**" + Escape(t) + "**" + trail)
		default:
			b.WriteString(Escape(s.Text))
		}
	}
	return b.String()
}

// buttons lays the proposal's buttons out in one row (Discord allows five).
func buttons(bs []bots.Button) []discordgo.MessageComponent {
	var row []discordgo.MessageComponent
	for _, btn := range bs {
		id := CustomID{Action: Action(btn.Action), ProposalID: btn.Ref.ProposalID}
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
		case bots.ActionFeedback:
		default:
			continue
		}
		if !proposalIDRE.MatchString(id.ProposalID) {
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
func feedbackModalFor(proposalID, prompt string) *discordgo.InteractionResponse {
	return &discordgo.InteractionResponse{Type: discordgo.InteractionResponseModal, Data: &discordgo.InteractionResponseData{
		CustomID: CustomID{Action: ActionFeedbackModal, ProposalID: proposalID}.String(),
		Title:    Truncate("Feedback on "+display.Escape(prompt, display.Line), 45), // plain text: no markdown to escape
		Components: []discordgo.MessageComponent{discordgo.ActionsRow{Components: []discordgo.MessageComponent{
			discordgo.TextInput{
				CustomID: feedbackInputID, Label: "What should the agent do instead?",
				Style: discordgo.TextInputParagraph, Required: true, MinLength: 1, MaxLength: maxFeedback,
				Placeholder: "The command is not run; this text goes to the model.",
			},
		}}},
	}}
}
