package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/bots/discord"
	"github.com/agentd/agentd/bots/slack"
	"github.com/agentd/agentd/daemon/agent"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/metrics"
	"github.com/agentd/agentd/daemon/schedule"
	"github.com/agentd/agentd/daemon/server/chatstore"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/daemon/team"
)

// chatBots are the relay and the enabled chat bots, made before the schedules' manager
// (which delivers runs through the relay) and started after the supervisor.
type chatBots struct {
	relay   *bots.Relay // nil when no bot runs
	runs    []func(ctx context.Context)
	log     *slog.Logger
	slack   *config.SlackConfig
	discord *config.DiscordConfig
	// tokens fingerprints the secrets the bots were built with (botTokens), so a reload
	// sees a rotated token file even when no config key changed.
	tokens string
	// missing are the secrets of enabled bots that could not be read: those bots did not
	// start, and status and doctor say so, each secret with its fix.
	missing []missingSecret
	since   time.Time // when they were found missing
}

var _ schedule.Chat = (*bots.Relay)(nil)

// chatBot is a bot the relay posts through, run until its context ends.
type chatBot interface {
	bots.Adapter
	Run(ctx context.Context) error
}

// newBots makes the relay and the enabled bots; Slack and Discord share the relay, which
// starts team runs from chat with teams (nil: none) and the workflows in [teams] dir.
// A bot whose secrets are missing is not started, and logged once with every secret it
// lacks; the rest of agentd runs without it (a service does not restart in a loop over
// a token to be written), and a reload that finds the secrets starts it.
func newBots(cfg *config.Config, svc bots.Service, teams *team.Engine, st *store.Store, log *slog.Logger, mx *metrics.Metrics) (*chatBots, error) {
	sec := readBotTokens(cfg)
	c := &chatBots{log: log, tokens: sec.fp, missing: sec.missing, since: time.Now()}
	var relay *bots.Relay
	// add starts the bot of platform, when its secrets are there: rules reads its config
	// section, make builds it on the relay.
	add := func(platform string, rules func() (bots.Rules, error), make func(*bots.Relay) (chatBot, error)) error {
		mx.SetBotConnected(platform, false)
		if sec.lacks(platform) != nil {
			return nil // start says so
		}
		if relay == nil {
			relay = bots.New(bots.Options{Service: svc, Bindings: chatstore.New(st), Log: log,
				ApproveN: cfg.Bots.ApproveCount, Expiry: cfg.Bots.DecisionExpiry.Duration, OnExpired: mx.DecisionExpired,
				Audit: chatstore.New(st).Audit})
			if teams != nil {
				relay.SetTeams(team.Shelf{Engine: teams, Dir: cfg.Teams.Dir})
			}
		}
		bot, err := make(relay)
		if err != nil {
			return err
		}
		r, err := rules()
		if err != nil {
			return err
		}
		relay.Add(bot, r)
		c.runs = append(c.runs, func(ctx context.Context) { bot.Run(ctx) })
		return nil
	}
	connected := func(platform string) func(bool) {
		return func(up bool) { mx.SetBotConnected(platform, up) }
	}
	if s := &cfg.Slack; s.Enabled {
		err := add(slack.Platform, func() (bots.Rules, error) { return slackRules(s) }, func(relay *bots.Relay) (chatBot, error) {
			c.slack = s
			return slack.New(slack.Options{BotToken: sec.tokens[slackBotToken], AppToken: sec.tokens[slackAppToken], APIURL: s.APIURL, Relay: relay, Log: log,
				OnConnection: connected(slack.Platform)})
		})
		if err != nil {
			return nil, err
		}
	}
	if d := &cfg.Discord; d.Enabled {
		err := add(discord.Platform, func() (bots.Rules, error) { return discordRules(d) }, func(relay *bots.Relay) (chatBot, error) {
			c.discord = d
			return discord.New(discord.Options{Token: sec.tokens[discordToken], ApplicationID: d.ApplicationID, Guilds: d.Guilds,
				APIURL: d.APIURL, Relay: relay, Log: log, OnConnection: connected(discord.Platform)})
		})
		if err != nil {
			return nil, err
		}
	}
	if relay != nil {
		c.relay = relay
		c.runs = append(c.runs, func(ctx context.Context) { relay.Run(ctx) })
	}
	return c, nil
}

// wouldStop is why c cannot replace a set running the bots of platforms: the secrets
// of those it leaves out, each with its fix; nil when it runs them all.
func (c *chatBots) wouldStop(platforms []string) error {
	var errs []error
	for _, m := range c.missing {
		if slices.Contains(platforms, m.part) {
			errs = append(errs, fmt.Errorf("%w: %s", m.err, m.fix))
		}
	}
	if len(errs) > 0 {
		errs = append([]error{errors.New("the running bots keep their tokens; fix these and reload again")}, errs...)
	}
	return errors.Join(errs...)
}

// chat is where schedules deliver runs: nil without bots.
func (c *chatBots) chat() schedule.Chat {
	if c.relay == nil {
		return nil
	}
	return c.relay
}

// start runs the relay and the bots until ctx ends; wait returns once they have. A
// platform being down never stops the daemon: the bots reconnect with backoff. A bot
// left out for its missing secrets is logged here, once for the set.
func (c *chatBots) start(ctx context.Context) (wait func()) {
	for _, part := range []string{"discord", "slack"} {
		if err := (botSecrets{missing: c.missing}).lacks(part); err != nil {
			c.log.Error(part+" bot not started: its secrets are missing; everything else runs (agentctl doctor says how to fix it)", "err", err)
		}
	}
	var wg sync.WaitGroup
	for _, run := range c.runs {
		wg.Go(func() { run(ctx) })
	}
	if c.slack != nil {
		c.log.Info("slack bot starting", "channels", len(c.slack.Channels), "direct_messages", c.slack.DirectMessages)
	}
	if c.discord != nil {
		c.log.Info("discord bot starting", "guilds", len(c.discord.Guilds), "channels", len(c.discord.Channels), "direct_messages", c.discord.DirectMessages)
	}
	return wg.Wait
}

// The bots' secrets, by what the errors call them.
const (
	slackBotToken = "slack bot token"
	slackAppToken = "slack app token"
	discordToken  = "discord bot token"
)

// botNotStarted is the state status shows for an enabled bot whose secrets are missing.
const botNotStarted = "not started"

// missingSecret is a secret a bot lacks: why it cannot be read, and the fix.
type missingSecret struct {
	part string // slack, discord
	err  error
	fix  string
}

// botSecrets are the enabled bots' tokens, each read once: the tokens by what they are,
// a fingerprint (a hash, so a reload sees a rotated or newly written token file without
// keeping the tokens; what could not be read counts too), and every secret a bot lacks.
type botSecrets struct {
	tokens  map[string]string
	fp      string
	missing []missingSecret
}

// readBotTokens reads the enabled bots' secrets ("" fingerprint without bots).
func readBotTokens(cfg *config.Config) botSecrets {
	var out botSecrets
	h := sha256.New()
	for _, s := range neededSecrets(cfg) {
		if s.part == "http" {
			continue // the listener's, read at start (httpToken)
		}
		if out.tokens == nil {
			out.tokens = map[string]string{}
		}
		v, err := s.read()
		if err != nil {
			out.missing = append(out.missing, missingSecret{part: s.part, err: err, fix: s.fix()})
			fmt.Fprintf(h, "%s\x00missing: %v\x00", s.what, err)
			continue
		}
		out.tokens[s.what] = v
		fmt.Fprintf(h, "%s\x00%s\x00", s.what, v)
	}
	if out.tokens != nil {
		out.fp = hex.EncodeToString(h.Sum(nil))
	}
	return out
}

// lacks is why the bot of part cannot start, every secret it lacks; nil when none.
func (b botSecrets) lacks(part string) error {
	var errs []error
	for _, m := range b.missing {
		if m.part == part {
			errs = append(errs, m.err)
		}
	}
	return errors.Join(errs...)
}

// slackRules turns [slack] into the relay's rules: ids starting with S are user groups.
// Mentions pasted from Slack (<@U123>, <!subteam^S123|@team>) are read as the ids they
// name; an entry that names no id is an error, since it would never match.
func slackRules(s *config.SlackConfig) (bots.Rules, error) {
	lists := func(a config.ChatAccess) approverLists { return approverLists{users: a.Approvers} }
	return chatRules("slack", s.Teams, s.DirectMessages, approverLists{users: s.Approvers}, s.Channels, s.Agents, lists,
		func(id, _ string, _ bool) bool { return strings.HasPrefix(id, "S") })
}

// discordRules turns [discord] into the relay's rules: user ids and role ids are listed
// apart, since both are snowflakes. A pasted mention goes by what it mentions: <@123> is a
// user and <@&123> a role, in either list; an entry that names no id is an error.
func discordRules(d *config.DiscordConfig) (bots.Rules, error) {
	lists := func(a config.DiscordAccess) approverLists { return approverLists{a.Approvers, a.ApproverRoles} }
	return chatRules("discord", d.Guilds, d.DirectMessages, approverLists{d.Approvers, d.ApproverRoles}, d.Channels, d.Agents, lists,
		func(_, raw string, role bool) bool { return role && !strings.HasPrefix(strings.TrimSpace(raw), "<") })
}

// approverLists are one chat table's approvers: users, and roles (Discord's alone).
type approverLists struct{ users, roles []string }

// chatRules turns a chat section (sec) into the relay's rules: its approvers, and those
// of its channel and agent tables (A, read by lists). An approver is a group when its
// pasted mention says so, or when isGroup says so of its id as written (raw), role
// telling whether it came from the roles list.
func chatRules[A any](sec string, teams []string, dm bool, top approverLists, channels, agents map[string]A,
	lists func(A) approverLists, isGroup func(id, raw string, role bool) bool) (bots.Rules, error) {
	access := func(where string, l approverLists) (bots.Access, error) {
		var a bots.Access
		for i, raw := range slices.Concat(l.users, l.roles) {
			role, list := i >= len(l.users), "approvers"
			if role {
				list = "approver_roles"
			}
			id, group, err := bots.ParseApprover(raw)
			if err != nil {
				return a, fmt.Errorf("[%s%s] %s: %w", sec, where, list, err)
			}
			if group || isGroup(id, raw, role) {
				a.Groups = append(a.Groups, id)
			} else {
				a.Users = append(a.Users, id)
			}
		}
		return a, nil
	}
	r := bots.Rules{Teams: teams, DM: dm, Channels: map[string]bots.Access{}, Agents: map[string]bots.Access{}}
	var err error
	if r.Approvers, err = access("", top); err != nil {
		return r, err
	}
	for id, c := range channels {
		if r.Channels[id], err = access(".channels."+id, lists(c)); err != nil {
			return r, err
		}
	}
	for name, a := range agents {
		if r.Agents[name], err = access(".agents."+name, lists(a)); err != nil {
			return r, err
		}
	}
	return r, nil
}

// statuses are the bots' connections, for agentctl status, and the bots not started
// for their missing secrets.
func (c *chatBots) statuses() []api.BotStatus {
	if c == nil {
		return nil
	}
	var out []api.BotStatus
	if c.relay != nil {
		for _, s := range c.relay.Statuses() {
			out = append(out, api.BotStatus{Platform: s.Platform, State: s.State, Since: s.Since, Attempt: s.Attempt, Error: s.Error})
		}
	}
	for _, m := range c.missing {
		if i := slices.IndexFunc(out, func(s api.BotStatus) bool { return s.Platform == m.part }); i >= 0 {
			out[i].Error += "; " + m.err.Error()
			continue
		}
		out = append(out, api.BotStatus{Platform: m.part, State: botNotStarted, Since: c.since, Error: m.err.Error()})
	}
	slices.SortStableFunc(out, func(a, b api.BotStatus) int { return strings.Compare(a.Platform, b.Platform) })
	return out
}

// chatCheck is agentctl doctor's check of the bots: their connections, and each secret
// a bot that did not start lacks, with its fix. A reload replaces the bot set, so the
// check asks live for the current one; none before the bots start.
func chatCheck(live *liveBots) agent.HealthCheck {
	return func(context.Context) []api.Check {
		live.mu.Lock()
		cur := live.cur
		live.mu.Unlock()
		var out []api.Check
		if cur != nil {
			for _, m := range cur.missing {
				out = append(out, api.Check{Name: m.part, Status: api.CheckFail, Detail: "not started: " + m.err.Error(), Fix: m.fix})
			}
		}
		return append(out, botChecks(live.statuses(), time.Now())...)
	}
}

// botChecks judges connections: up is ok, connecting for under 30 s a warning, anything
// else a failure with what to check. A bot not started for its secrets is chatCheck's.
func botChecks(sts []api.BotStatus, now time.Time) []api.Check {
	var out []api.Check
	for _, s := range sts {
		if s.State == botNotStarted {
			continue
		}
		ch := api.Check{Name: s.Platform, Status: api.CheckOK, Detail: "connected since " + s.Since.Format(time.RFC3339)}
		switch {
		case s.State == bots.StateConnecting && now.Sub(s.Since) < 30*time.Second:
			ch.Status, ch.Detail = api.CheckWarn, "connecting"
		case s.State != bots.StateConnected:
			ch.Status = api.CheckFail
			ch.Detail = fmt.Sprintf("%s since %s", s.State, s.Since.Format(time.RFC3339))
			if s.Attempt > 0 {
				ch.Detail += fmt.Sprintf(" (attempt %d)", s.Attempt)
			}
			if s.Error != "" {
				ch.Detail += ": " + s.Error
			}
			ch.Fix = fixFor(s.Platform)
		}
		out = append(out, ch)
	}
	return out
}

// fixFor says what to check when a bot cannot connect.
func fixFor(platform string) string {
	switch platform {
	case "slack":
		return "check the tokens ([slack] bot_token_env/app_token_env), that Socket Mode is on for the app, and that this machine reaches slack.com; agentd retries with backoff"
	case "discord":
		return "check the token ([discord] token_env), that the Message Content intent is on for the bot, and that this machine reaches discord.com; agentd retries with backoff"
	}
	return "agentd retries with backoff; its log says why the connection failed"
}
