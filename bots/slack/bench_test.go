package slack

import (
	"testing"

	"github.com/agentd/agentd/internal/chattest"
)

// BenchmarkApprovalRoundTrip measures a button click until the approved command starts:
// Socket Mode envelope → slack-go → relay → Decide → the agent loop → the command.
func BenchmarkApprovalRoundTrip(b *testing.B) { chattest.BenchApprovalRoundTrip(b, newChat(b)) }
