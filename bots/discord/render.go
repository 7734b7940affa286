package discord

import (
	"github.com/bwmarrin/discordgo"

	"github.com/agentd/agentd/bots"
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

// shownHash is the part of a proposal's hash its buttons carry ("" when it has none).
func shownHash(h string) string {
	if len(h) < bots.HashLen || !hashRE.MatchString(h[:bots.HashLen]) {
		return ""
	}
	return h[:bots.HashLen]
}

// Who shows a decider: a Discord user ID becomes a mention (shown as the name, and
// allowed_mentions keeps it from pinging); anything else is escaped text.
func Who(by string) string {
	if bots.MentionID(Platform, by) {
		return "<@" + by + ">"
	}
	return Escape(by)
}
