package server

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/agentd/agentd/daemon/config"
)

// neededSecret is a secret the config needs: a bot's token, the HTTP listener's. It is
// read from a file when the config names one, else from an environment variable.
type neededSecret struct {
	what     string // as people call it: "slack bot token"
	part     string // what cannot run without it: slack, discord, http
	envKey   string // the config keys naming where it is read, e.g. slack.bot_token_env
	env      string
	fileKey  string
	file     string
	tokenFix string // how to make one, for a secret agentd's user makes (the HTTP token)
}

// tokenSources are every token the config says where to read, needed or not: the
// bots' and the HTTP listener's.
func tokenSources(cfg *config.Config) []neededSecret {
	s, d := &cfg.Slack, &cfg.Discord
	return []neededSecret{
		{what: slackBotToken, part: "slack", envKey: "slack.bot_token_env", env: s.BotTokenEnv, fileKey: "slack.bot_token_file", file: s.BotTokenFile},
		{what: slackAppToken, part: "slack", envKey: "slack.app_token_env", env: s.AppTokenEnv, fileKey: "slack.app_token_file", file: s.AppTokenFile},
		{what: discordToken, part: "discord", envKey: "discord.token_env", env: d.TokenEnv, fileKey: "discord.token_file", file: d.TokenFile},
		httpSecret(cfg.HTTP),
	}
}

// neededSecrets are the secrets cfg needs: each enabled bot's tokens, and the HTTP
// listener's token when it listens.
func neededSecrets(cfg *config.Config) []neededSecret {
	on := map[string]bool{"slack": cfg.Slack.Enabled, "discord": cfg.Discord.Enabled, "http": cfg.HTTP.Listen != ""}
	return slices.DeleteFunc(tokenSources(cfg), func(s neededSecret) bool { return !on[s.part] })
}

// httpSecret is the HTTP listener's bearer token.
func httpSecret(h config.HTTPConfig) neededSecret {
	return neededSecret{what: "http token", part: "http", envKey: "http.token_env", env: h.TokenEnv, fileKey: "http.token_file", file: h.TokenFile,
		tokenFix: "`openssl rand -hex 32` makes one"}
}

// read reads the secret as agentd does, from its own environment; its error names where
// it looked, fix how to mend it.
func (s neededSecret) read() (string, error) { return s.readFrom(os.LookupEnv) }

// readFrom reads the secret from its file (which wins) or the environment getenv reads.
// Errors name where it was looked for, never what was found.
func (s neededSecret) readFrom(getenv func(string) (string, bool)) (string, error) {
	if s.file != "" {
		b, err := os.ReadFile(s.file)
		if err != nil {
			return "", fmt.Errorf("%s: %w", s.what, err)
		}
		if v := strings.TrimSpace(string(b)); v != "" {
			return v, nil
		}
		return "", fmt.Errorf("%s: %s is empty", s.what, s.file)
	}
	if v, _ := getenv(s.env); strings.TrimSpace(v) != "" {
		return strings.TrimSpace(v), nil
	}
	return "", fmt.Errorf("%s: $%s is not set", s.what, s.env)
}

// fix says where to put the secret so agentd finds it.
func (s neededSecret) fix() string {
	how := ""
	if s.tokenFix != "" {
		how = " (" + s.tokenFix + ")"
	}
	if s.file != "" {
		return fmt.Sprintf("write it to %s%s with (umask 077; cat > %s), or point %s at the file that holds it", s.file, how, s.file, s.fileKey)
	}
	return fmt.Sprintf("set %s%s in agentd's environment (as a service: a line %s=… in agentd.env beside the config, then restart agentd), or name a file holding it in %s",
		s.env, how, s.env, s.fileKey)
}

// key is the config key that says where the secret is read: its file's, when set.
func (s neededSecret) key() string {
	if s.file != "" {
		return s.fileKey
	}
	return s.envKey
}

// CheckSecrets finds every secret the config needs and agentd cannot read — each
// enabled bot's tokens, the HTTP listener's token — all at once, each with where it was
// looked for and its fix; getenv is the environment agentd would have. agentd
// --check-config reports them with the config's problems; the daemon itself starts
// without a bot whose tokens are missing (and says so in its log, status and doctor) but
// refuses to listen on TCP without a good token.
func CheckSecrets(cfg *config.Config, getenv func(string) (string, bool)) []config.Problem {
	var probs []config.Problem
	for _, s := range neededSecrets(cfg) {
		tok, err := s.readFrom(getenv)
		if err == nil && s.part == "http" {
			err = checkHTTPToken(tok)
		}
		if err != nil {
			probs = append(probs, config.Problem{Key: s.key(), Msg: fmt.Sprintf("%v: %s", err, s.fix())})
		}
	}
	return probs
}
