package server

import (
	"context"
	"fmt"
	"os"

	"github.com/agentd/agentd/daemon/agent"
	"github.com/agentd/agentd/daemon/client"
	"github.com/agentd/agentd/daemon/config"
)

// tokenFileCheck is doctor's check of the chat bots' token files: one that group or
// others may read or write fails, since whoever reads it acts as the bot. The HTTP
// listener's token file has its own check (httpListener.tokenCheck). nil when the config
// names no such file.
func tokenFileCheck(cfg *config.Config) agent.HealthCheck {
	type tokenFile struct {
		key, path string
		enabled   bool
	}
	var files []tokenFile
	for _, f := range []tokenFile{
		{"slack.bot_token_file", cfg.Slack.BotTokenFile, cfg.Slack.Enabled},
		{"slack.app_token_file", cfg.Slack.AppTokenFile, cfg.Slack.Enabled},
		{"discord.token_file", cfg.Discord.TokenFile, cfg.Discord.Enabled},
	} {
		if f.path != "" {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		return nil
	}
	return func(context.Context) []client.Check {
		var out []client.Check
		for _, f := range files {
			c := client.Check{Name: "token file", Status: client.CheckOK}
			fi, err := os.Stat(f.path)
			switch {
			case err != nil && !f.enabled:
				continue // a bot that is off reads no token
			case err != nil:
				c.Status, c.Detail = client.CheckFail, fmt.Sprintf("%s (%s): %v", f.path, f.key, err)
				c.Fix = "write the token to " + f.path + " with (umask 077; cat > " + f.path + "), or fix " + f.key + " in the config"
			case fi.Mode().Perm()&0o077 != 0:
				c.Status = client.CheckFail
				c.Detail = fmt.Sprintf("%s (%s) has mode %04o: others on this machine can read the token and act as the bot", f.path, f.key, fi.Mode().Perm())
				c.Fix = "chmod 600 " + f.path
			default:
				c.Detail = fmt.Sprintf("%s (%s) is private (mode %04o)", f.path, f.key, fi.Mode().Perm())
			}
			out = append(out, c)
		}
		return out
	}
}
