package bots

import "github.com/agentd/agentd/api"

// The relay's records, kept by whatever Bindings the daemon gives it (the server keeps
// them in its store, daemon/server/chatstore); the relay never opens the store itself.

// Binding, ChatMessage and TeamBinding are the daemon's types for the same records.
type (
	Binding     = api.ChatBinding
	ChatMessage = api.ChatMessage
	TeamBinding = api.TeamBinding
)
