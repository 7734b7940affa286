// Package discord holds the Discord side of agentd's chat front end: how a proposal looks in
// a Discord thread (escaped markdown, no pings, Approve / Approve ×N / Deny / Feedback…
// buttons), the custom IDs those buttons carry and their strict parsing, the feedback modal,
// the rule that sends text over Discord's 2,000-character limit as an attachment, the /agent
// slash command, and the approver check by user or role ID.
//
// These pieces only build and read discordgo values; they do not talk to Discord or to the
// daemon. The adapter that connects them to the relay in package bots (and to discordgo's
// gateway session) builds on them; its tests use the loopback fake in
// bots/discord/fakediscord.
package discord
