package discord

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/daemon/client"
)

// Message is a rendered Discord message, convertible to what each discordgo call takes.
type Message struct {
	Content    string
	Components []discordgo.MessageComponent
	Files      []*discordgo.File
}

// noMentions is sent with every message: agent output and model text must never ping
// anyone, whatever they contain. Parse must be an empty list, not null.
func noMentions() *discordgo.MessageAllowedMentions {
	return &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}}
}

// noEmbeds (SUPPRESS_EMBEDS) goes on every message and edit: a link in a proposal must
// not be fetched by Discord to unfurl it before anyone approved (it could carry a secret
// out, like …/leak?d=<secret>).
const noEmbeds = discordgo.MessageFlagsSuppressEmbeds

// Send is the message for ChannelMessageSendComplex.
func (m Message) Send() *discordgo.MessageSend {
	return &discordgo.MessageSend{Content: m.Content, Components: m.components(), Files: m.Files, AllowedMentions: noMentions(), Flags: noEmbeds}
}

// Edit is the edit for ChannelMessageEditComplex; it replaces content, components and
// attachments: the message keeps exactly the files m has, so an edit never claims a
// file the message lacks nor keeps one its new text no longer mentions.
func (m Message) Edit(channelID, messageID string) *discordgo.MessageEdit {
	content, comps := m.Content, m.components()
	keep := []*discordgo.MessageAttachment{} // an empty keep-list drops the old files; m.Files are added
	return &discordgo.MessageEdit{ID: messageID, Channel: channelID, Content: &content, Components: &comps, Files: m.Files,
		Attachments: &keep, AllowedMentions: noMentions(), Flags: noEmbeds}
}

// Update is the response that rewrites the message a button was on (callback type 7).
func (m Message) Update() *discordgo.InteractionResponse {
	keep := []*discordgo.MessageAttachment{}
	return &discordgo.InteractionResponse{Type: discordgo.InteractionResponseUpdateMessage, Data: &discordgo.InteractionResponseData{
		Content: m.Content, Components: m.components(), Files: m.Files, Attachments: &keep, AllowedMentions: noMentions(), Flags: noEmbeds,
	}}
}

// components is never nil: an empty list removes buttons, null would keep them.
func (m Message) components() []discordgo.MessageComponent {
	if m.Components == nil {
		return []discordgo.MessageComponent{}
	}
	return m.Components
}

// RenderOptions shape a proposal message.
type RenderOptions struct {
	// ApproveN is N for the Approve ×N button; below 2 the button is left out.
	ApproveN int
}

// RenderProposal renders a proposal awaiting a decision: who proposes what, the command and
// its arguments in a code block, and the four buttons. Arguments too long for one message
// go to an attached JSON file and the message shows their start.
func RenderProposal(agent string, p *client.Proposal, opt RenderOptions) Message {
	return Message{
		Content:    proposalText(agent, p, "", maxArgsInline),
		Components: proposalButtons(p.ID, shownHash(p.Hash), opt),
		Files:      argsFile(p),
	}
}

// RenderDecided renders a proposal after its decision: the same text with a line saying
// what was decided and by whom, and no buttons.
func RenderDecided(agent string, p *client.Proposal, d *client.Decision) Message {
	return Message{Content: proposalText(agent, p, decisionLine(d), maxArgsInline)}
}

// maxArgsInline leaves room in 2,000 characters for the header, speak and decision lines.
const maxArgsInline = 1200

func proposalText(agent string, p *client.Proposal, footer string, argsMax int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**%s** · step %d · proposal `%s`\n", Escape(agent), p.Step, codeSpan(p.ID))
	if speak := strings.TrimSpace(p.Thoughts.Speak); speak != "" {
		for _, line := range strings.Split(Truncate(speak, 300), "\n") {
			b.WriteString("> " + Escape(line) + "\n")
		}
	}
	args := prettyArgs(p.Args)
	cut := Len(args) > argsMax
	if cut {
		args = Truncate(args, argsMax)
	}
	fmt.Fprintf(&b, "```\n%s %s\n```", codeBlock(p.Command), codeBlock(args))
	if cut {
		b.WriteString("\n(arguments cut here; all of them are in the attached file)")
	}
	if footer != "" {
		b.WriteString("\n" + footer)
	}
	return b.String()
}

func argsFile(p *client.Proposal) []*discordgo.File {
	if Len(prettyArgs(p.Args)) <= maxArgsInline {
		return nil
	}
	return []*discordgo.File{{Name: "proposal-" + p.ID + "-args.json", ContentType: "application/json", Reader: strings.NewReader(prettyArgs(p.Args))}}
}

// prettyArgs is the arguments as indented JSON with sorted keys; invalid JSON is shown as is.
func prettyArgs(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "{}"
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // "<" stays "<" for people; codeBlock keeps it inert
	enc.SetIndent("", "  ")
	enc.Encode(v) // maps encode with sorted keys
	return strings.TrimSuffix(b.String(), "\n")
}

// shownHash is the part of a proposal's hash its buttons carry ("" when it has none).
func shownHash(h string) string {
	if len(h) < bots.HashLen || !hashRE.MatchString(h[:bots.HashLen]) {
		return ""
	}
	return h[:bots.HashLen]
}

func proposalButtons(id, hash string, opt RenderOptions) []discordgo.MessageComponent {
	row := []discordgo.MessageComponent{
		discordgo.Button{Label: "Approve", Style: discordgo.SuccessButton, CustomID: CustomID{Action: ActionApprove, ProposalID: id, Hash: hash}.String()},
	}
	if opt.ApproveN >= 2 && opt.ApproveN <= MaxApproveN {
		row = append(row, discordgo.Button{Label: fmt.Sprintf("Approve ×%d", opt.ApproveN), Style: discordgo.PrimaryButton,
			CustomID: CustomID{Action: ActionApproveN, ProposalID: id, N: opt.ApproveN, Hash: hash}.String()})
	}
	row = append(row,
		discordgo.Button{Label: "Deny", Style: discordgo.DangerButton, CustomID: CustomID{Action: ActionDeny, ProposalID: id, Hash: hash}.String()},
		discordgo.Button{Label: "Feedback…", Style: discordgo.SecondaryButton, CustomID: CustomID{Action: ActionFeedback, ProposalID: id, Hash: hash}.String()},
	)
	return []discordgo.MessageComponent{discordgo.ActionsRow{Components: row}}
}

func decisionLine(d *client.Decision) string {
	by := "policy"
	if d.By != "" {
		by = Who(d.By)
	}
	switch d.Kind {
	case client.DecisionApprove:
		if d.Count > 1 {
			return fmt.Sprintf("✅ Approved ×%d by %s", d.Count, by)
		}
		return "✅ Approved by " + by
	case client.DecisionDeny:
		return "⛔ Denied by " + by
	case client.DecisionFeedback:
		return fmt.Sprintf("💬 Feedback from %s:\n> %s", by, Escape(Truncate(strings.ReplaceAll(d.Feedback, "\n", " "), 300)))
	}
	return "Decided by " + by
}

// Who shows a decider: a Discord user ID becomes a mention (shown as the name, and
// allowed_mentions keeps it from pinging); anything else is escaped text.
func Who(by string) string {
	if isSnowflake(by) {
		return "<@" + by + ">"
	}
	return Escape(by)
}

func isSnowflake(s string) bool {
	if len(s) < 15 || len(s) > 20 {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
