package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/bots/discord"
	"github.com/agentd/agentd/bots/slack"
	"github.com/agentd/agentd/daemon/agent"
	"github.com/agentd/agentd/daemon/client"
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
	relay   *bots.Relay // nil when no bot is enabled
	runs    []func(ctx context.Context)
	log     *slog.Logger
	slack   *config.SlackConfig
	discord *config.DiscordConfig
	// tokens fingerprints the secrets the bots were built with (botTokens), so a reload
	// sees a rotated token file even when no config key changed.
	tokens string
}

var _ schedule.Chat = (*bots.Relay)(nil)

// newBots makes the relay and the enabled bots; Slack and Discord share the relay, which
// starts team runs from chat with teams (nil: none) and the workflows in [teams] dir.
// Secrets missing are an error.
func newBots(cfg *config.Config, svc bots.Service, teams *team.Engine, st *store.Store, log *slog.Logger, mx *metrics.Metrics) (*chatBots, error) {
	tok, tokens, err := readBotTokens(cfg)
	if err != nil {
		return nil, err
	}
	c := &chatBots{log: log, tokens: tokens}
	if !cfg.Slack.Enabled && !cfg.Discord.Enabled {
		return c, nil
	}
	relay := bots.New(bots.Options{Service: svc, Bindings: chatstore.New(st), Log: log,
		ApproveN: cfg.Bots.ApproveCount, Expiry: cfg.Bots.DecisionExpiry.Duration, OnExpired: mx.DecisionExpired,
		Audit: chatstore.New(st).Audit})
	if teams != nil {
		relay.SetTeams(team.Shelf{Engine: teams, Dir: cfg.Teams.Dir})
	}
	if cfg.Slack.Enabled {
		s := &cfg.Slack
		botToken, appToken := tok[slackBotToken], tok[slackAppToken]
		mx.SetBotConnected(slack.Platform, false)
		bot, err := slack.New(slack.Options{BotToken: botToken, AppToken: appToken, APIURL: s.APIURL, Relay: relay, Log: log,
			OnConnection: func(up bool) { mx.SetBotConnected(slack.Platform, up) }})
		if err != nil {
			return nil, err
		}
		rules, err := slackRules(s)
		if err != nil {
			return nil, err
		}
		relay.Add(bot, rules)
		c.slack = s
		c.runs = append(c.runs, func(ctx context.Context) { bot.Run(ctx) })
	}
	if cfg.Discord.Enabled {
		d := &cfg.Discord
		token := tok[discordToken]
		mx.SetBotConnected(discord.Platform, false)
		bot, err := discord.New(discord.Options{Token: token, ApplicationID: d.ApplicationID, Guilds: d.Guilds,
			APIURL: d.APIURL, Relay: relay, Log: log, OnConnection: func(up bool) { mx.SetBotConnected(discord.Platform, up) }})
		if err != nil {
			return nil, err
		}
		rules, err := discordRules(d)
		if err != nil {
			return nil, err
		}
		relay.Add(bot, rules)
		c.discord = d
		c.runs = append(c.runs, func(ctx context.Context) { bot.Run(ctx) })
	}
	c.relay = relay
	c.runs = append(c.runs, func(ctx context.Context) { relay.Run(ctx) })
	return c, nil
}

// chat is where schedules deliver runs: nil without bots.
func (c *chatBots) chat() schedule.Chat {
	if c.relay == nil {
		return nil
	}
	return c.relay
}

// start runs the relay and the bots until ctx ends; wait returns once they have. A
// platform being down never stops the daemon: the bots reconnect with backoff.
func (c *chatBots) start(ctx context.Context) (wait func()) {
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

// readBotTokens reads the enabled bots' tokens, each once, and a fingerprint of them (a
// hash, so a reload can see a rotated token file without keeping the tokens). "" without
// bots.
func readBotTokens(cfg *config.Config) (map[string]string, string, error) {
	type where struct{ what, env, file string }
	var secrets []where
	if s := &cfg.Slack; s.Enabled {
		secrets = append(secrets, where{slackBotToken, s.BotTokenEnv, s.BotTokenFile}, where{slackAppToken, s.AppTokenEnv, s.AppTokenFile})
	}
	if d := &cfg.Discord; d.Enabled {
		secrets = append(secrets, where{discordToken, d.TokenEnv, d.TokenFile})
	}
	if len(secrets) == 0 {
		return nil, "", nil
	}
	tokens := map[string]string{}
	h := sha256.New()
	for _, t := range secrets {
		v, err := secret(t.what, t.env, t.file)
		if err != nil {
			return nil, "", err
		}
		tokens[t.what] = v
		fmt.Fprintf(h, "%s\x00%s\x00", t.what, v)
	}
	return tokens, hex.EncodeToString(h.Sum(nil)), nil
}

// botTokens is the fingerprint of the enabled bots' tokens (readBotTokens).
func botTokens(cfg *config.Config) (string, error) {
	_, fp, err := readBotTokens(cfg)
	return fp, err
}

// secret reads a token from a file (which wins) or an environment variable. Errors name
// where it was looked for, never what was found.
func secret(what, env, file string) (string, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("%s: %w", what, err)
		}
		if v := strings.TrimSpace(string(b)); v != "" {
			return v, nil
		}
		return "", fmt.Errorf("%s: %s is empty", what, file)
	}
	if v := strings.TrimSpace(os.Getenv(env)); v != "" {
		return v, nil
	}
	return "", fmt.Errorf("%s: $%s is not set (or set a file in the config)", what, env)
}

// slackRules turns [slack] into the relay's rules: ids starting with S are user groups.
// Mentions pasted from Slack (<@U123>, <!subteam^S123|@team>) are read as the ids they
// name; an entry that names no id is an error, since it would never match.
func slackRules(s *config.SlackConfig) (bots.Rules, error) {
	access := func(where string, ids []string) (bots.Access, error) {
		var a bots.Access
		for _, raw := range ids {
			id, group, err := bots.ParseApprover(raw)
			if err != nil {
				return a, fmt.Errorf("[slack%s] approvers: %w", where, err)
			}
			if group || strings.HasPrefix(id, "S") {
				a.Groups = append(a.Groups, id)
			} else {
				a.Users = append(a.Users, id)
			}
		}
		return a, nil
	}
	r := bots.Rules{Teams: s.Teams, DM: s.DirectMessages, Channels: map[string]bots.Access{}, Agents: map[string]bots.Access{}}
	var err error
	if r.Approvers, err = access("", s.Approvers); err != nil {
		return r, err
	}
	for id, c := range s.Channels {
		if r.Channels[id], err = access(".channels."+id, c.Approvers); err != nil {
			return r, err
		}
	}
	for name, a := range s.Agents {
		if r.Agents[name], err = access(".agents."+name, a.Approvers); err != nil {
			return r, err
		}
	}
	return r, nil
}

// discordRules turns [discord] into the relay's rules: user ids and role ids are listed
// apart, since both are snowflakes. A pasted mention goes by what it mentions: <@123> is a
// user and <@&123> a role, in either list; an entry that names no id is an error.
func discordRules(d *config.DiscordConfig) (bots.Rules, error) {
	access := func(where string, users, roles []string) (bots.Access, error) {
		var a bots.Access
		for i, raw := range slices.Concat(users, roles) {
			list := "approvers"
			if i >= len(users) {
				list = "approver_roles"
			}
			id, group, err := bots.ParseApprover(raw)
			if err != nil {
				return a, fmt.Errorf("[discord%s] %s: %w", where, list, err)
			}
			if group || (list == "approver_roles" && !strings.HasPrefix(strings.TrimSpace(raw), "<")) {
				a.Groups = append(a.Groups, id)
			} else {
				a.Users = append(a.Users, id)
			}
		}
		return a, nil
	}
	r := bots.Rules{Teams: d.Guilds, DM: d.DirectMessages, Channels: map[string]bots.Access{}, Agents: map[string]bots.Access{}}
	var err error
	if r.Approvers, err = access("", d.Approvers, d.ApproverRoles); err != nil {
		return r, err
	}
	for id, c := range d.Channels {
		if r.Channels[id], err = access(".channels."+id, c.Approvers, c.ApproverRoles); err != nil {
			return r, err
		}
	}
	for name, a := range d.Agents {
		if r.Agents[name], err = access(".agents."+name, a.Approvers, a.ApproverRoles); err != nil {
			return r, err
		}
	}
	return r, nil
}

// statuses are the bots' connections, for agentctl status.
func (c *chatBots) statuses() []client.BotStatus {
	if c == nil || c.relay == nil {
		return nil
	}
	var out []client.BotStatus
	for _, s := range c.relay.Statuses() {
		out = append(out, client.BotStatus{Platform: s.Platform, State: s.State, Since: s.Since, Attempt: s.Attempt, Error: s.Error})
	}
	return out
}

// chatCheck is agentctl doctor's check of the bots' connections. A reload replaces the
// bot set, so the check asks live for the current one; none before the bots start.
func chatCheck(live *liveBots) agent.HealthCheck {
	return func(context.Context) []client.Check { return botChecks(live.statuses(), time.Now()) }
}

// botChecks judges connections: up is ok, connecting for under 30 s a warning, anything
// else a failure with what to check.
func botChecks(sts []client.BotStatus, now time.Time) []client.Check {
	var out []client.Check
	for _, s := range sts {
		ch := client.Check{Name: s.Platform, Status: client.CheckOK, Detail: "connected since " + s.Since.Format(time.RFC3339)}
		switch {
		case s.State == bots.StateConnecting && now.Sub(s.Since) < 30*time.Second:
			ch.Status, ch.Detail = client.CheckWarn, "connecting"
		case s.State != bots.StateConnected:
			ch.Status = client.CheckFail
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
