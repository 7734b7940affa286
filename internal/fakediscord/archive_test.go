package fakediscord_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/agentd/agentd/internal/fakediscord"
)

// newThread starts a thread in the test channel with one message of the bot's in it.
func newThread(t *testing.T, s *discordgo.Session) (thread, msg string) {
	t.Helper()
	root, err := s.ChannelMessageSend(channelID, "task")
	if err != nil {
		t.Fatal(err)
	}
	th, err := s.MessageThreadStartComplex(channelID, root.ID, &discordgo.ThreadStart{Name: "task", AutoArchiveDuration: 10080})
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.ChannelMessageSend(th.ID, "proposal")
	if err != nil {
		t.Fatal(err)
	}
	return th.ID, m.ID
}

func archived(t *testing.T, fake *fakediscord.Server, id string) bool {
	t.Helper()
	ch, ok := fake.Channel(id)
	if !ok || ch.ThreadMetadata == nil {
		t.Fatalf("no thread %s", id)
	}
	return ch.ThreadMetadata.Archived
}

// TestThreadCloseAndLockRules: an archived thread takes new messages (they reopen it)
// but not edits (50083); a locked one, open or closed, takes neither (160005) and cannot
// be reopened (50013), unless the bot has MANAGE_THREADS.
func TestThreadCloseAndLockRules(t *testing.T) {
	archive := (*fakediscord.Server).ArchiveThread
	lock := (*fakediscord.Server).LockThread
	both := func(f *fakediscord.Server, th string) error { f.LockThread(th); return f.ArchiveThread(th) }
	for _, tc := range []struct {
		name     string
		manage   bool
		close    func(*fakediscord.Server, string) error
		archived bool // the thread is archived once closed
		editCode int  // of an edit once closed
		sendCode int  // of a new message once closed
		patch    int  // of PATCH archived:false, when sending is refused
	}{
		{name: "auto_archived_after_a_week", close: func(f *fakediscord.Server, _ string) error { f.Advance(7*24*time.Hour + time.Minute); return nil },
			archived: true, editCode: fakediscord.CodeThreadArchived},
		{name: "archived_by_a_moderator", close: archive, archived: true, editCode: fakediscord.CodeThreadArchived},
		{name: "locked", close: lock, editCode: fakediscord.CodeThreadLocked, sendCode: fakediscord.CodeThreadLocked,
			patch: fakediscord.CodeMissingPermissions},
		{name: "locked_and_archived", close: both, archived: true, editCode: fakediscord.CodeThreadArchived,
			sendCode: fakediscord.CodeThreadLocked, patch: fakediscord.CodeMissingPermissions},
		{name: "locked_with_manage_threads", manage: true, close: lock},
		{name: "locked_and_archived_with_manage_threads", manage: true, close: both, archived: true, editCode: fakediscord.CodeThreadArchived},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.ManageThreads = tc.manage
			fake, s, _ := setup(t, cfg)
			defer closeSession(t, fake, s)
			th, msg := newThread(t, s)
			fake.Advance(time.Hour) // an idle hour does not archive a week-long thread
			if archived(t, fake, th) {
				t.Fatal("archived too early")
			}
			if err := tc.close(fake, th); err != nil {
				t.Fatal(err)
			}
			if archived(t, fake, th) != tc.archived {
				t.Fatalf("archived = %v, want %v", !tc.archived, tc.archived)
			}
			_, err := s.ChannelMessageEdit(th, msg, "decided")
			if _, code := restCode(err); code != tc.editCode {
				t.Fatalf("edit in the closed thread: %v, want code %d", err, tc.editCode)
			}
			_, err = s.ChannelMessageSend(th, "next")
			if _, code := restCode(err); code != tc.sendCode {
				t.Fatalf("send in the closed thread: %v, want code %d", err, tc.sendCode)
			}
			if tc.sendCode == 0 && archived(t, fake, th) {
				t.Fatal("a message did not unarchive the thread")
			}
			if tc.sendCode != 0 {
				no := false
				_, err = s.ChannelEdit(th, &discordgo.ChannelEdit{Archived: &no})
				if _, code := restCode(err); code != tc.patch {
					t.Fatalf("unarchive: %v, want code %d", err, tc.patch)
				}
				return
			}
			if _, err := s.ChannelMessageEdit(th, msg, "decided"); err != nil {
				t.Fatalf("edit once reopened: %v", err)
			}
		})
	}
}

// TestPostingForbidden: where a moderator took the bot's Send Messages away, its posts
// fail with 50013 and its edits of what it posted before still go through, as on Discord.
func TestPostingForbidden(t *testing.T) {
	fake, s, _ := setup(t, testConfig())
	defer closeSession(t, fake, s)
	th, msg := newThread(t, s)
	if err := fake.ForbidPosting(th); err != nil {
		t.Fatal(err)
	}
	_, err := s.ChannelMessageSend(th, "next")
	if st, code := restCode(err); st != http.StatusForbidden || code != fakediscord.CodeMissingPermissions {
		t.Fatalf("send where posting is forbidden: %v, want 403 50013", err)
	}
	if _, err := s.ChannelMessageEdit(th, msg, "decided"); err != nil {
		t.Fatalf("edit where posting is forbidden: %v", err)
	}
	if _, err := s.ChannelMessageSend(channelID, "elsewhere"); err != nil {
		t.Fatalf("send in the parent channel: %v", err)
	}
}

func TestUnarchiveByPatch(t *testing.T) {
	fake, s, _ := setup(t, testConfig())
	defer closeSession(t, fake, s)
	th, msg := newThread(t, s)
	fake.ArchiveThread(th)
	no := false
	if _, err := s.ChannelEdit(th, &discordgo.ChannelEdit{Archived: &no}); err != nil {
		t.Fatal(err)
	}
	if archived(t, fake, th) {
		t.Fatal("still archived")
	}
	if _, err := s.ChannelMessageEdit(th, msg, "decided"); err != nil {
		t.Fatal(err)
	}
}

func TestSuppressEmbedsAndPreviews(t *testing.T) {
	fake, s, _ := setup(t, testConfig())
	defer closeSession(t, fake, s)
	leak := "see https://evil.example/leak?d=secret"
	quiet, err := s.ChannelMessageSendComplex(channelID, &discordgo.MessageSend{Content: leak, Flags: discordgo.MessageFlagsSuppressEmbeds})
	if err != nil {
		t.Fatal(err)
	}
	loud, err := s.ChannelMessageSend(channelID, leak+" and <https://wrapped.example/>")
	if err != nil {
		t.Fatal(err)
	}
	q, _ := fake.Message(quiet.ID)
	l, _ := fake.Message(loud.ID)
	if q.Flags&fakediscord.FlagSuppressEmbeds == 0 || len(q.Previewed) != 0 {
		t.Errorf("suppressed message: flags %d, previewed %v", q.Flags, q.Previewed)
	}
	if len(l.Previewed) != 1 || l.Previewed[0] != "https://evil.example/leak?d=secret" {
		t.Errorf("unsuppressed message previewed %v, want the one bare link", l.Previewed)
	}
	// An edit without flags keeps them; one that sends them may only change SUPPRESS_EMBEDS.
	text := "edited " + leak
	if _, err := s.ChannelMessageEditComplex(&discordgo.MessageEdit{Channel: channelID, ID: quiet.ID, Content: &text}); err != nil {
		t.Fatal(err)
	}
	if q, _ = fake.Message(quiet.ID); q.Flags&fakediscord.FlagSuppressEmbeds == 0 || len(q.Previewed) != 0 {
		t.Errorf("after an edit without flags: flags %d, previewed %v", q.Flags, q.Previewed)
	}
	if _, err := s.ChannelMessageEditComplex(&discordgo.MessageEdit{Channel: channelID, ID: loud.ID, Content: &text,
		Flags: discordgo.MessageFlagsSuppressEmbeds | discordgo.MessageFlagsEphemeral}); err != nil {
		t.Fatal(err)
	}
	if l, _ = fake.Message(loud.ID); l.Flags != fakediscord.FlagSuppressEmbeds || len(l.Previewed) != 1 {
		t.Errorf("after suppressing: flags %d, previewed %v (a fetched link stays leaked)", l.Flags, l.Previewed)
	}
}

func TestInteractionDeadlineIsDiscords(t *testing.T) {
	fake, s, ev := setup(t, testConfig())
	defer closeSession(t, fake, s)
	ic := clickedProposal(t, fake, s, ev)
	fake.Advance(3100 * time.Millisecond) // past Discord's 3 s
	err := s.InteractionRespond(ic.Interaction, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate})
	if _, code := restCode(err); code != fakediscord.CodeUnknownInteraction {
		t.Fatalf("a response after 3 s: %v, want 10062", err)
	}
}

func TestResumeReplaysHandledEvents(t *testing.T) {
	fake, _, ev := setup(t, testConfig())
	m, _ := fake.Post(channelID, alice, "y")
	collect(t, ev, "y")
	fake.ReplayOnResume(1)
	mark := fake.FrameCount()
	settle(t, fake)
	fake.Drop()
	recv(t, ev.resumed)
	if _, err := fake.WaitFrameFrom(ctx(t), mark, fakediscord.Op(fakediscord.OpResume)); err != nil {
		t.Fatal(err)
	}
	again := recv(t, ev.messages)
	if again.ID != m.ID || again.Content != "y" {
		t.Fatalf("replayed %+v, want message %s again", again.Message, m.ID)
	}
}

func TestInteractionTokenLastsFifteenMinutes(t *testing.T) {
	fake, s, ev := setup(t, testConfig())
	defer closeSession(t, fake, s)
	ic := clickedProposal(t, fake, s, ev)
	if err := s.InteractionRespond(ic.Interaction, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate}); err != nil {
		t.Fatal(err)
	}
	note := &discordgo.WebhookParams{Content: "later", Flags: discordgo.MessageFlagsEphemeral}
	fake.Advance(14 * time.Minute)
	if _, err := s.FollowupMessageCreate(ic.Interaction, true, note); err != nil {
		t.Fatalf("a follow-up within 15 minutes: %v", err)
	}
	fake.Advance(2 * time.Minute)
	_, err := s.FollowupMessageCreate(ic.Interaction, true, note)
	if _, code := restCode(err); code != fakediscord.CodeInvalidWebhookToken {
		t.Fatalf("a follow-up after 16 minutes: %v, want 50027", err)
	}
}

// clickedProposal posts a proposal with an approve button, has alice click it, and
// returns the interaction the session received.
func clickedProposal(t *testing.T, fake *fakediscord.Server, s *discordgo.Session, ev *events) *discordgo.InteractionCreate {
	t.Helper()
	m, err := s.ChannelMessageSendComplex(channelID, &discordgo.MessageSend{Content: "p", Components: buttons("agentd:v2:approve:p-abc123:-")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fake.Click(channelID, m.ID, alice, "agentd:v2:approve:p-abc123:-"); err != nil {
		t.Fatal(err)
	}
	return recv(t, ev.inter)
}
