package discord

import (
	"testing"

	"github.com/agentd/agentd/internal/chattest"
)

// BenchmarkApprovalRoundTrip measures an Approve click until the approved command starts:
// INTERACTION_CREATE on the gateway → discordgo → the deferred update → relay → Decide →
// the agent loop → the command.
func BenchmarkApprovalRoundTrip(b *testing.B) { chattest.BenchApprovalRoundTrip(b, newChat(b)) }
