package fakediscord_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/agentd/agentd/internal/fakediscord"
)

// These tests run the real discordgo client against the fake. They share discordgo's
// process-wide endpoint strings, so none of them is parallel.

const (
	guildID    = "100000000000000001"
	channelID  = "100000000000000002"
	approverID = "100000000000000003" // role
)

var (
	alice = fakediscord.User{ID: "200000000000000001", Username: "alice"}
	bob   = fakediscord.User{ID: "200000000000000002", Username: "bob"}
	other = fakediscord.User{ID: "200000000000000003", Username: "otherbot", Bot: true}
)

func testConfig() fakediscord.Config {
	return fakediscord.Config{Guilds: []fakediscord.Guild{{
		ID: guildID, Name: "home",
		Roles:    []fakediscord.Role{{ID: approverID, Name: "approver", Permissions: "0"}},
		Channels: []fakediscord.Channel{{ID: channelID, Type: fakediscord.ChannelGuildText, Name: "agents"}},
		Members: []fakediscord.Member{
			{User: &alice, Roles: []string{approverID}},
			{User: &bob},
		},
	}}}
}

// events collects what discordgo hands to its handlers.
type events struct {
	ready    chan *discordgo.Ready
	guilds   chan *discordgo.GuildCreate
	messages chan *discordgo.MessageCreate
	updates  chan *discordgo.MessageUpdate
	inter    chan *discordgo.InteractionCreate
	resumed  chan *discordgo.Resumed
	connects chan *discordgo.Connect
	threads  chan *discordgo.ThreadCreate
}

func open(t *testing.T, fake *fakediscord.Server, intents discordgo.Intent) (*discordgo.Session, *events) {
	t.Helper()
	s, err := discordgo.New("Bot " + fake.Token())
	if err != nil {
		t.Fatal(err)
	}
	s.Identify.Intents = intents
	s.LogLevel = -1 // quiet: the drop tests make discordgo log read errors on purpose
	ev := &events{
		ready: make(chan *discordgo.Ready, 16), guilds: make(chan *discordgo.GuildCreate, 16),
		messages: make(chan *discordgo.MessageCreate, 64), updates: make(chan *discordgo.MessageUpdate, 64),
		inter: make(chan *discordgo.InteractionCreate, 16), resumed: make(chan *discordgo.Resumed, 16),
		threads: make(chan *discordgo.ThreadCreate, 16), connects: make(chan *discordgo.Connect, 16),
	}
	s.AddHandler(func(_ *discordgo.Session, e *discordgo.Connect) { ev.connects <- e })
	s.AddHandler(func(_ *discordgo.Session, e *discordgo.Ready) { ev.ready <- e })
	s.AddHandler(func(_ *discordgo.Session, e *discordgo.GuildCreate) { ev.guilds <- e })
	s.AddHandler(func(_ *discordgo.Session, e *discordgo.MessageCreate) { ev.messages <- e })
	s.AddHandler(func(_ *discordgo.Session, e *discordgo.MessageUpdate) { ev.updates <- e })
	s.AddHandler(func(_ *discordgo.Session, e *discordgo.InteractionCreate) { ev.inter <- e })
	s.AddHandler(func(_ *discordgo.Session, e *discordgo.Resumed) { ev.resumed <- e })
	s.AddHandler(func(_ *discordgo.Session, e *discordgo.ThreadCreate) { ev.threads <- e })
	if err := s.Open(); err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { closeSession(t, fake, s) })
	return s, ev
}

// closeSession waits for Settle first: see there for the discordgo race it avoids (a
// resurrected session would fetch the gateway URL from the endpoint strings again and join
// the next test's fake).
func closeSession(t *testing.T, fake *fakediscord.Server, s *discordgo.Session) {
	settle(t, fake)
	s.Close()
}

func settle(t *testing.T, fake *fakediscord.Server) {
	c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := fake.Settle(c); err != nil {
		t.Errorf("settle: %v", err)
	}
}

const allIntents = discordgo.IntentsGuilds | discordgo.IntentsGuildMessages | discordgo.IntentsDirectMessages | discordgo.IntentMessageContent

func setup(t *testing.T, cfg fakediscord.Config) (*fakediscord.Server, *discordgo.Session, *events) {
	fake := fakediscord.Start(t, cfg)
	fake.Use(t)
	s, ev := open(t, fake, allIntents)
	recv(t, ev.ready)
	recv(t, ev.guilds)
	settle(t, fake)
	return fake, s, ev
}

func recv[T any](t *testing.T, ch chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		var zero T
		t.Fatalf("timed out waiting for %T", zero)
		return zero
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

func restCode(err error) (int, int) {
	var re *discordgo.RESTError
	if !errors.As(err, &re) || re.Message == nil {
		return 0, 0
	}
	return re.Response.StatusCode, re.Message.Code
}

func TestOpenGetsReadyAndGuildCreate(t *testing.T) {
	fake := fakediscord.Start(t, testConfig())
	fake.Use(t)
	_, ev := open(t, fake, allIntents)
	r := recv(t, ev.ready)
	if r.SessionID == "" || r.User == nil || r.User.ID != fake.BotUser().ID || !r.User.Bot {
		t.Fatalf("READY = %+v", r)
	}
	g := recv(t, ev.guilds)
	if g.ID != guildID || len(g.Channels) != 1 || g.Channels[0].ID != channelID || len(g.Roles) != 1 {
		t.Fatalf("GUILD_CREATE = %+v", g.Guild)
	}
	if got := fake.Intents(); got != int(allIntents) {
		t.Fatalf("intents = %d, want %d", got, allIntents)
	}
}

func TestIdentifyRefusesBadTokenAndPrivilegedIntents(t *testing.T) {
	none := 0
	fake := fakediscord.Start(t, fakediscord.Config{PrivilegedIntents: &none})
	fake.Use(t)
	s, _ := discordgo.New("Bot " + fake.Token())
	s.Identify.Intents = discordgo.IntentMessageContent
	s.ShouldReconnectOnError = false
	s.LogLevel = -1
	// Open itself succeeds only if READY comes; the fake closes with 4014 instead.
	err := s.Open()
	if err == nil {
		s.Close()
		t.Fatal("open with a disallowed intent succeeded")
	}
	if !strings.Contains(err.Error(), "4014") {
		t.Fatalf("err = %v, want close 4014", err)
	}
}

func TestInjectedMessagesReachHandlers(t *testing.T) {
	fake, _, ev := setup(t, testConfig())
	bot := fake.BotUser()
	if _, err := fake.Post(channelID, alice, "<@"+bot.ID+"> clean the logs"); err != nil {
		t.Fatal(err)
	}
	m := recv(t, ev.messages)
	if m.Author.ID != alice.ID || m.Author.Bot || m.Content != "<@"+bot.ID+"> clean the logs" || m.GuildID != guildID {
		t.Fatalf("message = %+v", m.Message)
	}
	if len(m.Mentions) != 1 || m.Mentions[0].ID != bot.ID {
		t.Fatalf("mentions = %+v", m.Mentions)
	}
	if m.Member == nil || len(m.Member.Roles) != 1 || m.Member.Roles[0] != approverID {
		t.Fatalf("member = %+v", m.Member)
	}
	if _, err := fake.Post(channelID, other, "beep"); err != nil {
		t.Fatal(err)
	}
	if m := recv(t, ev.messages); !m.Author.Bot {
		t.Fatalf("bot message author = %+v", m.Author)
	}
}

// TestRepliesPingTheirAuthor: a person's reply to the bot's message has the bot in its
// mentions though its text names nobody (Discord's client pings by default), unless
// sent without the ping; a reply to a message that is not there is refused; a bot's
// reply pings only when allowed_mentions.replied_user says so.
func TestRepliesPingTheirAuthor(t *testing.T) {
	fake, s, ev := setup(t, testConfig())
	bot := fake.BotUser()
	task, err := s.ChannelMessageSend(channelID, "Task: tidy")
	if err != nil {
		t.Fatal(err)
	}
	recv(t, ev.messages)
	ref := &fakediscord.MessageReference{MessageID: task.ID, ChannelID: channelID}
	if _, err := fake.PostMessage(fakediscord.Message{ChannelID: channelID, Author: alice, Content: "and the docs", MessageReference: ref}); err != nil {
		t.Fatal(err)
	}
	m := recv(t, ev.messages)
	if m.Type != discordgo.MessageTypeReply || m.MessageReference == nil || m.MessageReference.MessageID != task.ID ||
		len(m.Mentions) != 1 || m.Mentions[0].ID != bot.ID {
		t.Fatalf("reply = type %d, reference %+v, mentions %+v; want a reply to %s pinging the bot", m.Type, m.MessageReference, m.Mentions, task.ID)
	}
	if _, err := fake.PostMessage(fakediscord.Message{ChannelID: channelID, Author: alice, Content: "quietly", MessageReference: ref, NoReplyPing: true}); err != nil {
		t.Fatal(err)
	}
	if m := recv(t, ev.messages); len(m.Mentions) != 0 {
		t.Fatalf("a reply without the ping mentions %+v", m.Mentions)
	}
	if _, err := fake.PostMessage(fakediscord.Message{ChannelID: channelID, Author: alice, Content: "x",
		MessageReference: &fakediscord.MessageReference{MessageID: "1"}}); err == nil {
		t.Fatal("a reply to a message that is not there was posted")
	}
	said, _ := fake.Post(channelID, alice, "hello")
	recv(t, ev.messages)
	for _, c := range []struct {
		am   *discordgo.MessageAllowedMentions
		ping bool
	}{{&discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}}, false}, {&discordgo.MessageAllowedMentions{RepliedUser: true}, true}} {
		r, err := s.ChannelMessageSendComplex(channelID, &discordgo.MessageSend{Content: "noted", AllowedMentions: c.am,
			Reference: &discordgo.MessageReference{MessageID: said.ID}})
		if err != nil {
			t.Fatal(err)
		}
		if stored, _ := fake.Message(r.ID); (len(stored.Mentions) == 1) != c.ping {
			t.Errorf("bot reply with %+v mentions %+v; want a ping: %v", c.am, stored.Mentions, c.ping)
		}
	}
	no := false
	if _, err := s.ChannelMessageSendComplex(channelID, &discordgo.MessageSend{Content: "x", Reference: &discordgo.MessageReference{MessageID: "1"}}); err == nil {
		t.Error("a bot's reply to a message that is not there was posted")
	}
	if _, err := s.ChannelMessageSendComplex(channelID, &discordgo.MessageSend{Content: "x",
		Reference: &discordgo.MessageReference{MessageID: "1", FailIfNotExists: &no}}); err != nil {
		t.Errorf("a reply with fail_if_not_exists false: %v", err)
	}
}

// TestPersonsEditDispatchesUpdate: EditMessage is a person's edit: MESSAGE_UPDATE with the
// new content and edited_timestamp; nobody edits another's message.
func TestPersonsEditDispatchesUpdate(t *testing.T) {
	fake, _, ev := setup(t, testConfig())
	m, _ := fake.Post(channelID, alice, "y")
	recv(t, ev.messages)
	if _, err := fake.EditMessage(m.ID, bob, "n"); err == nil {
		t.Fatal("bob edited alice's message")
	}
	if _, err := fake.EditMessage(m.ID, alice, "n"); err != nil {
		t.Fatal(err)
	}
	u := recv(t, ev.updates)
	if u.ID != m.ID || u.Content != "n" || u.EditedTimestamp == nil || u.Author == nil || u.Author.ID != alice.ID {
		t.Fatalf("MESSAGE_UPDATE = %+v", u.Message)
	}
}

func TestMessageContentIntentBlanksContent(t *testing.T) {
	fake := fakediscord.Start(t, testConfig())
	fake.Use(t)
	_, ev := open(t, fake, discordgo.IntentsGuilds|discordgo.IntentsGuildMessages)
	recv(t, ev.ready)
	fake.Post(channelID, alice, "secret plan")
	if m := recv(t, ev.messages); m.Content != "" {
		t.Fatalf("content without MESSAGE_CONTENT = %q", m.Content)
	}
	fake.Post(channelID, alice, "<@"+fake.BotUser().ID+"> hi")
	if m := recv(t, ev.messages); m.Content == "" {
		t.Fatal("a mention of the bot must keep its content")
	}
}

func buttons(ids ...string) []discordgo.MessageComponent {
	var bs []discordgo.MessageComponent
	for _, id := range ids {
		bs = append(bs, discordgo.Button{Label: id, Style: discordgo.PrimaryButton, CustomID: id})
	}
	return []discordgo.MessageComponent{discordgo.ActionsRow{Components: bs}}
}

func TestSendAndEditMessageWithButtons(t *testing.T) {
	fake, s, ev := setup(t, testConfig())
	m, err := s.ChannelMessageSendComplex(channelID, &discordgo.MessageSend{
		Content:         "run `ls`? @everyone <@" + alice.ID + ">",
		Components:      buttons("yes", "no"),
		AllowedMentions: &discordgo.MessageAllowedMentions{},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Components) != 1 || len(m.Components[0].(*discordgo.ActionsRow).Components) != 2 {
		t.Fatalf("components = %#v", m.Components)
	}
	stored, _ := fake.Message(m.ID)
	if stored.MentionEveryone || len(stored.Mentions) != 0 {
		t.Fatalf("allowed_mentions {parse: []} still pinged: everyone=%v mentions=%v", stored.MentionEveryone, stored.Mentions)
	}
	if own := recv(t, ev.messages); own.ID != m.ID || own.Author.ID != fake.BotUser().ID {
		t.Fatalf("own message echo = %+v", own.Message)
	}

	content := "approved by alice"
	empty := []discordgo.MessageComponent{}
	e, err := s.ChannelMessageEditComplex(&discordgo.MessageEdit{ID: m.ID, Channel: channelID, Content: &content, Components: &empty})
	if err != nil {
		t.Fatal(err)
	}
	if e.Content != content || len(e.Components) != 0 || e.EditedTimestamp == nil {
		t.Fatalf("edited = %+v", e)
	}
	if u := recv(t, ev.updates); u.ID != m.ID || u.Content != content {
		t.Fatalf("MESSAGE_UPDATE = %+v", u.Message)
	}
	c, err := fake.WaitCall(ctx(t), fakediscord.Route("PATCH", "/channels/*/messages/"+m.ID))
	if err != nil {
		t.Fatal(err)
	}
	if c.Fields()["content"] != content {
		t.Fatalf("recorded body = %s", c.Body)
	}

	// Someone else's message cannot be edited.
	theirs, _ := fake.Post(channelID, alice, "hello")
	_, err = s.ChannelMessageEdit(channelID, theirs.ID, "hijack")
	if st, code := restCode(err); st != http.StatusForbidden || code != fakediscord.CodeCannotEditOthers {
		t.Fatalf("edit of another's message: %v", err)
	}
}

func TestContentLimitAndAttachments(t *testing.T) {
	fake, s, _ := setup(t, testConfig())
	_, err := s.ChannelMessageSend(channelID, strings.Repeat("x", 2001))
	if st, code := restCode(err); st != http.StatusBadRequest || code != fakediscord.CodeInvalidFormBody {
		t.Fatalf("2001 characters: %v", err)
	}
	var re *discordgo.RESTError
	errors.As(err, &re)
	if !strings.Contains(string(re.ResponseBody), `"content":{"_errors":[{"code":"BASE_TYPE_MAX_LENGTH"`) {
		t.Fatalf("error body = %s", re.ResponseBody)
	}
	if _, err := s.ChannelMessageSend(channelID, strings.Repeat("é", 2000)); err != nil {
		t.Fatalf("2000 characters (4000 bytes) refused: %v", err)
	}
	if _, err := s.ChannelMessageSend(channelID, ""); err == nil {
		t.Fatal("empty message accepted")
	} else if _, code := restCode(err); code != fakediscord.CodeEmptyMessage {
		t.Fatalf("empty message: %v", err)
	}

	long := strings.Repeat("line\n", 1000)
	m, err := s.ChannelMessageSendComplex(channelID, &discordgo.MessageSend{
		Content: "output attached",
		Files:   []*discordgo.File{{Name: "output.txt", ContentType: "text/plain", Reader: strings.NewReader(long)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Attachments) != 1 || m.Attachments[0].Filename != "output.txt" || m.Attachments[0].Size != len(long) {
		t.Fatalf("attachments = %+v", m.Attachments)
	}
	stored, _ := fake.Message(m.ID)
	if string(stored.Attachments[0].Data) != long {
		t.Fatal("attachment bytes not kept")
	}
	c, _ := fake.WaitCall(ctx(t), func(c fakediscord.Call) bool { return len(c.Files) == 1 })
	if c.Fields()["content"] != "output attached" {
		t.Fatalf("multipart payload_json = %s", c.Body)
	}
}

func TestThreads(t *testing.T) {
	fake, s, ev := setup(t, testConfig())
	root, err := s.ChannelMessageSend(channelID, "task: tidy up")
	if err != nil {
		t.Fatal(err)
	}
	th, err := s.MessageThreadStartComplex(channelID, root.ID, &discordgo.ThreadStart{Name: "tidy up", AutoArchiveDuration: 1440})
	if err != nil {
		t.Fatal(err)
	}
	if th.ID != root.ID || th.Type != discordgo.ChannelTypeGuildPublicThread || th.ParentID != channelID {
		t.Fatalf("thread = %+v", th)
	}
	if tc := recv(t, ev.threads); tc.ID != th.ID {
		t.Fatalf("THREAD_CREATE = %+v", tc.Channel)
	}
	if _, err := s.MessageThreadStart(channelID, root.ID, "again", 60); err == nil {
		t.Fatal("second thread on one message accepted")
	} else if _, code := restCode(err); code != fakediscord.CodeThreadAlreadyCreated {
		t.Fatalf("second thread: %v", err)
	}
	loose, err := s.ThreadStartComplex(channelID, &discordgo.ThreadStart{Name: "loose"})
	if err != nil {
		t.Fatal(err)
	}
	if loose.Type != discordgo.ChannelTypeGuildPrivateThread {
		t.Fatalf("thread without message type = %v", loose.Type)
	}
	got, err := s.Channel(th.ID)
	if err != nil || got.ParentID != channelID || !got.IsThread() {
		t.Fatalf("GET thread = %+v, %v", got, err)
	}
	if _, err := fake.Post(th.ID, alice, "y"); err != nil {
		t.Fatal(err)
	}
	for {
		m := recv(t, ev.messages)
		if m.ChannelID == th.ID {
			if m.Content != "y" || m.GuildID != guildID {
				t.Fatalf("thread message = %+v", m.Message)
			}
			break
		}
	}
	if _, err := s.ThreadStart(th.ID, "nested", discordgo.ChannelTypeGuildPublicThread, 60); err == nil {
		t.Fatal("a thread inside a thread was accepted")
	}
}

func TestButtonClickUpdatesMessage(t *testing.T) {
	fake, s, ev := setup(t, testConfig())
	m, err := s.ChannelMessageSendComplex(channelID, &discordgo.MessageSend{Content: "run ls?", Components: buttons("approve:p-1", "deny:p-1")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fake.Click(channelID, m.ID, alice, "nope"); err == nil {
		t.Fatal("click on a button that is not there succeeded")
	}
	in, err := fake.Click(channelID, m.ID, alice, "approve:p-1")
	if err != nil {
		t.Fatal(err)
	}
	ic := recv(t, ev.inter)
	if ic.Type != discordgo.InteractionMessageComponent || ic.MessageComponentData().CustomID != "approve:p-1" {
		t.Fatalf("interaction = %+v", ic.Interaction)
	}
	if ic.Member == nil || ic.Member.User.ID != alice.ID || len(ic.Member.Roles) != 1 || ic.Message == nil || ic.Message.ID != m.ID {
		t.Fatalf("interaction member/message = %+v / %+v", ic.Member, ic.Message)
	}
	err = s.InteractionRespond(ic.Interaction, &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseUpdateMessage,
		Data: &discordgo.InteractionResponseData{Content: "approved by alice", Components: []discordgo.MessageComponent{}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := fake.Message(m.ID)
	if got.Content != "approved by alice" || len(got.Components) != 0 {
		t.Fatalf("message after update = %+v", got)
	}
	if r := fake.InteractionResponse(in.ID); !r.Responded || r.Type != fakediscord.CallbackUpdateMessage || r.Original != m.ID {
		t.Fatalf("response = %+v", r)
	}
	// The second answer to one interaction is refused, as on Discord.
	err = s.InteractionRespond(ic.Interaction, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate})
	if _, code := restCode(err); code != fakediscord.CodeAlreadyAcknowledged {
		t.Fatalf("second response: %v", err)
	}
	// An ephemeral follow-up after the update.
	f, err := s.FollowupMessageCreate(ic.Interaction, true, &discordgo.WebhookParams{Content: "only you see this", Flags: discordgo.MessageFlagsEphemeral})
	if err != nil || f.Flags&discordgo.MessageFlagsEphemeral == 0 {
		t.Fatalf("follow-up = %+v, %v", f, err)
	}
}

func TestFeedbackModal(t *testing.T) {
	fake, s, ev := setup(t, testConfig())
	m, _ := s.ChannelMessageSendComplex(channelID, &discordgo.MessageSend{Content: "run ls?", Components: buttons("feedback:p-1")})
	opened, err := fake.Click(channelID, m.ID, bob, "feedback:p-1")
	if err != nil {
		t.Fatal(err)
	}
	ic := recv(t, ev.inter)
	err = s.InteractionRespond(ic.Interaction, &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseModal,
		Data: &discordgo.InteractionResponseData{CustomID: "feedback-modal:p-1", Title: "Feedback", Components: []discordgo.MessageComponent{
			discordgo.ActionsRow{Components: []discordgo.MessageComponent{discordgo.TextInput{
				CustomID: "text", Label: "What should it do instead?", Style: discordgo.TextInputParagraph, Required: true, MaxLength: 4000,
			}}},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fake.SubmitModal(opened, bob, map[string]string{}); err == nil {
		t.Fatal("modal submitted without its required input")
	}
	if _, err := fake.SubmitModal(opened, bob, map[string]string{"text": "use find instead"}); err != nil {
		t.Fatal(err)
	}
	sub := recv(t, ev.inter)
	data := sub.ModalSubmitData()
	ti := data.Components[0].(*discordgo.ActionsRow).Components[0].(*discordgo.TextInput)
	if data.CustomID != "feedback-modal:p-1" || ti.CustomID != "text" || ti.Value != "use find instead" || sub.Message == nil {
		t.Fatalf("modal submit = %+v / %+v", data, ti)
	}
	// A modal opened from a button may update that button's message.
	err = s.InteractionRespond(sub.Interaction, &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseUpdateMessage,
		Data: &discordgo.InteractionResponseData{Content: "feedback from bob"},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := fake.Message(m.ID)
	if got.Content != "feedback from bob" || len(got.Components) != 1 {
		t.Fatalf("message after modal update = %+v (null components must keep the buttons)", got)
	}
	// A modal cannot answer a modal.
	if _, err := fake.SubmitModal(opened, bob, map[string]string{"text": "again"}); err != nil {
		t.Fatal(err)
	}
	again := recv(t, ev.inter)
	err = s.InteractionRespond(again.Interaction, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseModal,
		Data: &discordgo.InteractionResponseData{CustomID: "x", Title: "x"}})
	if _, code := restCode(err); code != fakediscord.CodeInvalidFormBody {
		t.Fatalf("modal answering a modal: %v", err)
	}
}

func TestSlashCommands(t *testing.T) {
	fake, s, ev := setup(t, testConfig())
	cmds := []*discordgo.ApplicationCommand{{
		Name: "agent", Description: "Control agents",
		Options: []*discordgo.ApplicationCommandOption{
			{Type: discordgo.ApplicationCommandOptionSubCommand, Name: "run", Description: "Start a task",
				Options: []*discordgo.ApplicationCommandOption{{Type: discordgo.ApplicationCommandOptionString, Name: "task", Description: "What to do", Required: true}}},
			{Type: discordgo.ApplicationCommandOptionSubCommand, Name: "list", Description: "List agents"},
		},
	}}
	created, err := s.ApplicationCommandBulkOverwrite(fake.ApplicationID(), guildID, cmds)
	if err != nil {
		t.Fatal(err)
	}
	if len(created) != 1 || created[0].ID == "" || created[0].GuildID != guildID || created[0].ApplicationID != fake.ApplicationID() {
		t.Fatalf("created = %+v", created[0])
	}
	// Overwriting keeps the command's ID, as Discord does for an unchanged name.
	again, err := s.ApplicationCommandBulkOverwrite(fake.ApplicationID(), guildID, cmds)
	if err != nil || again[0].ID != created[0].ID {
		t.Fatalf("overwrite = %+v, %v", again, err)
	}
	if len(fake.Commands("")) != 0 || len(fake.Commands(guildID)) != 1 {
		t.Fatal("guild command stored in the wrong scope")
	}
	bad := []*discordgo.ApplicationCommand{{Name: "Agent", Description: ""}}
	if _, err := s.ApplicationCommandBulkOverwrite(fake.ApplicationID(), "", bad); err == nil {
		t.Fatal("invalid command accepted")
	}

	in, err := fake.Command(channelID, alice, "agent", fakediscord.SubCommand("run", fakediscord.StringOption("task", "tidy the logs")))
	if err != nil {
		t.Fatal(err)
	}
	ic := recv(t, ev.inter)
	d := ic.ApplicationCommandData()
	if d.Name != "agent" || d.ID != created[0].ID || d.Options[0].Name != "run" || d.Options[0].Options[0].StringValue() != "tidy the logs" {
		t.Fatalf("command data = %+v", d)
	}
	// Deferred answer, then the original response is edited.
	if err := s.InteractionRespond(ic.Interaction, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredChannelMessageWithSource}); err != nil {
		t.Fatal(err)
	}
	text := "started run r-1 in a thread"
	edited, err := s.InteractionResponseEdit(ic.Interaction, &discordgo.WebhookEdit{Content: &text})
	if err != nil || edited.Content != text {
		t.Fatalf("edit original = %+v, %v", edited, err)
	}
	if r := fake.InteractionResponse(in.ID); r.Original != edited.ID || r.Type != fakediscord.CallbackDeferredChannelMessage {
		t.Fatalf("response = %+v", r)
	}
	if _, err := fake.Command(channelID, alice, "nope"); err == nil {
		t.Fatal("unregistered command invoked")
	}
}

func TestErrorsAreDiscordShaped(t *testing.T) {
	fake, s, _ := setup(t, testConfig())
	_, err := s.ChannelMessageSend("999", "hi")
	if st, code := restCode(err); st != http.StatusNotFound || code != fakediscord.CodeUnknownChannel {
		t.Fatalf("unknown channel: %v", err)
	}
	_, err = s.ChannelMessage(channelID, "999")
	if _, code := restCode(err); code != fakediscord.CodeUnknownMessage {
		t.Fatalf("unknown message: %v", err)
	}
	_, err = s.Request("GET", discordgo.EndpointAPI+"nowhere", nil)
	if st, _ := restCode(err); st != http.StatusNotFound {
		t.Fatalf("unknown route: %v", err)
	}
	mem, err := s.GuildMember(guildID, alice.ID)
	if err != nil || len(mem.Roles) != 1 || mem.Roles[0] != approverID {
		t.Fatalf("member = %+v, %v", mem, err)
	}
	_, err = s.GuildMember(guildID, "999")
	if _, code := restCode(err); code != fakediscord.CodeUnknownMember {
		t.Fatalf("unknown member: %v", err)
	}
	bad, _ := discordgo.New("Bot wrong")
	_, err = bad.Channel(channelID)
	if st, _ := restCode(err); st != http.StatusUnauthorized {
		t.Fatalf("bad token: %v", err)
	}
	_, err = s.ChannelMessageSendComplex(channelID, &discordgo.MessageSend{Content: "x", Components: buttons("same", "same")})
	if _, code := restCode(err); code != fakediscord.CodeInvalidFormBody {
		t.Fatalf("duplicate custom_id: %v", err)
	}
	_ = fake
}

func TestRateLimitIsRetried(t *testing.T) {
	fake, s, _ := setup(t, testConfig())
	fake.RateLimitNext(fakediscord.Route("POST", "/channels/*/messages"), 20*time.Millisecond, false)
	if _, err := s.ChannelMessageSend(channelID, "after a 429"); err != nil {
		t.Fatal(err)
	}
	var statuses []int
	for _, c := range fake.Calls() {
		if fakediscord.Route("POST", "/channels/*/messages")(c) {
			statuses = append(statuses, c.Status)
		}
	}
	if len(statuses) != 2 || statuses[0] != 429 || statuses[1] != 200 {
		t.Fatalf("statuses = %v", statuses)
	}
}

// collect gathers message contents from the handler channel until want are all seen.
func collect(t *testing.T, ev *events, want ...string) {
	t.Helper()
	seen := map[string]int{}
	for missing := len(want); missing > 0; {
		m := recv(t, ev.messages)
		seen[m.Content]++
		for _, w := range want {
			if m.Content == w && seen[w] == 1 {
				missing--
			}
		}
	}
	for _, w := range want {
		if seen[w] != 1 {
			t.Fatalf("%q delivered %d times", w, seen[w])
		}
	}
}

func TestDropThenResumeLosesNothing(t *testing.T) {
	fake, _, ev := setup(t, testConfig())
	fake.Post(channelID, alice, "before")
	collect(t, ev, "before")

	mark := fake.FrameCount()
	fake.Drop()
	// Sent while the client is (or is about to notice it is) disconnected.
	for _, c := range []string{"during 1", "during 2", "during 3"} {
		if _, err := fake.Post(channelID, alice, c); err != nil {
			t.Fatal(err)
		}
	}
	recv(t, ev.resumed)
	if _, err := fake.WaitFrameFrom(ctx(t), mark, fakediscord.Op(fakediscord.OpResume)); err != nil {
		t.Fatal(err)
	}
	fake.Post(channelID, alice, "after")
	collect(t, ev, "during 1", "during 2", "during 3", "after")
	identifies := 0
	for _, f := range fake.Frames() {
		if f.Op == fakediscord.OpIdentify {
			identifies++
		}
	}
	if identifies != 1 {
		for _, f := range fake.Frames() {
			t.Logf("conn %d op %d %.120s", f.Conn, f.Op, f.Data)
		}
		t.Fatalf("identifies = %d, want 1 (the client must resume, not re-identify)", identifies)
	}
}

func TestReconnectOpcodeResumes(t *testing.T) {
	fake, _, ev := setup(t, testConfig())
	mark := fake.FrameCount()
	fake.RequestReconnect()
	f, err := fake.WaitFrameFrom(ctx(t), mark, fakediscord.Op(fakediscord.OpResume))
	if err != nil {
		t.Fatal(err)
	}
	recv(t, ev.resumed)
	if f.Conn != 2 {
		t.Fatalf("resume on connection %d, want a new one", f.Conn)
	}
	fake.Post(channelID, alice, "still here")
	collect(t, ev, "still here")
}

func TestInvalidSessionReidentifies(t *testing.T) {
	fake, _, ev := setup(t, testConfig())
	fake.InvalidateSessions(false)
	r := recv(t, ev.ready)
	if r.SessionID == "" {
		t.Fatal("no new session")
	}
	fake.Post(channelID, alice, "new session")
	collect(t, ev, "new session")
}

func TestServerCloseCodeThenResume(t *testing.T) {
	fake, _, ev := setup(t, testConfig())
	fake.CloseGateway(4000, "Unknown error.")
	recv(t, ev.resumed)
	settle(t, fake)
	fake.CloseGateway(4009, "Session timed out.") // not resumable: RESUME gets op 9, then IDENTIFY
	recv(t, ev.ready)
}

func TestHeartbeatWatchdogReconnects(t *testing.T) {
	cfg := testConfig()
	cfg.HeartbeatInterval = 50 * time.Millisecond
	fake, _, ev := setup(t, cfg)
	recv(t, ev.connects)
	if _, err := fake.WaitFrameFrom(ctx(t), 0, fakediscord.Op(fakediscord.OpHeartbeat)); err != nil {
		t.Fatal(err)
	}
	fake.PauseHeartbeatACKs(true)
	// discordgo gives up after 5 intervals without an ACK. It closes with 1000, which ends
	// the session on Discord (and here), so its RESUME gets op 9 and it identifies afresh.
	recv(t, ev.ready)
	fake.PauseHeartbeatACKs(false)
	fake.Post(channelID, alice, "after the watchdog")
	collect(t, ev, "after the watchdog")
	var ops []int
	for _, f := range fake.Frames() {
		if f.Op != fakediscord.OpHeartbeat {
			ops = append(ops, f.Op)
		}
	}
	if len(ops) != 3 || ops[0] != fakediscord.OpIdentify || ops[1] != fakediscord.OpResume || ops[2] != fakediscord.OpIdentify {
		t.Fatalf("client ops = %v, want identify, resume (refused), identify", ops)
	}
}

// TestConcurrentSendsAreRecorded checks the recorder under concurrent clients.
func TestConcurrentSendsAreRecorded(t *testing.T) {
	fake, s, _ := setup(t, testConfig())
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.ChannelMessageSend(channelID, "parallel")
		}()
	}
	wg.Wait()
	if n := len(fake.Messages(channelID)); n != 8 {
		t.Fatalf("messages = %d", n)
	}
}
