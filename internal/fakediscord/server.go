package fakediscord

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Config describes the Discord world the fake serves. Zero values get usable defaults.
type Config struct {
	// Token is the bot token without the "Bot " prefix (default "fake-bot-token"). REST calls
	// must carry "Authorization: Bot TOKEN"; IDENTIFY and RESUME must carry TOKEN, with or
	// without the prefix (discordgo sends it with).
	Token string
	// ApplicationID is the bot's application ID (default: a fresh snowflake). The bot user's ID
	// defaults to it, as for real bots.
	ApplicationID string
	// BotUser is the bot's own user (default: ID = ApplicationID, username "agentd").
	BotUser User
	// Guilds are the guilds the bot is in; each gets a GUILD_CREATE after READY.
	Guilds []Guild
	// HeartbeatInterval is sent in HELLO (default 41.25 s, Discord's usual value).
	HeartbeatInterval time.Duration
	// PrivilegedIntents lists the privileged intents the application may request (default:
	// all of GUILD_MEMBERS, GUILD_PRESENCES and MESSAGE_CONTENT). Asking for others closes the
	// gateway with 4014, as Discord does.
	PrivilegedIntents *int
	// InteractionDeadline is how long after an interaction its first response may come; a
	// later one fails with 10062 Unknown interaction. Zero is Discord's 3 s; negative: none.
	InteractionDeadline time.Duration
	// ManageThreads gives the bot MANAGE_THREADS: it may then post and edit in, and
	// unarchive, a locked thread. Without it (the default, as for a bot invited with the
	// usual scopes) a locked thread refuses its messages and edits (160005) and its
	// unarchiving (50013).
	ManageThreads bool
}

// Gateway intents the fake interprets.
const (
	IntentGuilds         = 1 << 0
	IntentGuildMembers   = 1 << 1
	IntentGuildPresences = 1 << 8
	IntentGuildMessages  = 1 << 9
	IntentDirectMessages = 1 << 12
	IntentMessageContent = 1 << 15

	privilegedIntents = IntentGuildMembers | IntentGuildPresences | IntentMessageContent
	allIntents        = 1<<26 - 1
)

// MaxContent is Discord's limit on a message's content, in characters.
const MaxContent = 2000

// Server is a running fake of Discord: REST under /api/v{9,10}/ and the gateway under
// /gateway, both on one loopback listener. All methods are safe for concurrent use.
type Server struct {
	cfg  Config
	http *httptest.Server

	mu           sync.Mutex
	nextID       int64
	guilds       map[string]*Guild
	members      map[string]map[string]*Member // guild → user → member
	channels     map[string]*Channel
	messages     map[string]*Message // by ID; IDs are unique across channels
	commands     map[string][]ApplicationCommand
	interactions map[string]*interactionState // by interaction ID
	byToken      map[string]*interactionState
	sessions     map[string]*session
	conns        map[*gwConn]bool
	connSeq      int
	ackPaused    bool
	rateLimits   []rateLimit
	outages      []*outage
	calls        []Call
	frames       []Frame
	changed      chan struct{}        // closed and replaced whenever calls or frames grow
	replayExtra  int                  // dispatches the next RESUME replays again (ReplayOnResume)
	clockSkew    time.Duration        // added to the wall clock by Advance (thread auto-archive)
	activeAt     map[string]time.Time // thread → its last activity, for auto-archive
	noSend       map[string]bool      // channels and threads the bot may not post in (ForbidPosting)
	// gatewayVersions is the API version each gateway connection asked for (GatewayVersions).
	gatewayVersions []string
}

// New starts a fake on a loopback port. Close it when done (Start registers that for tests).
func New(cfg Config) *Server {
	s := &Server{
		guilds:       map[string]*Guild{},
		members:      map[string]map[string]*Member{},
		channels:     map[string]*Channel{},
		messages:     map[string]*Message{},
		commands:     map[string][]ApplicationCommand{},
		interactions: map[string]*interactionState{},
		byToken:      map[string]*interactionState{},
		sessions:     map[string]*session{},
		conns:        map[*gwConn]bool{},
		changed:      make(chan struct{}),
		activeAt:     map[string]time.Time{},
		noSend:       map[string]bool{},
		nextID:       (time.Now().UnixMilli() - discordEpoch) << 22,
	}
	if cfg.Token == "" {
		cfg.Token = "fake-bot-token"
	}
	if cfg.ApplicationID == "" {
		cfg.ApplicationID = s.newID()
	}
	if cfg.BotUser.ID == "" {
		cfg.BotUser.ID = cfg.ApplicationID
	}
	if cfg.BotUser.Username == "" {
		cfg.BotUser.Username = "agentd"
	}
	cfg.BotUser.Bot = true
	if cfg.BotUser.Discriminator == "" {
		cfg.BotUser.Discriminator = "0"
	}
	if cfg.InteractionDeadline == 0 {
		cfg.InteractionDeadline = 3 * time.Second
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = 41250 * time.Millisecond
	}
	if cfg.PrivilegedIntents == nil {
		p := privilegedIntents
		cfg.PrivilegedIntents = &p
	}
	s.cfg = cfg
	for _, g := range cfg.Guilds {
		s.addGuild(g)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/gateway", s.serveGateway)
	mux.HandleFunc("/gateway/", s.serveGateway)
	mux.HandleFunc("/api/", s.serveREST)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, apiError{Message: "404: Not Found", Code: CodeGeneral})
	})
	s.http = httptest.NewServer(mux)
	return s
}

// Start is New for tests: the server closes when the test ends.
func Start(t interface {
	Helper()
	Cleanup(func())
}, cfg Config) *Server {
	t.Helper()
	s := New(cfg)
	t.Cleanup(s.Close)
	return s
}

// Close drops every gateway connection and stops the listener.
func (s *Server) Close() {
	s.mu.Lock()
	for c := range s.conns {
		c.abort()
	}
	s.mu.Unlock()
	s.http.CloseClientConnections()
	s.http.Close()
}

// URL is the base URL, "http://127.0.0.1:PORT/".
func (s *Server) URL() string { return s.http.URL + "/" }

// GatewayURL is the websocket URL GET /gateway returns.
func (s *Server) GatewayURL() string {
	return "ws" + strings.TrimPrefix(s.http.URL, "http") + "/gateway"
}

// Token is the bot token (without "Bot ").
func (s *Server) Token() string { return s.cfg.Token }

// ApplicationID is the bot's application ID.
func (s *Server) ApplicationID() string { return s.cfg.ApplicationID }

// BotUser is the bot's own user.
func (s *Server) BotUser() User { return s.cfg.BotUser }

const discordEpoch = 1420070400000

// newID returns a fresh snowflake; they increase and carry a plausible timestamp.
func (s *Server) newID() string {
	s.nextID++
	return fmt.Sprint(s.nextID)
}

// NewID returns a fresh snowflake, for tests building users, channels and roles.
func (s *Server) NewID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.newID()
}

func (s *Server) addGuild(g Guild) {
	gg := g
	gg.Channels = nil
	gg.Members = nil
	s.guilds[g.ID] = &gg
	s.members[g.ID] = map[string]*Member{}
	for _, m := range g.Members {
		s.putMember(g.ID, m)
	}
	for _, c := range g.Channels {
		c := c
		c.GuildID = g.ID
		s.channels[c.ID] = &c
	}
}

func (s *Server) putMember(guildID string, m Member) {
	if m.JoinedAt.IsZero() {
		m.JoinedAt = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	if m.Roles == nil {
		m.Roles = []string{}
	}
	u := *m.User
	m.User = &u
	s.members[guildID][u.ID] = &m
}

// AddMember adds or replaces a guild member (its roles decide approver checks).
func (s *Server) AddMember(guildID string, m Member) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.guilds[guildID] == nil {
		return fmt.Errorf("fakediscord: unknown guild %s", guildID)
	}
	if m.User == nil || m.User.ID == "" {
		return fmt.Errorf("fakediscord: member without a user ID")
	}
	s.putMember(guildID, m)
	return nil
}

// AddChannel adds a channel (a guild text channel when GuildID is set, else a DM).
func (s *Server) AddChannel(c Channel) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.ID == "" {
		c.ID = s.newID()
	}
	s.channels[c.ID] = &c
}

// Channel returns a copy of a channel or thread.
func (s *Server) Channel(id string) (Channel, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.channels[id]
	if !ok {
		return Channel{}, false
	}
	return *c, true
}

// Message returns a copy of a stored message.
func (s *Server) Message(id string) (Message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.messages[id]
	if !ok {
		return Message{}, false
	}
	return *m, true
}

// Messages returns copies of the messages in a channel or thread, oldest first.
func (s *Server) Messages(channelID string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, m := range s.messages {
		if m.ChannelID == channelID {
			out = append(out, *m)
		}
	}
	sortMessages(out)
	return out
}

// AllMessages returns every message the fake holds, in every channel, oldest first.
func (s *Server) AllMessages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Message, 0, len(s.messages))
	for _, m := range s.messages {
		out = append(out, *m)
	}
	sortMessages(out)
	return out
}

// Commands returns the application commands registered globally (guildID "") or for a guild.
func (s *Server) Commands(guildID string) []ApplicationCommand {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ApplicationCommand(nil), s.commands[guildID]...)
}

// Call is one REST request the fake received.
type Call struct {
	Method string
	// Path is the route below the API version, e.g. "/channels/123/messages".
	Path    string
	Version string // "9", "10", or "" for an unversioned path
	Query   url.Values
	// Body is the JSON body, or the payload_json part of a multipart body; nil if none.
	Body  json.RawMessage
	Files []Attachment // multipart files, in order
	// Status and Code are what the fake answered (Code is Discord's JSON error code, 0 on success).
	Status int
	Code   int
}

// Decode unmarshals the call's body into v.
func (c Call) Decode(v any) error {
	if c.Body == nil {
		return fmt.Errorf("fakediscord: %s %s has no body", c.Method, c.Path)
	}
	return json.Unmarshal(c.Body, v)
}

// Fields decodes the body into a map, for quick assertions.
func (c Call) Fields() map[string]any {
	var m map[string]any
	json.Unmarshal(c.Body, &m)
	return m
}

// Route matches calls by method and path pattern; "*" in the pattern matches one segment.
// An empty method matches any.
func Route(method, pattern string) func(Call) bool {
	want := strings.Split(strings.Trim(pattern, "/"), "/")
	return func(c Call) bool {
		if method != "" && c.Method != method {
			return false
		}
		got := strings.Split(strings.Trim(c.Path, "/"), "/")
		if len(got) != len(want) {
			return false
		}
		for i := range want {
			if want[i] != "*" && want[i] != got[i] {
				return false
			}
		}
		return true
	}
}

// Calls returns every REST call so far, in arrival order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// CallCount is len(Calls()), a mark to pass to WaitCallFrom.
func (s *Server) CallCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.calls)
}

// WaitCall waits for the first call (ever) matching match.
func (s *Server) WaitCall(ctx context.Context, match func(Call) bool) (Call, error) {
	return s.WaitCallFrom(ctx, 0, match)
}

// WaitCallFrom waits for the first call at index from or later that matches.
func (s *Server) WaitCallFrom(ctx context.Context, from int, match func(Call) bool) (Call, error) {
	return waitFrom(ctx, s, from, func() []Call { return s.calls }, match, "call")
}

// waitFrom waits for the first element at index from or later of the list that items
// returns (read under s.mu) that matches; what names the list in the error when ctx ends.
func waitFrom[T any](ctx context.Context, s *Server, from int, items func() []T, match func(T) bool, what string) (T, error) {
	for {
		s.mu.Lock()
		list := items()
		for i := from; i < len(list); i++ {
			if match(list[i]) {
				v := list[i]
				s.mu.Unlock()
				return v, nil
			}
		}
		from = max(from, len(list))
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			var zero T
			return zero, fmt.Errorf("fakediscord: no matching %s: %w", what, ctx.Err())
		}
	}
}

// Frame is one gateway payload a client sent.
type Frame struct {
	Conn int // connection number, from 1 in order of connection
	Op   int
	Data json.RawMessage
}

// Gateway opcodes.
const (
	OpDispatch       = 0
	OpHeartbeat      = 1
	OpIdentify       = 2
	OpPresenceUpdate = 3
	OpResume         = 6
	OpReconnect      = 7
	OpInvalidSession = 9
	OpHello          = 10
	OpHeartbeatACK   = 11
)

// Op matches frames with the given opcode.
func Op(op int) func(Frame) bool { return func(f Frame) bool { return f.Op == op } }

// Frames returns every payload clients sent on the gateway, in arrival order.
func (s *Server) Frames() []Frame {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Frame(nil), s.frames...)
}

// FrameCount is len(Frames()), a mark for WaitFrameFrom.
func (s *Server) FrameCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.frames)
}

// WaitFrameFrom waits for the first client payload at index from or later that matches.
func (s *Server) WaitFrameFrom(ctx context.Context, from int, match func(Frame) bool) (Frame, error) {
	return waitFrom(ctx, s, from, func() []Frame { return s.frames }, match, "gateway payload")
}

// notify wakes waiters; s.mu must be held.
func (s *Server) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

type rateLimit struct {
	match      func(Call) bool
	retryAfter time.Duration
	global     bool
}

// RateLimitNext makes the next call matching match get a 429 with retry_after, as Discord
// answers an exhausted bucket. discordgo sleeps and retries by itself unless
// ShouldRetryOnRateLimit is off.
func (s *Server) RateLimitNext(match func(Call) bool, retryAfter time.Duration, global bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rateLimits = append(s.rateLimits, rateLimit{match, retryAfter, global})
}

type outage struct {
	match  func(Call) bool
	status int
}

// FailWith makes every REST call matching match fail with status (a 5xx: Discord is
// down) until the returned end is called. discordgo retries 502 by itself, so tests of a
// client's own retries use another status, like 503.
func (s *Server) FailWith(match func(Call) bool, status int) (end func()) {
	o := &outage{match, status}
	s.mu.Lock()
	s.outages = append(s.outages, o)
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, x := range s.outages {
			if x == o {
				s.outages = append(s.outages[:i], s.outages[i+1:]...)
				return
			}
		}
	}
}
