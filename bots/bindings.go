package bots

import "github.com/agentd/agentd/api"

// The relay's records, kept by whatever Bindings the daemon gives it (the server keeps
// them in its store, daemon/server/chatstore); the relay never opens the store itself.

// Binding ties a chat thread to an agent's run; ChatMessage is a proposal's or a
// question's post; TeamBinding ties a chat thread to a team run.
type (
	Binding     = api.ChatBinding
	ChatMessage = api.ChatMessage
	TeamBinding = api.TeamBinding
)
