package discord

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/bots/discord/endpoint"
	"github.com/bwmarrin/discordgo"
)

// Platform is the name decisions made in Discord carry as their source.
const Platform = "discord"

// Intents are the gateway intents the bot asks for: guilds (channels and threads in the
// state cache), guild and direct messages, and message content (privileged: enable
// "Message Content Intent" in the developer portal) to read typed tasks and replies.
const Intents = discordgo.IntentsGuilds | discordgo.IntentsGuildMessages | discordgo.IntentsDirectMessages | discordgo.IntentMessageContent

// Options configure a Bot.
type Options struct {
	// Token is the bot token (without "Bot "). It is never logged.
	Token string
	// ApplicationID registers the /agent command; "" takes it from READY.
	ApplicationID string
	// Guilds register /agent per guild (instant) instead of globally (up to an hour to
	// show). They are also the only guilds served when the relay's rules say so.
	Guilds []string
	Relay  bots.Handler
	Log    *slog.Logger
	// APIURL is Discord's base URL ("https://discord.com/"; "" is that too). Another one
	// points discordgo, process-wide, at it: a fake, in tests.
	APIURL string
	// Watchdog is how long the gateway may go without a heartbeat ACK before the
	// connection counts as dead and is reopened; 0 is 60s.
	Watchdog time.Duration
	// Backoff is the wait before reconnect attempt n (from 1); nil doubles from 1s to 2m.
	Backoff func(n int) time.Duration
	// OnConnection, if set, is told each time the gateway connection goes up or down
	// (metrics).
	OnConnection func(up bool)
	// MaxText is the longest result posted inline; 0 is 1,500 characters (Discord's
	// limit is 2,000 for the whole message).
	MaxText int
}

// Bot is the Discord adapter. Create it with New, add it to the relay, then Run it.
type Bot struct {
	opt Options
	s   *discordgo.Session
	log *slog.Logger

	disconnected chan struct{} // a Disconnect event since the last Open

	mu      sync.Mutex
	self    string            // the bot's user ID, from READY
	app     string            // application ID
	parents map[string]string // channel → parent for threads, "" for channels that are not
	// continued maps a locked thread to the one its run goes on in; continues, back.
	continued, continues map[string]string
	members              bots.Cache[[]string] // user → roles across the guilds
	conn                 *bots.Connection
	cmdsOK               bool

	// discordgo runs each gateway handler in a goroutine of its own; track counts them in
	// and hands them hctx, which Run cancels before waiting for them, so none outlives it.
	hmu      sync.Mutex
	hctx     context.Context // nil outside Run
	handlers sync.WaitGroup
}

var _ bots.Adapter = (*Bot)(nil)

// New checks the options and returns a Bot; it connects in Run.
func New(opt Options) (*Bot, error) {
	opt.Token = strings.TrimPrefix(strings.TrimSpace(opt.Token), "Bot ")
	if opt.Token == "" || strings.ContainsAny(opt.Token, " \t\n") {
		return nil, errors.New("discord: the bot token is empty or has spaces in it (copy it from the Bot page of the application)")
	}
	if opt.Relay == nil {
		return nil, errors.New("discord: no relay")
	}
	opt.Log, opt.Backoff = bots.LogOr(opt.Log), bots.BackoffOr(opt.Backoff)
	opt.Watchdog, opt.MaxText = cmp.Or(opt.Watchdog, 60*time.Second), cmp.Or(opt.MaxText, 1500)
	if opt.APIURL != "" && opt.APIURL != "https://discord.com/" {
		endpoint.Point(opt.APIURL)
	}
	s, err := discordgo.New("Bot " + opt.Token)
	if err != nil {
		return nil, fmt.Errorf("discord: %w", err)
	}
	s.Identify.Intents = Intents
	// Run reconnects itself, with backoff and a watchdog; discordgo's own reconnect loop
	// would race it (and its heartbeat check waits 5 intervals, over 3 minutes).
	s.ShouldReconnectOnError = false
	s.ShouldRetryOnRateLimit = true // 429s: wait retry_after and send again
	// discordgo logs with the standard logger; what matters reaches us as errors and
	// Disconnect events, logged through slog.
	s.LogLevel = -1
	b := &Bot{opt: opt, s: s, log: opt.Log, disconnected: make(chan struct{}, 1), app: opt.ApplicationID,
		parents:   map[string]string{},
		continued: map[string]string{}, continues: map[string]string{},
		conn: bots.NewConnection(Platform, opt.OnConnection)}
	s.AddHandler(func(_ *discordgo.Session, d *discordgo.Disconnect) {
		b.track(func(context.Context) { b.onDisconnect(d) })
	})
	s.AddHandler(func(_ *discordgo.Session, m *discordgo.MessageCreate) {
		b.track(func(ctx context.Context) { b.onMessage(ctx, m.Message, false) })
	})
	s.AddHandler(func(_ *discordgo.Session, m *discordgo.MessageUpdate) {
		b.track(func(ctx context.Context) { b.onMessage(ctx, m.Message, true) })
	})
	s.AddHandler(func(_ *discordgo.Session, ic *discordgo.InteractionCreate) {
		b.track(func(ctx context.Context) { b.onInteraction(ctx, ic) })
	})
	s.AddHandler(func(_ *discordgo.Session, t *discordgo.ThreadCreate) {
		b.track(func(context.Context) { b.onThread(t) })
	})
	return b, nil
}

// Platform implements bots.Adapter.
func (b *Bot) Platform() string { return Platform }

// Status reports the gateway connection's state, for agentctl status.
func (b *Bot) Status() bots.Status { return b.conn.Status() }

// Run keeps the gateway connected until ctx ends, reopening it with backoff whenever it
// drops or the watchdog finds it silent. It returns only when ctx ends.
func (b *Bot) Run(ctx context.Context) error {
	hctx, stop := context.WithCancel(ctx)
	b.hmu.Lock()
	b.hctx = hctx
	b.hmu.Unlock()
	dial := func(ctx context.Context) error {
		select { // a Disconnect of the previous connection is old news
		case <-b.disconnected:
		default:
		}
		if err := b.s.Open(); err != nil && !errors.Is(err, discordgo.ErrWSAlreadyOpen) {
			b.log.Warn("discord: gateway connection failed; retrying", "err", err)
			return err
		}
		b.conn.Set(bots.StateConnected, 0, nil)
		b.learnSelf()
		b.log.Info("discord: connected", "bot_user", b.selfID())
		b.registerCommands(ctx)
		return nil
	}
	b.conn.Keep(ctx, b.opt.Backoff, dial, func(ctx context.Context) error {
		why := b.watch(ctx)
		if ctx.Err() == nil {
			b.log.Warn("discord: gateway connection lost; reconnecting", "err", why)
			// Not 1000/1001, which would end the session: the next Open resumes it, and
			// Discord replays what was dispatched meanwhile.
			b.s.CloseWithCode(4000)
		}
		return why
	})
	b.s.Close()
	b.hmu.Lock() // no handler is counted in once hctx is gone, so the wait ends
	stop()
	b.hctx = nil
	b.hmu.Unlock()
	b.handlers.Wait()
	return nil
}

// track runs a gateway handler as one of Run's: with a context that ends when Run stops,
// and counted, so Run waits for it. One that comes outside Run is dropped.
func (b *Bot) track(handle func(ctx context.Context)) {
	b.hmu.Lock()
	ctx := b.hctx
	if ctx == nil || ctx.Err() != nil {
		b.hmu.Unlock()
		return
	}
	b.handlers.Add(1)
	b.hmu.Unlock()
	defer b.handlers.Done()
	handle(ctx)
}

// watch waits until ctx ends, the connection drops, or no heartbeat ACK came for the
// watchdog's time (a silently dead connection), and says which.
func (b *Bot) watch(ctx context.Context) error {
	tick := time.NewTicker(max(b.opt.Watchdog/8, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-b.disconnected:
			return errors.New("the gateway connection closed")
		case <-tick.C:
			b.s.RLock()
			last := b.s.LastHeartbeatAck
			b.s.RUnlock()
			if silent := time.Since(last); silent > b.opt.Watchdog {
				return fmt.Errorf("no heartbeat ACK for %s", silent.Round(time.Second))
			}
		}
	}
}

// learnSelf reads the bot's user and application from READY, which discordgo's state
// holds by the time Open returns (handlers run later, in goroutines).
func (b *Bot) learnSelf() {
	st := b.s.State
	st.RLock()
	var self, app string
	if st.User != nil {
		self = st.User.ID
	}
	if st.Application != nil {
		app = st.Application.ID
	}
	st.RUnlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	if self != "" {
		b.self = self
	}
	if b.app == "" {
		b.app = app
	}
}

func (b *Bot) onDisconnect(*discordgo.Disconnect) {
	select {
	case b.disconnected <- struct{}{}:
	default:
	}
}

// onThread remembers threads' parents as the gateway announces them.
func (b *Bot) onThread(t *discordgo.ThreadCreate) {
	if t.Channel != nil && t.IsThread() {
		b.mu.Lock()
		b.parents[t.ID] = t.ParentID
		b.mu.Unlock()
	}
}

// registerCommands puts /agent in each configured guild (or globally), once per Run
// that succeeds; a failure is logged and tried again on the next connection.
func (b *Bot) registerCommands(ctx context.Context) {
	b.mu.Lock()
	app, done := b.app, b.cmdsOK
	if app == "" {
		app = b.self // a bot user's ID is its application's ID
	}
	b.mu.Unlock()
	if done || app == "" {
		return
	}
	guilds := b.opt.Guilds
	if len(guilds) == 0 {
		guilds = []string{""}
	}
	for _, g := range guilds {
		if _, err := b.s.ApplicationCommandBulkOverwrite(app, g, Commands(), discordgo.WithContext(ctx)); err != nil {
			b.log.Error("discord: registering /agent", "guild", g, "err", err)
			return
		}
	}
	b.mu.Lock()
	b.cmdsOK = true
	b.mu.Unlock()
	b.log.Info("discord: /agent registered", "guilds", len(b.opt.Guilds))
}

func (b *Bot) selfID() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.self
}

// where places a channel: a thread is reported under its parent; a direct message
// (no guild) is its own thread, so replies there reach the run it started.
func (b *Bot) where(ctx context.Context, guild, channel string) (bots.Where, error) {
	if guild == "" {
		b.mu.Lock()
		b.parents[channel] = channel // a DM is its own thread (see StartThread)
		b.mu.Unlock()
		return bots.Where{Channel: channel, Thread: channel, DM: true}, nil
	}
	parent, err := b.parent(ctx, channel)
	if err != nil {
		return bots.Where{}, err
	}
	if parent != "" {
		// A reply in a continuation thread belongs to the run of the thread it continues.
		return bots.Where{Team: guild, Channel: parent, Thread: b.origin(channel)}, nil
	}
	return bots.Where{Team: guild, Channel: channel}, nil
}

// parent returns a thread's parent channel, "" for a channel that is not a thread.
func (b *Bot) parent(ctx context.Context, channel string) (string, error) {
	b.mu.Lock()
	p, ok := b.parents[channel]
	b.mu.Unlock()
	if ok {
		return p, nil
	}
	ch, err := b.s.State.Channel(channel)
	if err != nil {
		if ch, err = b.s.Channel(channel, discordgo.WithContext(ctx)); err != nil {
			return "", fmt.Errorf("discord: looking up channel %s: %w", channel, err)
		}
	}
	if ch.IsThread() {
		p = ch.ParentID
	}
	b.mu.Lock()
	b.parents[channel] = p
	b.mu.Unlock()
	return p, nil
}

// MaxText implements bots.Adapter.
func (b *Bot) MaxText() int { return b.opt.MaxText }

// Before implements bots.Adapter: snowflakes are ordered as decimal numbers.
func (b *Bot) Before(x, y string) bool { return bots.DecimalBefore(x, y) }
