package config

import (
	"regexp"
)

// DiscordConfig is the [discord] section: the Discord bot (a gateway connection; no
// public URL).
type DiscordConfig struct {
	Enabled bool `toml:"enabled"`
	// TokenEnv / TokenFile name where the bot token is read from; a file wins over the
	// variable. The token itself never goes in this file and is never logged.
	TokenEnv  string `toml:"token_env"`
	TokenFile string `toml:"token_file"`
	// ApplicationID registers /agent; empty takes it from the gateway's READY.
	ApplicationID string `toml:"application_id"`
	// Guilds are the server ids served (empty: any the bot is in); /agent is registered
	// in each (at once), else globally (Discord takes up to an hour to show it).
	Guilds []string `toml:"guilds"`
	// Approvers may decide, start runs and stop agents: user ids. ApproverRoles: role ids
	// whose members may. Nobody may when both are empty.
	Approvers     []string `toml:"approvers"`
	ApproverRoles []string `toml:"approver_roles"`
	// DirectMessages serves direct messages to the bot.
	DirectMessages bool `toml:"direct_messages"`
	// Channels are the channels served, by id, each with approvers of its own
	// ([discord.channels.ID]); threads in them are served too.
	Channels map[string]DiscordAccess `toml:"channels"`
	// Agents name approvers for one agent, by agent name ([discord.agents.NAME]).
	Agents map[string]DiscordAccess `toml:"agents"`
	// APIURL is Discord's base URL; the bot speaks Discord API v9 there (discordgo
	// v0.29's version: REST under api/v9/, the gateway with v=9). Change it only to test
	// against a fake.
	APIURL string `toml:"api_url"`
}

// DiscordAccess is one [discord.channels.ID] or [discord.agents.NAME] table; empty
// lists mean the section's approvers.
type DiscordAccess struct {
	Approvers     []string `toml:"approvers"`
	ApproverRoles []string `toml:"approver_roles"`
}

// DefaultDiscordURL is Discord's own base URL.
const DefaultDiscordURL = "https://discord.com/"

func defaultDiscord() DiscordConfig {
	return DiscordConfig{TokenEnv: "DISCORD_BOT_TOKEN", Guilds: []string{}, Approvers: []string{}, ApproverRoles: []string{},
		APIURL: DefaultDiscordURL}
}

// snowflakeRE matches Discord ids: 17 to 20 digits.
var snowflakeRE = regexp.MustCompile(`^[0-9]{17,20}$`)

func (d *DiscordConfig) problems(bad func(key, format string, args ...any)) {
	ids := func(key string, list []string, what string) {
		for i, id := range list {
			if !snowflakeRE.MatchString(id) {
				bad(key, "item %d: %q is not a Discord %s id (17 to 20 digits; turn on Developer Mode and use Copy ID)", i+1, id, what)
			}
		}
	}
	ids("discord.guilds", d.Guilds, "server")
	ids("discord.approvers", d.Approvers, "user")
	ids("discord.approver_roles", d.ApproverRoles, "role")
	if d.ApplicationID != "" && !snowflakeRE.MatchString(d.ApplicationID) {
		bad("discord.application_id", "%q is not a Discord application id (17 to 20 digits)", d.ApplicationID)
	}
	for _, sec := range []struct {
		key, what string // the tables' key prefix; what each table's name must be
		ok        func(string) bool
		tables    map[string]DiscordAccess
	}{
		{"discord.channels.", "a Discord channel id (17 to 20 digits)", snowflakeRE.MatchString, d.Channels},
		{"discord.agents.", "an agent name (lowercase letters, digits, - and _)", agentNameRE.MatchString, d.Agents},
	} {
		for _, name := range sortedKeys(sec.tables) {
			key := sec.key + name
			if !sec.ok(name) {
				bad(key, "%q is not %s", name, sec.what)
			}
			ids(key+".approvers", sec.tables[name].Approvers, "user")
			ids(key+".approver_roles", sec.tables[name].ApproverRoles, "role")
		}
	}
	checkBot("discord", map[string]string{"token": d.TokenEnv}, map[string]string{"token": d.TokenFile}, d.APIURL, DefaultDiscordURL, bad)
	if d.Enabled {
		if d.TokenEnv == "" && d.TokenFile == "" {
			bad("discord.token_env", "the bot needs a token: set token_env or token_file")
		}
		checkServes("discord", len(d.Channels), d.DirectMessages, bad)
	}
}
