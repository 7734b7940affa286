package server

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/bots/slack"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/store"
)

// startBots starts the relay and the enabled chat bots; they stop when ctx ends, and
// wait returns once they have. A platform being down never stops the daemon: the bots
// reconnect with backoff on their own.
func startBots(ctx context.Context, cfg *config.Config, svc bots.Service, st *store.Store, log *slog.Logger) (wait func(), err error) {
	if !cfg.Slack.Enabled {
		return func() {}, nil
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
		ApproveN: cfg.Bots.ApproveCount, Expiry: cfg.Bots.DecisionExpiry.Duration})
	bot, err := slack.New(slack.Options{BotToken: botToken, AppToken: appToken, APIURL: s.APIURL, Relay: relay, Log: log})
	if err != nil {
		return nil, err
	}
	relay.Add(bot, slackRules(s))
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); relay.Run(ctx) }()
	go func() { defer wg.Done(); bot.Run(ctx) }()
	log.Info("slack bot starting", "channels", len(s.Channels), "direct_messages", s.DirectMessages)
	return wg.Wait, nil
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
