package fakediscord

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"unicode/utf8"
)

// fields is a JSON object body by key, so edits can tell "absent" and "null" from a value.
type fields map[string]json.RawMessage

func decodeFields(body json.RawMessage) (fields, *restError) {
	f := fields{}
	if len(body) == 0 {
		return f, nil
	}
	if err := json.Unmarshal(body, &f); err != nil {
		return nil, errBadRequest(CodeInvalidFormBody, "Invalid Form Body: the body must be a JSON object")
	}
	return f, nil
}

// get decodes key into v; it reports false when the key is absent or null.
func (f fields) get(key string, v any, fe formErrors) bool {
	raw, ok := f[key]
	if !ok || string(raw) == "null" {
		return false
	}
	if err := json.Unmarshal(raw, v); err != nil {
		fe.add(key, "BASE_TYPE_BAD_TYPE", fmt.Sprintf("Invalid type for %s.", key))
		return false
	}
	return true
}

// applyMessage applies a create/edit/interaction payload to m. On create, absent fields
// stay zero; on edit, absent or null fields are left unchanged. Files are appended as
// attachments (on edit after applying the "attachments" keep-list).
func (s *Server) applyMessage(m *Message, f fields, files []Attachment, fe formErrors) {
	var content string
	if f.get("content", &content, fe) {
		if n := utf8.RuneCountInString(content); n > MaxContent {
			fe.add("content", "BASE_TYPE_MAX_LENGTH", fmt.Sprintf("Must be %d or fewer in length.", MaxContent))
		}
		m.Content = content
	}
	var rows []json.RawMessage
	if f.get("components", &rows, fe) {
		validateMessageComponents(rows, fe)
		m.Components = compactAll(rows)
	}
	var embeds []json.RawMessage
	if f.get("embeds", &embeds, fe) {
		if len(embeds) > 10 {
			fe.add("embeds", "BASE_TYPE_MAX_LENGTH", "Must be 10 or fewer in length.")
		}
		m.Embeds = compactAll(embeds)
	}
	var am AllowedMentions
	if f.get("allowed_mentions", &am, fe) {
		validateAllowedMentions(am, fe)
		m.AllowedMentions = &am
	}
	var flags int
	if f.get("flags", &flags, fe) {
		if m.ID == "" {
			m.Flags = flags &^ messageFlagLoading
		} else { // an edit may only set or clear SUPPRESS_EMBEDS
			m.Flags = m.Flags&^FlagSuppressEmbeds | flags&FlagSuppressEmbeds
		}
	}
	var tts bool
	if f.get("tts", &tts, fe) {
		m.TTS = tts
	}
	var ref MessageReference
	if f.get("message_reference", &ref, fe) {
		m.MessageReference = &ref
	}
	var keep []struct {
		ID json.RawMessage `json:"id"`
	}
	if f.get("attachments", &keep, fe) && m.ID != "" {
		var kept []Attachment
		for _, a := range m.Attachments {
			for _, k := range keep {
				var id string
				if json.Unmarshal(k.ID, &id) == nil && id == a.ID {
					kept = append(kept, a)
				}
			}
		}
		m.Attachments = kept
	}
	for _, a := range files {
		a.ID = s.newID()
		a.URL = s.URL() + "attachments/" + m.ChannelID + "/" + a.ID + "/" + a.Filename
		a.ProxyURL = a.URL
		m.Attachments = append(m.Attachments, a)
	}
}

// finishMessage turns applyMessage's errors into the Discord answer, resolving mentions on success.
func (s *Server) finishMessage(m *Message, fe formErrors) *restError {
	if err := fe.err(); err != nil {
		return err
	}
	if m.Content == "" && len(m.Embeds) == 0 && len(m.Components) == 0 && len(m.Attachments) == 0 {
		return errBadRequest(CodeEmptyMessage, "Cannot send an empty message")
	}
	s.resolveMentions(m)
	recordPreviews(m)
	return nil
}

func compactAll(raws []json.RawMessage) []json.RawMessage {
	out := make([]json.RawMessage, 0, len(raws))
	for _, r := range raws {
		var v any
		json.Unmarshal(r, &v)
		b, _ := json.Marshal(v)
		out = append(out, b)
	}
	return out
}

type wireComponent struct {
	Type       int               `json:"type"`
	Style      int               `json:"style"`
	Label      string            `json:"label"`
	CustomID   *string           `json:"custom_id"`
	URL        string            `json:"url"`
	Emoji      json.RawMessage   `json:"emoji"`
	Disabled   bool              `json:"disabled"`
	Components []json.RawMessage `json:"components"`
	Required   *bool             `json:"required"`
	MinLength  int               `json:"min_length"`
	MaxLength  int               `json:"max_length"`
	Value      string            `json:"value"`
}

func validateMessageComponents(rows []json.RawMessage, fe formErrors) {
	if len(rows) > 5 {
		fe.add("components", "BASE_TYPE_MAX_LENGTH", "Must be 5 or fewer in length.")
	}
	seen := map[string]bool{}
	for i, raw := range rows {
		path := fmt.Sprintf("components.%d", i)
		var row wireComponent
		if err := json.Unmarshal(raw, &row); err != nil || row.Type != 1 {
			fe.add(path+".type", "UNION_TYPE_CHOICES", "Value of field \"type\" must be one of (1,).")
			continue
		}
		if len(row.Components) == 0 || len(row.Components) > 5 {
			fe.add(path+".components", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 5 in length.")
		}
		for j, craw := range row.Components {
			cpath := fmt.Sprintf("%s.components.%d", path, j)
			var c wireComponent
			if err := json.Unmarshal(craw, &c); err != nil {
				fe.add(cpath, "BASE_TYPE_BAD_TYPE", "Invalid component.")
				continue
			}
			switch c.Type {
			case 2:
				validateButton(c, cpath, fe)
			case 3, 5, 6, 7, 8:
				if len(row.Components) != 1 {
					fe.add(path+".components", "COMPONENT_LAYOUT_WIDTH_EXCEEDED", "A select menu must be alone in its row.")
				}
				checkCustomID(c.CustomID, cpath, fe)
			default:
				fe.add(cpath+".type", "UNION_TYPE_CHOICES", "Value of field \"type\" must be one of (2, 3, 5, 6, 7, 8).")
			}
			if c.CustomID != nil {
				if seen[*c.CustomID] {
					fe.add(cpath+".custom_id", "COMPONENT_CUSTOM_ID_DUPLICATED", "Component custom id cannot be duplicated")
				}
				seen[*c.CustomID] = true
			}
		}
	}
}

func validateButton(c wireComponent, path string, fe formErrors) {
	switch {
	case c.Style >= 1 && c.Style <= 4:
		checkCustomID(c.CustomID, path, fe)
		if c.URL != "" {
			fe.add(path+".url", "BUTTON_COMPONENT_URL_NOT_ALLOWED", "A non-link button cannot have a url.")
		}
	case c.Style == 5:
		if c.URL == "" {
			fe.add(path+".url", "BASE_TYPE_REQUIRED", "This field is required")
		}
		if c.CustomID != nil {
			fe.add(path+".custom_id", "BUTTON_COMPONENT_CUSTOM_ID_NOT_ALLOWED", "A link button cannot have a custom id.")
		}
	default:
		fe.add(path+".style", "BASE_TYPE_CHOICES", "Value must be one of (1, 2, 3, 4, 5).")
	}
	if utf8.RuneCountInString(c.Label) > 80 {
		fe.add(path+".label", "BASE_TYPE_MAX_LENGTH", "Must be 80 or fewer in length.")
	}
	if c.Label == "" && len(c.Emoji) == 0 {
		fe.add(path, "BUTTON_COMPONENT_LABEL_OR_EMOJI_REQUIRED", "A button needs a label or an emoji.")
	}
}

func checkCustomID(id *string, path string, fe formErrors) {
	switch {
	case id == nil || *id == "":
		fe.add(path+".custom_id", "BASE_TYPE_REQUIRED", "This field is required")
	case utf8.RuneCountInString(*id) > 100:
		fe.add(path+".custom_id", "BASE_TYPE_MAX_LENGTH", "Must be 100 or fewer in length.")
	}
}

// modalInput is a text input of a modal the bot opened, kept to build the submit.
type modalInput struct {
	CustomID  string
	Required  bool
	MinLength int
	MaxLength int
}

type modal struct {
	CustomID string
	Title    string
	Inputs   []modalInput
}

func validateModal(f fields, fe formErrors) modal {
	var md modal
	if !f.get("custom_id", &md.CustomID, fe) || md.CustomID == "" || utf8.RuneCountInString(md.CustomID) > 100 {
		fe.add("data.custom_id", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.")
	}
	if !f.get("title", &md.Title, fe) || md.Title == "" || utf8.RuneCountInString(md.Title) > 45 {
		fe.add("data.title", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 45 in length.")
	}
	var rows []json.RawMessage
	f.get("components", &rows, fe)
	if len(rows) == 0 || len(rows) > 5 {
		fe.add("data.components", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 5 in length.")
	}
	for i, raw := range rows {
		path := fmt.Sprintf("data.components.%d", i)
		var row wireComponent
		if json.Unmarshal(raw, &row) != nil || row.Type != 1 || len(row.Components) != 1 {
			fe.add(path, "COMPONENT_LAYOUT_WIDTH_EXCEEDED", "A modal row holds exactly one text input.")
			continue
		}
		var c wireComponent
		json.Unmarshal(row.Components[0], &c)
		cpath := path + ".components.0"
		if c.Type != 4 {
			fe.add(cpath+".type", "UNION_TYPE_CHOICES", "Value of field \"type\" must be one of (4,).")
			continue
		}
		checkCustomID(c.CustomID, cpath, fe)
		if c.Label == "" || utf8.RuneCountInString(c.Label) > 45 {
			fe.add(cpath+".label", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 45 in length.")
		}
		if c.Style != 1 && c.Style != 2 {
			fe.add(cpath+".style", "BASE_TYPE_CHOICES", "Value must be one of (1, 2).")
		}
		if c.MinLength < 0 || c.MinLength > 4000 || c.MaxLength < 0 || c.MaxLength > 4000 {
			fe.add(cpath+".max_length", "BASE_TYPE_BAD_INT", "Lengths must be between 0 and 4000.")
		}
		in := modalInput{Required: c.Required == nil || *c.Required, MinLength: c.MinLength, MaxLength: c.MaxLength}
		if c.CustomID != nil {
			in.CustomID = *c.CustomID
		}
		md.Inputs = append(md.Inputs, in)
	}
	return md
}

func validateAllowedMentions(am AllowedMentions, fe formErrors) {
	for i, p := range am.Parse {
		if p != "users" && p != "roles" && p != "everyone" {
			fe.add(fmt.Sprintf("allowed_mentions.parse.%d", i), "BASE_TYPE_CHOICES", "Value must be one of ('users', 'roles', 'everyone').")
		}
	}
	if slices.Contains(am.Parse, "users") && len(am.Users) > 0 {
		fe.add("allowed_mentions", "MESSAGE_ALLOWED_MENTIONS_PARSE_EXCLUSIVE", "parse:[\"users\"] and users: [ids] are mutually exclusive.")
	}
	if slices.Contains(am.Parse, "roles") && len(am.Roles) > 0 {
		fe.add("allowed_mentions", "MESSAGE_ALLOWED_MENTIONS_PARSE_EXCLUSIVE", "parse:[\"roles\"] and roles: [ids] are mutually exclusive.")
	}
	if len(am.Users) > 100 || len(am.Roles) > 100 {
		fe.add("allowed_mentions", "BASE_TYPE_MAX_LENGTH", "Must be 100 or fewer in length.")
	}
}

var (
	userMentionRE = regexp.MustCompile(`<@!?(\d+)>`)
	roleMentionRE = regexp.MustCompile(`<@&(\d+)>`)
	everyoneRE    = regexp.MustCompile(`@(everyone|here)\b`)
)

// resolveMentions fills mentions, mention_roles and mention_everyone the way Discord does:
// what the content names, filtered by the sender's allowed_mentions (absent = everything).
// These are the pings people actually get, so tests can assert nobody was pinged.
func (s *Server) resolveMentions(m *Message) {
	am := m.AllowedMentions
	allowUser := func(id string) bool {
		return am == nil || slices.Contains(am.Parse, "users") || slices.Contains(am.Users, id)
	}
	allowRole := func(id string) bool {
		return am == nil || slices.Contains(am.Parse, "roles") || slices.Contains(am.Roles, id)
	}
	m.Mentions, m.MentionRoles = []User{}, []string{}
	seen := map[string]bool{}
	for _, sm := range userMentionRE.FindAllStringSubmatch(m.Content, -1) {
		id := sm[1]
		if seen[id] || !allowUser(id) {
			continue
		}
		seen[id] = true
		m.Mentions = append(m.Mentions, s.userByID(m.GuildID, id))
	}
	for _, sm := range roleMentionRE.FindAllStringSubmatch(m.Content, -1) {
		if !slices.Contains(m.MentionRoles, sm[1]) && allowRole(sm[1]) {
			m.MentionRoles = append(m.MentionRoles, sm[1])
		}
	}
	m.MentionEveryone = everyoneRE.MatchString(m.Content) && (am == nil || slices.Contains(am.Parse, "everyone"))
	// A reply pings the author of the message it answers without naming them in its text:
	// a person's by default (the client's "@ON"), a bot's when allowed_mentions says so.
	if ref := m.MessageReference; ref != nil {
		to := s.messages[ref.MessageID]
		ping := !m.NoReplyPing
		if m.Author.ID == s.cfg.BotUser.ID {
			ping = am == nil || am.RepliedUser
		}
		if to != nil && ping && !seen[to.Author.ID] && to.Author.ID != m.Author.ID {
			m.Mentions = append(m.Mentions, to.Author)
		}
	}
}

// checkReferenceLocked applies Discord's rule for a reply's message_reference: the
// message it answers must exist, in the channel the reference names (its own when it
// names none), else an "Unknown message" form error, unless fail_if_not_exists is false,
// which sends the message as no reply.
func (s *Server) checkReferenceLocked(m *Message, fe formErrors) {
	ref := m.MessageReference
	if ref == nil {
		return
	}
	in := ref.ChannelID
	if in == "" {
		in = m.ChannelID
	}
	if to := s.messages[ref.MessageID]; to != nil && to.ChannelID == in {
		ref.ChannelID, ref.GuildID = to.ChannelID, to.GuildID
		return
	}
	if ref.FailIfNotExists != nil && !*ref.FailIfNotExists {
		m.MessageReference = nil
		return
	}
	fe.add("message_reference", "REPLIES_UNKNOWN_MESSAGE", "Unknown message")
}

func (s *Server) userByID(guildID, id string) User {
	if id == s.cfg.BotUser.ID {
		return s.cfg.BotUser
	}
	if mem := s.members[guildID][id]; mem != nil {
		return *mem.User
	}
	for _, ms := range s.members {
		if mem := ms[id]; mem != nil {
			return *mem.User
		}
	}
	return User{ID: id, Username: "user" + id, Discriminator: "0"}
}
