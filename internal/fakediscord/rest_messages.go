package fakediscord

import (
	"encoding/json"
	"net/http"
	"sort"
	"time"
	"unicode/utf8"
)

func sortMessages(ms []Message) {
	sort.Slice(ms, func(i, j int) bool {
		if len(ms[i].ID) != len(ms[j].ID) {
			return len(ms[i].ID) < len(ms[j].ID)
		}
		return ms[i].ID < ms[j].ID
	})
}

func newMessage(ch *Channel, author User) *Message {
	return &Message{
		ChannelID: ch.ID, GuildID: ch.GuildID, Author: author, Timestamp: time.Now().UTC(),
		Mentions: []User{}, MentionRoles: []string{}, Attachments: []Attachment{},
		Embeds: []json.RawMessage{}, Components: []json.RawMessage{},
	}
}

// storeMessageLocked gives m an ID, stores it and tells the gateway (unless ephemeral).
func (s *Server) storeMessageLocked(m *Message) {
	if m.ID == "" {
		m.ID = s.newID()
	}
	s.messages[m.ID] = m
	s.touchLocked(m.ChannelID)
	if ch := s.channels[m.ChannelID]; ch != nil {
		ch.LastMessageID = m.ID
		if ch.ThreadMetadata != nil {
			ch.MessageCount++
		}
	}
	if m.Flags&FlagEphemeral == 0 {
		s.dispatchMessageLocked("MESSAGE_CREATE", m)
	}
}

func (s *Server) getChannel(q *request) (int, any, *restError) {
	ch, rerr := s.channelLocked(q.params[0])
	if rerr != nil {
		return 0, nil, rerr
	}
	return 200, ch, nil
}

func (s *Server) createMessage(q *request, f fields) (int, any, *restError) {
	ch, rerr := s.channelLocked(q.params[0])
	if rerr != nil {
		return 0, nil, rerr
	}
	m := newMessage(ch, s.cfg.BotUser)
	fe := formErrors{}
	s.applyMessage(m, f, q.files, fe)
	s.checkReferenceLocked(m, fe)
	m.Flags &^= FlagEphemeral // only interaction responses are ephemeral
	if err := s.finishMessage(m, fe); err != nil {
		return 0, nil, err
	}
	if err := s.canPostLocked(ch.ID); err != nil {
		return 0, nil, err
	}
	s.storeMessageLocked(m)
	return http.StatusOK, m, nil
}

func (s *Server) getMessage(q *request) (int, any, *restError) {
	m, err := s.messageIn(q.params[0], q.params[1])
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, m, nil
}

// channelLocked is channel id, or Discord's Unknown Channel.
func (s *Server) channelLocked(id string) (*Channel, *restError) {
	if ch := s.channels[id]; ch != nil {
		return ch, nil
	}
	return nil, errNotFound(CodeUnknownChannel, "Channel")
}

func (s *Server) messageIn(channelID, messageID string) (*Message, *restError) {
	if _, rerr := s.channelLocked(channelID); rerr != nil {
		return nil, rerr
	}
	m := s.messages[messageID]
	if m == nil || m.ChannelID != channelID {
		return nil, errNotFound(CodeUnknownMessage, "Message")
	}
	return m, nil
}

func (s *Server) editMessage(q *request, f fields) (int, any, *restError) {
	m, rerr := s.messageIn(q.params[0], q.params[1])
	if rerr != nil {
		return 0, nil, rerr
	}
	if m.Author.ID != s.cfg.BotUser.ID {
		return 0, nil, &restError{http.StatusForbidden, apiError{Message: "Cannot edit a message authored by another user", Code: CodeCannotEditOthers}}
	}
	if err := s.canEditLocked(m.ChannelID); err != nil {
		return 0, nil, err
	}
	edited, rerr := s.editLocked(m, f, q.files)
	if rerr != nil {
		return 0, nil, rerr
	}
	return http.StatusOK, edited, nil
}

// editLocked applies an edit to a copy of m and commits it only if it is valid.
func (s *Server) editLocked(m *Message, f fields, files []Attachment) (*Message, *restError) {
	next := *m
	fe := formErrors{}
	s.applyMessage(&next, f, files, fe)
	if err := s.finishMessage(&next, fe); err != nil {
		return nil, err
	}
	now := s.now().UTC()
	next.EditedTimestamp = &now
	*m = next
	if m.Flags&FlagEphemeral == 0 {
		s.dispatchMessageLocked("MESSAGE_UPDATE", m)
	}
	return m, nil
}

var archiveDurations = map[int]bool{60: true, 1440: true, 4320: true, 10080: true}

type threadStart struct {
	Name                string `json:"name"`
	AutoArchiveDuration int    `json:"auto_archive_duration"`
	Type                int    `json:"type"`
	Invitable           bool   `json:"invitable"`
}

func decodeThreadStart(f fields) (threadStart, *restError) {
	var ts threadStart
	fe := formErrors{}
	f.get("name", &ts.Name, fe)
	f.get("auto_archive_duration", &ts.AutoArchiveDuration, fe)
	f.get("type", &ts.Type, fe)
	f.get("invitable", &ts.Invitable, fe)
	if n := utf8.RuneCountInString(ts.Name); n == 0 || n > 100 {
		fe.add("name", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.")
	}
	if ts.AutoArchiveDuration == 0 {
		ts.AutoArchiveDuration = 1440
	}
	if !archiveDurations[ts.AutoArchiveDuration] {
		fe.add("auto_archive_duration", "BASE_TYPE_CHOICES", "Value must be one of (60, 1440, 4320, 10080).")
	}
	return ts, fe.err()
}

func (s *Server) newThreadLocked(id string, parent *Channel, ts threadStart, typ int) *Channel {
	th := &Channel{
		ID: id, Type: typ, GuildID: parent.GuildID, Name: ts.Name, ParentID: parent.ID,
		OwnerID: s.cfg.BotUser.ID, MemberCount: 1,
		ThreadMetadata: &ThreadMetadata{AutoArchiveDuration: ts.AutoArchiveDuration, ArchiveTimestamp: s.now().UTC(), Invitable: ts.Invitable},
	}
	s.channels[th.ID] = th
	s.activeAt[th.ID] = s.now()
	s.dispatchLocked("THREAD_CREATE", struct {
		*Channel
		NewlyCreated bool `json:"newly_created"`
	}{th, true}, IntentGuilds)
	return th
}

func threadableParent(ch *Channel) *restError {
	if ch.Type != ChannelGuildText {
		return errBadRequest(50024, "Cannot execute action on this channel type")
	}
	return nil
}

func (s *Server) startThreadFromMessage(q *request, f fields) (int, any, *restError) {
	ts, rerr := decodeThreadStart(f)
	if rerr != nil {
		return 0, nil, rerr
	}
	m, rerr := s.messageIn(q.params[0], q.params[1])
	if rerr != nil {
		return 0, nil, rerr
	}
	parent := s.channels[m.ChannelID]
	if rerr := threadableParent(parent); rerr != nil {
		return 0, nil, rerr
	}
	if m.Thread != nil {
		return 0, nil, errBadRequest(CodeThreadAlreadyCreated, "A thread has already been created for this message")
	}
	// A thread started from a message has the message's ID, as on Discord.
	th := s.newThreadLocked(m.ID, parent, ts, ChannelPublicThread)
	cp := *th
	m.Thread = &cp
	return http.StatusCreated, th, nil
}

func (s *Server) startThread(q *request, f fields) (int, any, *restError) {
	ts, rerr := decodeThreadStart(f)
	if rerr != nil {
		return 0, nil, rerr
	}
	parent, rerr := s.channelLocked(q.params[0])
	if rerr != nil {
		return 0, nil, rerr
	}
	if rerr := threadableParent(parent); rerr != nil {
		return 0, nil, rerr
	}
	typ := ts.Type
	if typ == 0 {
		typ = ChannelPrivateThread // Discord's default for a thread without a message
	}
	if typ != ChannelPublicThread && typ != ChannelPrivateThread {
		return 0, nil, formErrors{"type": {"BASE_TYPE_CHOICES", "Value must be one of (11, 12)."}}.err()
	}
	th := s.newThreadLocked(s.newID(), parent, ts, typ)
	return http.StatusCreated, th, nil
}

func (s *Server) getMember(q *request) (int, any, *restError) {
	if s.guilds[q.params[0]] == nil {
		return 0, nil, errNotFound(CodeUnknownGuild, "Guild")
	}
	m := s.members[q.params[0]][q.params[1]]
	if m == nil {
		return 0, nil, errNotFound(CodeUnknownMember, "Member")
	}
	return http.StatusOK, m, nil
}

func (s *Server) getRoles(q *request) (int, any, *restError) {
	g := s.guilds[q.params[0]]
	if g == nil {
		return 0, nil, errNotFound(CodeUnknownGuild, "Guild")
	}
	return http.StatusOK, append([]Role{}, g.Roles...), nil
}
