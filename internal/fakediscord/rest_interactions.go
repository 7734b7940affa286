package fakediscord

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"
)

// interactionState is what the fake remembers about an interaction it dispatched.
type interactionState struct {
	in        Interaction
	created   time.Time
	responded bool
	response  int    // the callback type used
	original  string // the message @original names, once there is one
	modal     *modal // the modal opened by a type 9 response
}

// Interaction callback types.
const (
	CallbackPong                     = 1
	CallbackChannelMessage           = 4
	CallbackDeferredChannelMessage   = 5
	CallbackDeferredUpdateMessage    = 6
	CallbackUpdateMessage            = 7
	CallbackAutocompleteResult       = 8
	CallbackModal                    = 9
	messageFlagLoading               = 1 << 7
	messageTypeDefault               = 0
	messageTypeReply                 = 19
	messageTypeChatInputCommand      = 20
	interactionFollowupValidityLimit = 15 * time.Minute
)

func errUnknownInteraction() *restError {
	return errNotFound(CodeUnknownInteraction, "interaction")
}

func (s *Server) interactionCallback(q *request) (int, any, *restError) {
	var body struct {
		Type int             `json:"type"`
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(q.body, &body); err != nil {
		return 0, nil, errBadRequest(CodeInvalidFormBody, "Invalid Form Body")
	}
	data, rerr := decodeFields(body.Data)
	if rerr != nil {
		return 0, nil, rerr
	}
	st := s.interactions[q.params[0]]
	if st == nil || st.in.Token != q.params[1] {
		return 0, nil, errUnknownInteraction()
	}
	if d := s.cfg.InteractionDeadline; d > 0 && s.now().Sub(st.created) > d && !st.responded {
		return 0, nil, errUnknownInteraction()
	}
	if st.responded {
		return 0, nil, errBadRequest(CodeAlreadyAcknowledged, "Interaction has already been acknowledged.")
	}
	onMessage := st.in.Message != nil
	switch body.Type {
	case CallbackChannelMessage, CallbackDeferredChannelMessage:
		if rerr := s.canSendLocked(st.in.ChannelID); rerr != nil {
			return 0, nil, rerr
		}
	case CallbackUpdateMessage:
		if rerr := s.canEditLocked(st.in.ChannelID); rerr != nil {
			return 0, nil, rerr
		}
	}
	switch body.Type {
	case CallbackChannelMessage:
		m, rerr := s.interactionMessageLocked(st, data, q.files)
		if rerr != nil {
			return 0, nil, rerr
		}
		st.original = m.ID
	case CallbackDeferredChannelMessage:
		fe := formErrors{}
		var flags int
		data.get("flags", &flags, fe)
		if err := fe.err(); err != nil {
			return 0, nil, err
		}
		m := s.webhookMessage(st)
		// The flags chosen now (ephemeral, no embeds) are the response's when it is edited in.
		m.Flags = flags&(FlagEphemeral|FlagSuppressEmbeds) | messageFlagLoading
		s.storeMessageLocked(m)
		st.original = m.ID
	case CallbackDeferredUpdateMessage, CallbackUpdateMessage:
		if !onMessage {
			return 0, nil, invalidCallback(body.Type, "only a message component (or a modal opened from one) can update its message")
		}
		m := s.messages[st.in.Message.ID]
		if m == nil {
			return 0, nil, errNotFound(CodeUnknownMessage, "Message")
		}
		if body.Type == CallbackUpdateMessage {
			if _, rerr := s.editLocked(m, data, q.files); rerr != nil {
				return 0, nil, rerr
			}
		}
		st.original = m.ID
	case CallbackModal:
		if st.in.Type == InteractionModalSubmit {
			return 0, nil, invalidCallback(body.Type, "a modal cannot answer a modal submit")
		}
		fe := formErrors{}
		md := validateModal(data, fe)
		if err := fe.err(); err != nil {
			return 0, nil, err
		}
		st.modal = &md
	default:
		return 0, nil, invalidCallback(body.Type, "unsupported callback type for this interaction")
	}
	st.responded, st.response = true, body.Type
	return http.StatusNoContent, nil, nil
}

func invalidCallback(typ int, why string) *restError {
	return formErrors{"type": {"INTERACTION_CALLBACK_TYPE_INVALID", fmt.Sprintf("Callback type %d is not valid here: %s.", typ, why)}}.err()
}

// webhookMessage is a new message sent in answer to an interaction.
func (s *Server) webhookMessage(st *interactionState) *Message {
	ch := s.channels[st.in.ChannelID]
	m := newMessage(ch, s.cfg.BotUser)
	m.WebhookID, m.ApplicationID = s.cfg.ApplicationID, s.cfg.ApplicationID
	m.Type = messageTypeDefault
	if st.in.Type == InteractionApplicationCommand {
		m.Type = messageTypeChatInputCommand
	}
	return m
}

func (s *Server) interactionMessageLocked(st *interactionState, data fields, files []Attachment) (*Message, *restError) {
	m := s.webhookMessage(st)
	fe := formErrors{}
	s.applyMessage(m, data, files, fe)
	if err := s.finishMessage(m, fe); err != nil {
		return nil, err
	}
	m.Flags &= FlagEphemeral | 1<<2 // only EPHEMERAL and SUPPRESS_EMBEDS may be set
	s.storeMessageLocked(m)
	return m, nil
}

// webhookInteraction resolves /webhooks/{application.id}/{interaction.token}.
func (s *Server) webhookInteraction(appID, token string) (*interactionState, *restError) {
	if appID != s.cfg.ApplicationID {
		return nil, errNotFound(CodeUnknownWebhook, "Webhook")
	}
	st := s.byToken[token]
	if st == nil || s.now().Sub(st.created) > interactionFollowupValidityLimit {
		return nil, &restError{http.StatusUnauthorized, apiError{Message: "Invalid Webhook Token", Code: CodeInvalidWebhookToken}}
	}
	if !st.responded {
		return nil, errNotFound(CodeUnknownWebhook, "Webhook")
	}
	return st, nil
}

func (s *Server) followup(q *request, data fields) (int, any, *restError) {
	st, rerr := s.webhookInteraction(q.params[0], q.params[1])
	if rerr != nil {
		return 0, nil, rerr
	}
	if rerr := s.canSendLocked(st.in.ChannelID); rerr != nil {
		return 0, nil, rerr
	}
	m, rerr := s.interactionMessageLocked(st, data, q.files)
	if rerr != nil {
		return 0, nil, rerr
	}
	if q.r.URL.Query().Get("wait") != "true" {
		return http.StatusNoContent, nil, nil
	}
	return http.StatusOK, m, nil
}

// webhookTarget finds the message a webhook message route names ("@original" or an ID the
// interaction sent).
func (s *Server) webhookTarget(q *request) (*Message, *interactionState, *restError) {
	st, rerr := s.webhookInteraction(q.params[0], q.params[1])
	if rerr != nil {
		return nil, nil, rerr
	}
	id := q.params[2]
	if id == "@original" {
		id = st.original
	}
	m := s.messages[id]
	if m == nil || (m.ID != st.original && m.WebhookID != s.cfg.ApplicationID) {
		return nil, nil, errNotFound(CodeUnknownMessage, "Message")
	}
	return m, st, nil
}

func (s *Server) getWebhookMessage(q *request) (int, any, *restError) {
	m, _, rerr := s.webhookTarget(q)
	if rerr != nil {
		return 0, nil, rerr
	}
	return http.StatusOK, m, nil
}

func (s *Server) editWebhookMessage(q *request, data fields) (int, any, *restError) {
	m, _, rerr := s.webhookTarget(q)
	if rerr != nil {
		return 0, nil, rerr
	}
	if rerr := s.canEditLocked(m.ChannelID); rerr != nil {
		return 0, nil, rerr
	}
	loading := m.Flags & messageFlagLoading
	m.Flags &^= messageFlagLoading // editing a deferred response replaces the "thinking…" state
	edited, rerr := s.editLocked(m, data, q.files)
	if rerr != nil {
		m.Flags |= loading
		return 0, nil, rerr
	}
	return http.StatusOK, edited, nil
}

func (s *Server) deleteWebhookMessage(q *request) (int, any, *restError) {
	m, _, rerr := s.webhookTarget(q)
	if rerr != nil {
		return 0, nil, rerr
	}
	delete(s.messages, m.ID)
	if m.Flags&FlagEphemeral == 0 {
		s.dispatchLocked("MESSAGE_DELETE", map[string]string{"id": m.ID, "channel_id": m.ChannelID, "guild_id": m.GuildID}, intentFor(s.channels[m.ChannelID]))
	}
	return http.StatusNoContent, nil, nil
}

// Application commands.

var commandNameRE = regexp.MustCompile(`^[-_\p{L}\p{N}]{1,32}$`)

type wireOption struct {
	Type        int               `json:"type"`
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Required    bool              `json:"required"`
	Options     []wireOption      `json:"options"`
	Choices     []json.RawMessage `json:"choices"`
}

func (s *Server) commandScope(q *request) (string, *restError) {
	if q.params[0] != s.cfg.ApplicationID {
		return "", &restError{http.StatusForbidden, apiError{Message: "Missing Access", Code: CodeMissingAccess}}
	}
	guildID := "" // PUT/GET applications/{app}/commands is global; a second param is the guild
	if len(q.params) == 2 {
		guildID = q.params[1]
	}
	if guildID != "" && s.guilds[guildID] == nil {
		return "", &restError{http.StatusForbidden, apiError{Message: "Missing Access", Code: CodeMissingAccess}}
	}
	return guildID, nil
}

func (s *Server) getCommands(q *request) (int, any, *restError) {
	guildID, rerr := s.commandScope(q)
	if rerr != nil {
		return 0, nil, rerr
	}
	return http.StatusOK, append([]ApplicationCommand{}, s.commands[guildID]...), nil
}

func (s *Server) putCommands(q *request) (int, any, *restError) {
	var raws []json.RawMessage
	if err := json.Unmarshal(q.body, &raws); err != nil {
		return 0, nil, errBadRequest(CodeInvalidFormBody, "Invalid Form Body: expected an array of commands")
	}
	guildID, rerr := s.commandScope(q)
	if rerr != nil {
		return 0, nil, rerr
	}
	fe := formErrors{}
	if len(raws) > 100 {
		fe.add("_", "BASE_TYPE_MAX_LENGTH", "Must be 100 or fewer in length.")
	}
	old := map[string]string{}
	for _, c := range s.commands[guildID] {
		old[c.Name] = c.ID
	}
	names := map[string]bool{}
	var out []ApplicationCommand
	for i, raw := range raws {
		var c struct {
			Type                     int               `json:"type"`
			Name                     string            `json:"name"`
			Description              string            `json:"description"`
			Options                  []json.RawMessage `json:"options"`
			DefaultMemberPermissions *string           `json:"default_member_permissions"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			fe.add(fmt.Sprint(i), "BASE_TYPE_BAD_TYPE", "Invalid command.")
			continue
		}
		if c.Type == 0 {
			c.Type = 1
		}
		path := fmt.Sprint(i)
		if c.Type == 1 {
			checkChatName(c.Name, path+".name", fe)
			checkDescription(c.Description, path+".description", fe)
			var opts []wireOption
			for _, o := range c.Options {
				var wo wireOption
				json.Unmarshal(o, &wo)
				opts = append(opts, wo)
			}
			validateOptions(opts, path+".options", 0, fe)
		}
		if names[c.Name] {
			fe.add(path+".name", "APPLICATION_COMMANDS_DUPLICATE_NAME", "Application command names must be unique")
		}
		names[c.Name] = true
		id := old[c.Name]
		if id == "" {
			id = s.newID()
		}
		out = append(out, ApplicationCommand{
			ID: id, Type: c.Type, ApplicationID: s.cfg.ApplicationID, GuildID: guildID, Name: c.Name,
			Description: c.Description, Options: compactAll(c.Options), DefaultMemberPermissions: c.DefaultMemberPermissions,
			Version: s.newID(),
		})
	}
	if err := fe.err(); err != nil {
		return 0, nil, err
	}
	if out == nil {
		out = []ApplicationCommand{}
	}
	s.commands[guildID] = out
	return http.StatusOK, out, nil
}

func checkChatName(name, path string, fe formErrors) {
	if !commandNameRE.MatchString(name) || strings.ToLower(name) != name {
		fe.add(path, "APPLICATION_COMMAND_INVALID_NAME", "Command name is invalid")
	}
}

func checkDescription(d, path string, fe formErrors) {
	if n := utf8.RuneCountInString(d); n < 1 || n > 100 {
		fe.add(path, "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.")
	}
}

func validateOptions(opts []wireOption, path string, depth int, fe formErrors) {
	if len(opts) > 25 {
		fe.add(path, "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length.")
	}
	var subs, plain int
	optional := false
	names := map[string]bool{}
	for i, o := range opts {
		p := fmt.Sprintf("%s.%d", path, i)
		checkChatName(o.Name, p+".name", fe)
		checkDescription(o.Description, p+".description", fe)
		if names[o.Name] {
			fe.add(p+".name", "APPLICATION_COMMAND_OPTIONS_NAME_ALREADY_EXISTS", "Option names must be unique")
		}
		names[o.Name] = true
		if len(o.Choices) > 25 {
			fe.add(p+".choices", "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length.")
		}
		switch {
		case o.Type == 1 || o.Type == 2:
			subs++
			if depth >= 2 || (o.Type == 2 && depth >= 1) {
				fe.add(p+".type", "APPLICATION_COMMAND_OPTIONS_TYPE_INVALID", "Sub-commands nest at most two levels.")
			}
			validateOptions(o.Options, p+".options", depth+1, fe)
		case o.Type >= 3 && o.Type <= 11:
			plain++
			if o.Required && optional {
				fe.add(p+".required", "APPLICATION_COMMAND_OPTIONS_REQUIRED_INVALID", "Required options must be placed before non-required options")
			}
			optional = optional || !o.Required
		default:
			fe.add(p+".type", "BASE_TYPE_CHOICES", "Value must be one of (1..11).")
		}
	}
	if subs > 0 && plain > 0 {
		fe.add(path, "APPLICATION_COMMAND_OPTIONS_TYPE_INVALID", "Sub-command and sub-command group option types are mutually exclusive to all other types")
	}
}
