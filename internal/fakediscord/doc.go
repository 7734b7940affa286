// Package fakediscord is a loopback fake of Discord — REST (v9 and v10 paths) and the
// gateway websocket — good enough that the real discordgo client (v0.29.0) runs against it
// unmodified. The Discord adapter's tests (and agentd's end-to-end tests) use it in place of
// discord.com; nothing leaves 127.0.0.1.
//
// # Pointing discordgo at the fake
//
// discordgo has no base-URL option: every REST URL comes from package-level strings
// (discordgo.EndpointAPI, EndpointChannels, EndpointWebhooks, …) computed once at init, and
// the gateway URL comes from GET {EndpointGateway} when a session first opens. A test must
// therefore reassign all of those strings before creating a session:
//
//	fake := fakediscord.Start(t, fakediscord.Config{Guilds: []fakediscord.Guild{guild}})
//	fake.Use(t) // = t.Cleanup(fakediscord.PointDiscordgo(fake.URL()))
//	s, _ := discordgo.New("Bot " + fake.Token())
//	s.Identify.Intents = discordgo.IntentsGuilds | discordgo.IntentsGuildMessages | discordgo.IntentMessageContent
//	// add handlers, then s.Open(), and register after fake.Use(t):
//	t.Cleanup(func() { fake.Settle(ctx); s.Close() })
//
// The strings are process-wide, so such tests must not call t.Parallel with each other.
// A session caches its gateway URL after the first Open, so use a new session per fake.
// Call Settle (wait for the newest connection's first heartbeat) before closing a session
// and before Drop/CloseGateway/RequestReconnect: discordgo v0.29.0 has a race right after
// Open that otherwise turns a clean close into a resurrected session and a reconnect into a
// lost session (see Settle).
//
// # What the fake does
//
// Gateway: HELLO (op 10) with Config.HeartbeatInterval; IDENTIFY (op 2) checks the token,
// the intents (4013 invalid, 4014 privileged but not allowed) and answers READY plus one
// GUILD_CREATE per configured guild (with the GUILDS intent); heartbeats (op 1) get ACKs
// (op 11) unless PauseHeartbeatACKs; RESUME (op 6) replays every dispatch after the client's
// sequence and sends RESUMED, or op 9 INVALID_SESSION when the session is gone. Payloads are
// JSON text frames: zlib compression is off whatever IDENTIFY asks, and ?compress=zlib-stream
// is refused. Dispatches honour intents (GUILD_MESSAGES, DIRECT_MESSAGES, and
// MESSAGE_CONTENT blanks content as Discord does). Sessions buffer dispatches while
// disconnected, so Drop, CloseGateway, RequestReconnect (op 7) and InvalidateSessions (op 9)
// let tests check a client reconnects and loses nothing.
//
// REST: messages (JSON or multipart with files[n] and payload_json; create, get, edit),
// threads (from a message — the thread gets the message's ID — or without one), channels,
// guild members and roles, bulk overwrite and list of global and guild commands, interaction
// callbacks (types 4, 5, 6, 7, 9), follow-up webhook messages and GET/PATCH/DELETE of
// @original and follow-ups, GET /gateway and /gateway/bot. Bodies are validated the way
// Discord does where it matters to an adapter: content over 2,000 characters, empty
// messages, component layout and custom_id rules, modal shape, allowed_mentions, command
// names and options. Errors are Discord-shaped, {"message": …, "code": …} with the usual
// codes (10003 Unknown Channel, 10008 Unknown Message, 10062 Unknown interaction, 40060
// already acknowledged, 50035 Invalid Form Body with nested "errors", …). Mentions in bot
// messages are resolved through allowed_mentions, so Message.Mentions and MentionEveryone
// say who would really have been pinged. RateLimitNext injects a 429 with retry_after.
//
// Limits and clocks as on Discord: every first interaction response must come within 3 s
// (Config.InteractionDeadline; 10062 after), follow-ups and edits of @original within the
// token's 15 minutes (50027 after); 5 action rows, 2,000 characters of content, custom_id
// up to 100. Threads age: one idle for its auto_archive_duration is archived, Advance moves
// the fake's clock (ArchiveThread and LockThread act at once; a thread closed and locked
// is both). Sending in an archived thread unarchives it; editing in one fails with 50083
// until PATCH /channels/{id} {"archived":false}; a locked thread refuses messages and edits
// (160005) and unarchiving (50013) unless Config.ManageThreads; ForbidPosting takes the
// bot's Send Messages away in a channel or thread (posts 50013, edits still allowed, as on
// Discord). A person's reply pings the replied-to author by default, as Discord's client
// does: that author is in the message's mentions though its text names nobody
// (Message.NoReplyPing turns it off). EditMessage is a person's edit (MESSAGE_UPDATE with
// edited_timestamp). Message flags are kept per message: SUPPRESS_EMBEDS on
// create, edit (an edit may only change that flag), interaction responses and follow-ups,
// and Message.Previewed lists every link a real client would have unfurled (a bare URL in
// a version of the message sent without the flag). ReplayOnResume makes the next RESUME
// replay dispatches the client has handled already (same message and interaction IDs).
//
// Edits follow Discord's PATCH rules: absent or null fields are left alone, so an update
// (callback type 7) that sends "components": null keeps the buttons.
//
// Tests drive it from the other side with Post/PostMessage (MESSAGE_CREATE from a person or
// another bot), Click (a button), Command (a slash command), SubmitModal and Interact (raw),
// and observe it with Calls/WaitCall (every REST call: method, path, decoded body, files,
// answer), Frames/WaitFrameFrom (every gateway payload a client sent), Message, Messages,
// Channel, Commands and InteractionResponse. Waiting is by condition, never by sleeping.
package fakediscord
