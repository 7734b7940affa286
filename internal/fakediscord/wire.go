package fakediscord

import (
	"encoding/json"
	"time"
)

// The fake keeps its own wire types, written from Discord's API documentation rather than
// borrowed from discordgo, so a field discordgo gets wrong shows up as a failing test instead
// of agreeing with itself.

// User is a Discord user object.
type User struct {
	ID            string `json:"id"`
	Username      string `json:"username"`
	Discriminator string `json:"discriminator"`
	GlobalName    string `json:"global_name,omitempty"`
	Bot           bool   `json:"bot,omitempty"`
}

// Member is a guild member object: the user and the role IDs they hold.
type Member struct {
	User        *User     `json:"user,omitempty"`
	Nick        string    `json:"nick,omitempty"`
	Roles       []string  `json:"roles"`
	JoinedAt    time.Time `json:"joined_at"`
	Permissions string    `json:"permissions,omitempty"` // only inside interactions
}

// Role is a guild role object.
type Role struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Permissions string `json:"permissions"`
	Position    int    `json:"position"`
}

// Channel types the fake knows.
const (
	ChannelGuildText     = 0
	ChannelDM            = 1
	ChannelPublicThread  = 11
	ChannelPrivateThread = 12
)

// ThreadMetadata is the thread-specific part of a thread channel.
type ThreadMetadata struct {
	Archived            bool      `json:"archived"`
	AutoArchiveDuration int       `json:"auto_archive_duration"`
	ArchiveTimestamp    time.Time `json:"archive_timestamp"`
	Locked              bool      `json:"locked"`
	Invitable           bool      `json:"invitable,omitempty"`
}

// Channel is a channel object: a guild text channel, a DM, or a thread.
type Channel struct {
	ID             string          `json:"id"`
	Type           int             `json:"type"`
	GuildID        string          `json:"guild_id,omitempty"`
	Name           string          `json:"name,omitempty"`
	ParentID       string          `json:"parent_id,omitempty"`
	OwnerID        string          `json:"owner_id,omitempty"`
	LastMessageID  string          `json:"last_message_id,omitempty"`
	MessageCount   int             `json:"message_count,omitempty"`
	MemberCount    int             `json:"member_count,omitempty"`
	ThreadMetadata *ThreadMetadata `json:"thread_metadata,omitempty"`
	Recipients     []User          `json:"recipients,omitempty"`
}

// Guild is what the fake serves for a configured guild.
type Guild struct {
	ID       string    `json:"id"`
	Name     string    `json:"name"`
	OwnerID  string    `json:"owner_id,omitempty"`
	Roles    []Role    `json:"roles"`
	Channels []Channel `json:"channels"`
	Members  []Member  `json:"members"`
}

// Attachment is a message attachment object; Data holds the uploaded bytes (never sent).
type Attachment struct {
	ID          string `json:"id"`
	Filename    string `json:"filename"`
	ContentType string `json:"content_type,omitempty"`
	Size        int    `json:"size"`
	URL         string `json:"url"`
	ProxyURL    string `json:"proxy_url"`
	Ephemeral   bool   `json:"ephemeral,omitempty"`
	Data        []byte `json:"-"`
}

// MessageReference points at another message (replies, thread starters).
type MessageReference struct {
	MessageID string `json:"message_id,omitempty"`
	ChannelID string `json:"channel_id,omitempty"`
	GuildID   string `json:"guild_id,omitempty"`
	// FailIfNotExists (default true) makes a reply to a message that is not in the
	// channel an error; false sends it as a plain message.
	FailIfNotExists *bool `json:"fail_if_not_exists,omitempty"`
}

// AllowedMentions is the allowed_mentions object a sender attaches to a message.
type AllowedMentions struct {
	Parse       []string `json:"parse"`
	Users       []string `json:"users,omitempty"`
	Roles       []string `json:"roles,omitempty"`
	RepliedUser bool     `json:"replied_user,omitempty"`
}

// Message is a message object. Components are kept as the JSON the sender sent (after
// validation) so they round-trip exactly.
type Message struct {
	ID               string            `json:"id"`
	Type             int               `json:"type"`
	ChannelID        string            `json:"channel_id"`
	GuildID          string            `json:"guild_id,omitempty"`
	Author           User              `json:"author"`
	Member           *Member           `json:"member,omitempty"`
	Content          string            `json:"content"`
	Timestamp        time.Time         `json:"timestamp"`
	EditedTimestamp  *time.Time        `json:"edited_timestamp"`
	TTS              bool              `json:"tts"`
	MentionEveryone  bool              `json:"mention_everyone"`
	Mentions         []User            `json:"mentions"`
	MentionRoles     []string          `json:"mention_roles"`
	Attachments      []Attachment      `json:"attachments"`
	Embeds           []json.RawMessage `json:"embeds"`
	Components       []json.RawMessage `json:"components"`
	Pinned           bool              `json:"pinned"`
	Flags            int               `json:"flags"`
	WebhookID        string            `json:"webhook_id,omitempty"`
	ApplicationID    string            `json:"application_id,omitempty"`
	MessageReference *MessageReference `json:"message_reference,omitempty"`
	Thread           *Channel          `json:"thread,omitempty"`

	// AllowedMentions is what the sender asked for; kept so tests can assert on it.
	AllowedMentions *AllowedMentions `json:"-"`
	// NoReplyPing, on a person's reply given to PostMessage, is the client's "@ON" toggled
	// off: the replied-to author is not pinged (not in Mentions). Discord's client pings
	// by default; a bot's reply pings only with allowed_mentions.replied_user.
	NoReplyPing bool `json:"-"`
	// Previewed lists the links a real Discord would have fetched to unfurl (a URL in the
	// content of a version of the message sent without SUPPRESS_EMBEDS). It only grows: a
	// link fetched once has leaked, whatever later edits do.
	Previewed []string `json:"-"`
}

// Message flags the fake interprets.
const (
	FlagEphemeral = 1 << 6
	// FlagSuppressEmbeds (SUPPRESS_EMBEDS) stops Discord from unfurling links in the content.
	FlagSuppressEmbeds = 1 << 2
	// FlagSuppressNotifications (SUPPRESS_NOTIFICATIONS) sends without a push notification.
	FlagSuppressNotifications = 1 << 12
)

// ApplicationCommand is an application command as stored after a bulk overwrite. Options
// are kept as sent.
type ApplicationCommand struct {
	ID                       string            `json:"id"`
	Type                     int               `json:"type"`
	ApplicationID            string            `json:"application_id"`
	GuildID                  string            `json:"guild_id,omitempty"`
	Name                     string            `json:"name"`
	Description              string            `json:"description"`
	Options                  []json.RawMessage `json:"options,omitempty"`
	DefaultMemberPermissions *string           `json:"default_member_permissions"`
	Version                  string            `json:"version"`
}

// CommandOption is one option of a slash command invocation (INTERACTION_CREATE data).
type CommandOption struct {
	Name    string          `json:"name"`
	Type    int             `json:"type"`
	Value   any             `json:"value,omitempty"`
	Options []CommandOption `json:"options,omitempty"`
}

// Option types used in invocations.
const (
	OptionSubCommand = 1
	OptionString     = 3
	OptionInteger    = 4
	OptionBoolean    = 5
)

// SubCommand returns a sub-command option carrying opts.
func SubCommand(name string, opts ...CommandOption) CommandOption {
	return CommandOption{Name: name, Type: OptionSubCommand, Options: opts}
}

// StringOption returns a string option.
func StringOption(name, value string) CommandOption {
	return CommandOption{Name: name, Type: OptionString, Value: value}
}

// IntegerOption returns an integer option.
func IntegerOption(name string, value int) CommandOption {
	return CommandOption{Name: name, Type: OptionInteger, Value: value}
}

// Interaction types.
const (
	InteractionPing               = 1
	InteractionApplicationCommand = 2
	InteractionMessageComponent   = 3
	InteractionAutocomplete       = 4
	InteractionModalSubmit        = 5
)

// Interaction is an INTERACTION_CREATE payload. Data is type specific.
type Interaction struct {
	ID            string   `json:"id"`
	ApplicationID string   `json:"application_id"`
	Type          int      `json:"type"`
	Data          any      `json:"data,omitempty"`
	GuildID       string   `json:"guild_id,omitempty"`
	ChannelID     string   `json:"channel_id"`
	Channel       *Channel `json:"channel,omitempty"`
	Member        *Member  `json:"member,omitempty"`
	User          *User    `json:"user,omitempty"`
	Token         string   `json:"token"`
	Version       int      `json:"version"`
	Message       *Message `json:"message,omitempty"`
	Locale        string   `json:"locale,omitempty"`
	GuildLocale   string   `json:"guild_locale,omitempty"`
	AppPerms      string   `json:"app_permissions,omitempty"`
}

// ComponentData is the data of a message component interaction.
type ComponentData struct {
	CustomID      string   `json:"custom_id"`
	ComponentType int      `json:"component_type"`
	Values        []string `json:"values,omitempty"`
}

// CommandData is the data of an application command interaction.
type CommandData struct {
	ID      string          `json:"id"`
	Name    string          `json:"name"`
	Type    int             `json:"type"`
	GuildID string          `json:"guild_id,omitempty"`
	Options []CommandOption `json:"options,omitempty"`
}

// ModalData is the data of a modal submit interaction.
type ModalData struct {
	CustomID   string           `json:"custom_id"`
	Components []modalActionRow `json:"components"`
}

type modalActionRow struct {
	Type       int              `json:"type"`
	Components []modalTextValue `json:"components"`
}

type modalTextValue struct {
	Type     int    `json:"type"`
	CustomID string `json:"custom_id"`
	Value    string `json:"value"`
}

// apiError is Discord's error body.
type apiError struct {
	Message string         `json:"message"`
	Code    int            `json:"code"`
	Errors  map[string]any `json:"errors,omitempty"`
	// RetryAfter (seconds) and Global are set on 429 answers only.
	RetryAfter float64 `json:"retry_after,omitempty"`
	Global     bool    `json:"global,omitempty"`
}

// Discord JSON error codes the fake returns.
const (
	CodeGeneral              = 0
	CodeUnknownChannel       = 10003
	CodeUnknownGuild         = 10004
	CodeUnknownMember        = 10007
	CodeUnknownMessage       = 10008
	CodeUnknownWebhook       = 10015
	CodeUnknownInteraction   = 10062
	CodeUnknownCommand       = 10063
	CodeCannotEditOthers     = 50005
	CodeEmptyMessage         = 50006
	CodeInvalidFormBody      = 50035
	CodeAlreadyAcknowledged  = 40060
	CodeThreadAlreadyCreated = 160004
	CodeInvalidWebhookToken  = 50027
	CodeMissingAccess        = 50001
	CodeMissingPermissions   = 50013
	CodeThreadArchived       = 50083
	CodeThreadLocked         = 160005
)
