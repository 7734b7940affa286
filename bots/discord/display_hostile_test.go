package discord

import (
	"testing"

	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/internal/chattest"
)

// Every hostile string a message carries reaches Discord escaped, none raw.
func TestMessagesEscapeEveryHostileCharacter(t *testing.T) {
	chattest.CheckHostileEscaped(t, Platform, "1", func(m bots.Message) string { return FromMessage(m).Content })
}
