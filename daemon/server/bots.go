package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/bots/slack"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/metrics"
	"github.com/agentd/agentd/daemon/schedules"
	"github.com/agentd/agentd/daemon/store"
)

// chatBots are the relay and the enabled chat bots, made before the schedules' manager
// (which delivers runs through the relay) and started after the supervisor.
type chatBots struct {
	relay *bots.Relay // nil when no bot is enabled
	runs  []func(ctx context.Context)
	log   *slog.Logger
	slack *config.SlackConfig
	// tokens fingerprints the secrets the bots were built with (botTokens), so a reload
	// sees a rotated token file even when no config key changed.
	tokens string
}

var _ schedules.Chat = (*bots.Relay)(nil)

// newBots makes the relay and the enabled bots. Secrets missing are an error.
func newBots(cfg *config.Config, svc bots.Service, st *store.Store, log *slog.Logger, mx *metrics.Metrics) (*chatBots, error) {
	tokens, err := botTokens(cfg)
	if err != nil {
		return nil, err
	}
	c := &chatBots{log: log, tokens: tokens}
	if !cfg.Slack.Enabled {
		return c, nil
	}
	s := &cfg.Slack
	botToken, err := secret("slack bot token", s.BotTokenEnv, s.BotTokenFile)
	if err != nil {
		return nil, err
	}
	appToken, err := secret("slack app token", s.AppTokenEnv, s.AppTokenFile)
	if err != nil {
		return nil, err
	}
	relay := bots.New(bots.Options{Service: svc, Bindings: bots.StoreBindings(st), Log: log,
		ApproveN: cfg.Bots.ApproveCount, Expiry: cfg.Bots.DecisionExpiry.Duration, OnExpired: mx.DecisionExpired})
	mx.SetBotConnected(slack.Platform, false)
	bot, err := slack.New(slack.Options{BotToken: botToken, AppToken: appToken, APIURL: s.APIURL, Relay: relay, Log: log,
		OnConnection: func(up bool) { mx.SetBotConnected(slack.Platform, up) }})
	if err != nil {
		return nil, err
	}
	relay.Add(bot, slackRules(s))
	c.relay, c.slack = relay, s
	c.runs = []func(context.Context){func(ctx context.Context) { relay.Run(ctx) }, func(ctx context.Context) { bot.Run(ctx) }}
	return c, nil
}

// chat is where schedules deliver runs: nil without bots.
func (c *chatBots) chat() schedules.Chat {
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
		wg.Add(1)
		go func() { defer wg.Done(); run(ctx) }()
	}
	if c.slack != nil {
		c.log.Info("slack bot starting", "channels", len(c.slack.Channels), "direct_messages", c.slack.DirectMessages)
	}
	return wg.Wait
}

// botTokens reads the enabled bots' tokens, as newBots does, and returns a fingerprint
// of them (a hash: the tokens themselves are kept nowhere else). "" without bots.
func botTokens(cfg *config.Config) (string, error) {
	if !cfg.Slack.Enabled {
		return "", nil
	}
	s := &cfg.Slack
	h := sha256.New()
	for _, t := range []struct{ what, env, file string }{
		{"slack bot token", s.BotTokenEnv, s.BotTokenFile}, {"slack app token", s.AppTokenEnv, s.AppTokenFile},
	} {
		v, err := secret(t.what, t.env, t.file)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%s\x00", t.what, v)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
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
func slackRules(s *config.SlackConfig) bots.Rules {
	access := func(ids []string) bots.Access {
		var a bots.Access
		for _, id := range ids {
			if strings.HasPrefix(id, "S") {
				a.Groups = append(a.Groups, id)
			} else {
				a.Users = append(a.Users, id)
			}
		}
		return a
	}
	r := bots.Rules{Teams: s.Teams, DM: s.DirectMessages, Approvers: access(s.Approvers),
		Channels: map[string]bots.Access{}, Agents: map[string]bots.Access{}}
	for id, c := range s.Channels {
		r.Channels[id] = access(c.Approvers)
	}
	for name, a := range s.Agents {
		r.Agents[name] = access(a.Approvers)
	}
	return r
}
