// Package discord is agentd's Discord front end: a thin bots.Adapter over discordgo's
// gateway session, and the Discord-specific pieces it is made of.
//
// The Bot (bot.go) keeps one gateway connection (intents: guilds, guild and direct
// messages, message content) with its own reconnect loop, backoff and a heartbeat-ACK
// watchdog, and registers /agent at start (per configured guild, else globally). It
// turns mentions (written in the text: a reply's ping is none), direct messages, thread
// replies, replies in the channel to a thread's starting message, edits (MESSAGE_UPDATE
// with edited_timestamp), button clicks, the feedback modal and /agent into calls on the
// shared relay (package bots), and renders the relay's messages
// as escaped markdown with buttons; clicks are answered with a deferred update and the
// proposal message is edited when the daemon's decision comes back.
//
// What real Discord asks of it: every interaction is acknowledged before any other call
// (deferred; sent outside discordgo's rate limiter, so a 429 on posts cannot push it past
// 3 s), a redelivered one (40060) is ignored; every message and edit carries
// SUPPRESS_EMBEDS, so no link is fetched before anyone approved; limits apply to the final
// escaped text, cut with bots.Fit and said ("truncated — full text attached") with the
// full text as a file; an edit replaces the attachments with the new text's; an archived
// thread is unarchived to edit in it (50083), and one the bot can no longer write in
// (locked, closed and locked, its right to post taken: 160005, 50013, 50001) is continued
// in a new thread linked from the channel, whose replies go to the old thread's run, and
// where an edit that cannot land there (a decision) is posted instead, naming the old
// thread; the relay stores the run's binding to the new thread, so a restart keeps it
// (threads.go).
// Buttons carry the shown proposal's hash (custom ID v2); older buttons are refused.
//
// The pieces: how a proposal looks (escaped markdown, no pings, Approve / Approve ×N /
// Deny / Feedback… buttons), the custom IDs those buttons carry and their strict parsing,
// the feedback modal, the rule that sends text over Discord's 2,000-character limit as
// an attachment, the /agent slash command, and the approver check by user or role ID.
// Tests run the real discordgo client against the loopback fake in
// internal/fakediscord.
package discord
