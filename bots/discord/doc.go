// Package discord is agentd's Discord front end: a thin bots.Adapter over discordgo's
// gateway session, and the Discord-specific pieces it is made of.
//
// The Bot (bot.go) keeps one gateway connection (intents: guilds, guild and direct
// messages, message content) with its own reconnect loop, backoff and a heartbeat-ACK
// watchdog, and registers /agent at start (per configured guild, else globally). It
// turns mentions, direct messages, thread replies, button clicks, the feedback modal and
// /agent into calls on the shared relay (package bots), and renders the relay's messages
// as escaped markdown with buttons; clicks are answered with a deferred update and the
// proposal message is edited when the daemon's decision comes back.
//
// The pieces: how a proposal looks (escaped markdown, no pings, Approve / Approve ×N /
// Deny / Feedback… buttons), the custom IDs those buttons carry and their strict parsing,
// the feedback modal, the rule that sends text over Discord's 2,000-character limit as
// an attachment, the /agent slash command, and the approver check by user or role ID.
// Tests run the real discordgo client against the loopback fake in
// bots/discord/fakediscord.
package discord
