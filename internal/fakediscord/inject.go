package fakediscord

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/agentd/agentd/internal/randid"
)

// Post makes author (a person, or another bot when author.Bot is set) say content in a
// channel or thread: the message is stored with its mentions resolved and dispatched as
// MESSAGE_CREATE. It returns the stored message.
func (s *Server) Post(channelID string, author User, content string) (Message, error) {
	return s.PostMessage(Message{ChannelID: channelID, Author: author, Content: content})
}

// PostMessage stores and dispatches a message from someone other than the bot. ChannelID,
// Author and Content (or attachments) are required; the fake fills the rest.
func (s *Server) PostMessage(m Message) (Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.channels[m.ChannelID]
	if ch == nil {
		return Message{}, fmt.Errorf("fakediscord: unknown channel %s", m.ChannelID)
	}
	if m.Author.ID == "" {
		return Message{}, fmt.Errorf("fakediscord: message without an author ID")
	}
	if m.Author.Discriminator == "" {
		m.Author.Discriminator = "0"
	}
	if ch.ThreadMetadata != nil && ch.ThreadMetadata.Locked {
		return Message{}, fmt.Errorf("fakediscord: thread %s is locked", ch.ID)
	}
	if ch.ThreadMetadata != nil && ch.ThreadMetadata.Archived {
		s.setArchivedLocked(ch, false) // a person's message unarchives the thread
	}
	base := newMessage(ch, m.Author)
	base.Content, base.Attachments, base.MessageReference, base.Flags = m.Content, m.Attachments, m.MessageReference, m.Flags
	base.NoReplyPing = m.NoReplyPing
	if m.MessageReference != nil {
		base.Type = messageTypeReply // a reply, as Discord types a message with a reference
		fe := formErrors{}
		if s.checkReferenceLocked(base, fe); len(fe) > 0 {
			return Message{}, fmt.Errorf("fakediscord: a reply to message %s, which is not in channel %s", m.MessageReference.MessageID, m.MessageReference.ChannelID)
		}
	}
	if base.Attachments == nil {
		base.Attachments = []Attachment{}
	}
	if mem := s.members[ch.GuildID][m.Author.ID]; mem != nil && ch.GuildID != "" {
		partial := *mem
		partial.User = nil // MESSAGE_CREATE carries a partial member without the user
		base.Member = &partial
	}
	s.resolveMentions(base)
	s.storeMessageLocked(base)
	return *base, nil
}

// EditMessage is author's edit of their message id to content, as Discord's client makes
// it: the message gets edited_timestamp and MESSAGE_UPDATE is dispatched, with the
// message whole. Only a message's author edits it; a locked thread refuses.
func (s *Server) EditMessage(id string, author User, content string) (Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.messages[id]
	switch {
	case m == nil:
		return Message{}, fmt.Errorf("fakediscord: no message %s", id)
	case m.Author.ID != author.ID:
		return Message{}, fmt.Errorf("fakediscord: %s did not write message %s", author.ID, id)
	}
	if ch := s.channels[m.ChannelID]; ch != nil && ch.ThreadMetadata != nil && ch.ThreadMetadata.Locked {
		return Message{}, fmt.Errorf("fakediscord: thread %s is locked", ch.ID)
	}
	m.Content = content
	now := s.now().UTC()
	m.EditedTimestamp = &now
	s.resolveMentions(m)
	s.dispatchMessageLocked("MESSAGE_UPDATE", m)
	return *m, nil
}

// memberOf returns the member object an interaction carries for user in guildID.
func (s *Server) memberOf(guildID string, u User) *Member {
	m := Member{User: &u, Roles: []string{}, JoinedAt: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
	if known := s.members[guildID][u.ID]; known != nil {
		m = *known
		uu := *known.User
		m.User = &uu
		m.Roles = slices.Clone(known.Roles)
	}
	m.Permissions = "2248473465835073"
	return &m
}

// interactLocked fills in ID, token, application, member/user and channel, records the
// interaction and dispatches INTERACTION_CREATE.
func (s *Server) interactLocked(in Interaction, user User) (Interaction, error) {
	ch := s.channels[in.ChannelID]
	if ch == nil {
		return Interaction{}, fmt.Errorf("fakediscord: unknown channel %s", in.ChannelID)
	}
	if in.ID == "" {
		in.ID = s.newID()
	}
	if in.Token == "" {
		in.Token = "interaction-token-" + randid.Hex(16)
	}
	in.ApplicationID, in.Version, in.Locale = s.cfg.ApplicationID, 1, "en-US"
	in.GuildID = ch.GuildID
	cp := *ch
	in.Channel = &cp
	if ch.GuildID != "" {
		in.Member, in.User = s.memberOf(ch.GuildID, user), nil
		in.GuildLocale = "en-US"
	} else {
		u := user
		in.User, in.Member = &u, nil
	}
	st := &interactionState{in: in, created: s.now()}
	s.interactions[in.ID] = st
	s.byToken[in.Token] = st
	s.dispatchLocked("INTERACTION_CREATE", in, 0)
	return in, nil
}

// Interact dispatches an arbitrary interaction, unchecked: for tests of forged or stale
// custom IDs. ChannelID and Type are required; user is who acts.
func (s *Server) Interact(in Interaction, user User) (Interaction, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.interactLocked(in, user)
}

// Click presses the button with customID on a message, as user. Like Discord, it refuses
// buttons that are not on the message or are disabled.
func (s *Server) Click(channelID, messageID string, user User, customID string) (Interaction, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.messages[messageID]
	if m == nil || m.ChannelID != channelID {
		return Interaction{}, fmt.Errorf("fakediscord: no message %s in channel %s", messageID, channelID)
	}
	b, ok := findButton(m.Components, customID)
	if !ok {
		return Interaction{}, fmt.Errorf("fakediscord: message %s has no button with custom_id %q", messageID, customID)
	}
	if b.Disabled {
		return Interaction{}, fmt.Errorf("fakediscord: button %q on message %s is disabled", customID, messageID)
	}
	cp := *m
	return s.interactLocked(Interaction{
		Type: InteractionMessageComponent, ChannelID: channelID, Message: &cp,
		Data: ComponentData{CustomID: customID, ComponentType: 2},
	}, user)
}

func findButton(rows []json.RawMessage, customID string) (wireComponent, bool) {
	for _, raw := range rows {
		var row wireComponent
		json.Unmarshal(raw, &row)
		for _, craw := range row.Components {
			var c wireComponent
			json.Unmarshal(craw, &c)
			if c.Type == 2 && c.CustomID != nil && *c.CustomID == customID {
				return c, true
			}
		}
	}
	return wireComponent{}, false
}

// Command invokes a registered chat-input command as user in a channel. The command must
// have been registered globally or for the channel's guild (guild commands win).
func (s *Server) Command(channelID string, user User, name string, opts ...CommandOption) (Interaction, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.channels[channelID]
	if ch == nil {
		return Interaction{}, fmt.Errorf("fakediscord: unknown channel %s", channelID)
	}
	var cmd *ApplicationCommand
	scopes := []string{""}
	if ch.GuildID != "" {
		scopes = []string{ch.GuildID, ""}
	}
	for _, scope := range scopes {
		for i, c := range s.commands[scope] {
			if c.Name == name && cmd == nil {
				cmd = &s.commands[scope][i]
			}
		}
	}
	if cmd == nil {
		return Interaction{}, fmt.Errorf("fakediscord: no command /%s registered for channel %s", name, channelID)
	}
	return s.interactLocked(Interaction{
		Type: InteractionApplicationCommand, ChannelID: channelID,
		Data: CommandData{ID: cmd.ID, Name: cmd.Name, Type: 1, GuildID: cmd.GuildID, Options: opts},
	}, user)
}

// SubmitModal submits the modal the bot opened in answer to opened, as user, with values by
// text input custom_id. Inputs without a value are sent empty; a required one must have a
// value, and unknown keys are refused.
func (s *Server) SubmitModal(opened Interaction, user User, values map[string]string) (Interaction, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.interactions[opened.ID]
	if st == nil || st.modal == nil {
		return Interaction{}, fmt.Errorf("fakediscord: interaction %s did not open a modal", opened.ID)
	}
	md := st.modal
	data := ModalData{CustomID: md.CustomID, Components: []modalActionRow{}}
	known := map[string]bool{}
	for _, in := range md.Inputs {
		known[in.CustomID] = true
		v := values[in.CustomID]
		if in.Required && v == "" {
			return Interaction{}, fmt.Errorf("fakediscord: modal %q: input %q is required", md.CustomID, in.CustomID)
		}
		if in.MaxLength > 0 && len([]rune(v)) > in.MaxLength || len([]rune(v)) < in.MinLength && v != "" {
			return Interaction{}, fmt.Errorf("fakediscord: modal %q: input %q length out of bounds", md.CustomID, in.CustomID)
		}
		data.Components = append(data.Components, modalActionRow{Type: 1, Components: []modalTextValue{{Type: 4, CustomID: in.CustomID, Value: v}}})
	}
	for k := range values {
		if !known[k] {
			return Interaction{}, fmt.Errorf("fakediscord: modal %q has no input %q", md.CustomID, k)
		}
	}
	in := Interaction{Type: InteractionModalSubmit, ChannelID: st.in.ChannelID, Data: data}
	if st.in.Message != nil {
		if m := s.messages[st.in.Message.ID]; m != nil {
			cp := *m
			in.Message = &cp
		}
	}
	return s.interactLocked(in, user)
}

// Response is how the bot answered an interaction so far.
type Response struct {
	Responded bool
	Type      int    // callback type
	Original  string // message ID that @original names, if any
}

// InteractionResponse reports how the bot answered an interaction.
func (s *Server) InteractionResponse(id string) Response {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.interactions[id]
	if st == nil {
		return Response{}
	}
	return Response{st.responded, st.response, st.original}
}

// Callback matches the interaction callback call for in.
func Callback(in Interaction) func(Call) bool {
	r := Route("POST", "/interactions/"+in.ID+"/"+in.Token+"/callback")
	return func(c Call) bool { return r(c) }
}
