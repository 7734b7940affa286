package slack

import (
	"github.com/slack-go/slack"

	"github.com/agentd/agentd/bots"
)

// Blocks renders a relay message as Block Kit within Slack's limits.
func Blocks(m bots.Message) []slack.Block {
	blocks, _ := render(m)
	return blocks
}
