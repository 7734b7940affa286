package fakediscord

import (
	"github.com/agentd/agentd/bots/discord/endpoint"
)

// PointDiscordgo points every discordgo endpoint string at base (e.g. "http://127.0.0.1:PORT/",
// the trailing slash optional), keeping discordgo.APIVersion, and returns a function that
// restores the previous values. The strings are process-wide: sessions made while they point
// at a fake talk to it, so tests doing this must not run in parallel with each other.
func PointDiscordgo(base string) (restore func()) { return endpoint.Point(base) }

// Use points discordgo at s until the test ends (see PointDiscordgo). Call it before
// creating sessions, and close sessions before the test ends (a t.Cleanup registered after
// Use runs before the restore).
func (s *Server) Use(t interface{ Cleanup(func()) }) {
	t.Cleanup(PointDiscordgo(s.URL()))
}
