package discord

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/internal/chattest"
	"github.com/agentd/agentd/internal/fakediscord"
)

// These tests hold the adapter to what real Discord does: link previews, the 3 s
// interaction deadline under rate limits, the 2,000-character limit after escaping,
// threads archived under a run, redelivered events.

// botMessages is every message the bot made, in the channel, the threads given, and
// ephemeral answers.
func (e *env) botMessages(channels ...string) []fakediscord.Message {
	var out []fakediscord.Message
	for _, ch := range append([]string{eChannel}, channels...) {
		for _, m := range e.fake.Messages(ch) {
			if m.Author.ID == e.fake.BotUser().ID {
				out = append(out, m)
			}
		}
	}
	return out
}

func TestNoLinkPreviewsEver(t *testing.T) {
	e := newEnv(t)
	leak := "https://evil.example/leak?d=s3cret"
	e.Script(touch("a"), reply("write_file", map[string]string{"path": "x.txt", "text": leak}))
	thread := e.startRun("fetch " + leak)
	p := e.proposal(thread, 1)
	e.click(uAlice, thread, p, ActionApprove)
	e.decided(p.ID, "Approved")
	p2 := e.proposal(thread, 2)
	in := e.click(uBob, thread, p2, ActionDeny) // refused: an ephemeral note
	e.wait("bob's refusal", func() bool { return len(e.ephemerals(in)) == 1 })
	cmd, err := e.fake.Command(eChannel, uAlice, "agent", fakediscord.CommandOption{Type: 1, Name: "list"})
	if err != nil {
		t.Fatal(err)
	}
	e.wait("the list", func() bool { return e.original(cmd, leak) })
	ms := e.botMessages(thread)
	if len(ms) < 5 {
		t.Fatalf("only %d bot messages", len(ms))
	}
	for _, m := range ms {
		if m.Flags&fakediscord.FlagSuppressEmbeds == 0 || len(m.Previewed) > 0 {
			t.Errorf("message %q: flags %d, previewed %v", Truncate(m.Content, 80), m.Flags, m.Previewed)
		}
	}
	if !hasText(ms, "evil.example") {
		t.Error("the link is not shown at all; the test proves nothing")
	}
}

func TestRunAckedInTimeWhilePostsAreRateLimited(t *testing.T) {
	e := newEnv(t)
	e.Script(touch("a"), touch("b"))
	thread := e.startRun("first")
	e.proposal(thread, 1)
	// A global 429 on posts: discordgo then holds every call for 5 s, past Discord's 3 s.
	posts := func(c fakediscord.Call) bool { return c.Method == "POST" && strings.HasSuffix(c.Path, "/messages") }
	e.fake.RateLimitNext(posts, 5*time.Second, true)
	mark := e.fake.CallCount()
	e.say(uAlice, eChannel, "<@"+e.fake.BotUser().ID+"> second") // its thread's first post meets the 429
	e.wait("the 429", func() bool {
		for _, c := range e.fake.Calls()[mark:] {
			if c.Status == 429 {
				return true
			}
		}
		return false
	})
	in, err := e.fake.Command(eChannel, uAlice, "agent", fakediscord.CommandOption{Type: 1, Name: "run",
		Options: []fakediscord.CommandOption{{Type: 3, Name: "task", Value: "third"}}})
	if err != nil {
		t.Fatal(err)
	}
	e.wait("the ack", func() bool { return e.fake.InteractionResponse(in.ID).Responded })
	if r := e.fake.InteractionResponse(in.ID); r.Type != 5 {
		t.Errorf("/agent run answered with %+v, want deferred (5)", r)
	}
	for _, c := range e.fake.Calls() {
		if c.Code == fakediscord.CodeUnknownInteraction {
			t.Fatalf("an interaction answered after Discord's deadline: %s %s", c.Method, c.Path)
		}
	}
	e.wait("the answer once the limit is over", func() bool { return e.original(in, "Started agent") })
}

func TestHostileLongProposalFitsAfterEscaping(t *testing.T) {
	e := newEnv(t)
	// The model's reply caps write_file's contents at 2,000 characters and the relay cuts
	// what it shows; escaping then more than doubles it (every & < > * _ and backtick).
	nasty := strings.Repeat("&<>*_ ``` ", 1000)
	b, _ := json.Marshal(map[string]any{
		"thoughts": map[string]string{"observations": "o", "text": "t", "reasoning": "r", "self_criticism": "s",
			"plan": "- write", "speak": nasty[:1000]},
		"command": map[string]any{"name": "write_file", "args": map[string]string{"path": "x.txt", "contents": nasty[:2000]}},
	})
	e.Script(string(b))
	thread := e.startRun("write it")
	p := e.proposal(thread, 1)
	checkContent(t, p.Content)
	if !strings.Contains(p.Content, "truncated — full text attached as message.txt") {
		t.Errorf("a cut proposal does not say so:\n%s", p.Content)
	}
	if len(p.Attachments) != 1 || p.Attachments[0].Filename != "message.txt" || !strings.Contains(string(p.Attachments[0].Data), "&<>*_") {
		t.Fatalf("attachments = %+v", p.Attachments)
	}
	if !strings.Contains(p.Content, "Reply in this thread") {
		t.Errorf("the cut took the reply hint after the arguments:\n%s", p.Content)
	}
	if strings.Contains(p.Content, "&amp;") {
		t.Errorf("Discord text is not HTML-escaped:\n%s", p.Content)
	}
	e.click(uAlice, thread, p, ActionDeny)
	d := e.decided(p.ID, "Denied")
	if Len(d.Content) > MaxContent || strings.Count(d.Content, "```")%2 != 0 {
		t.Errorf("decided proposal: %d characters, %d fences", Len(d.Content), strings.Count(d.Content, "```"))
	}
	if len(d.Attachments) != 1 || !strings.Contains(d.Content, "attached as "+Escape(d.Attachments[0].Filename)) {
		t.Errorf("decided: attachments %+v for %q", d.Attachments, d.Content[max(len(d.Content)-120, 0):])
	}
}

// An edit's attachments are its new text's: a message that grows past the limit gets
// its file, one that shrinks loses the stale file.
func TestEditAttachmentsFollowTheText(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	short := bots.FormatNote("short")
	long := bots.Message{Parts: []bots.Part{{Code: strings.Repeat("x", 3000)}}}
	for _, tc := range []struct {
		name        string
		first, then bots.Message
		files       int
	}{
		{"grows_past_the_limit", short, long, 1},
		{"shrinks_under_it", long, short, 0},
		{"stays_long", long, long, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := e.bot.Post(ctx, eChannel, "", tc.first)
			if err != nil {
				t.Fatal(err)
			}
			if err := e.bot.Update(ctx, eChannel, id, tc.then); err != nil {
				t.Fatal(err)
			}
			_, msg, _ := strings.Cut(id, "/")
			m, _ := e.fake.Message(msg)
			claims := strings.Contains(m.Content, "attached as")
			if len(m.Attachments) != tc.files || claims != (tc.files == 1) {
				t.Fatalf("attachments %+v, content claims one: %v", m.Attachments, claims)
			}
			if tc.files == 1 && len(m.Attachments[0].Data) < 3000 {
				t.Fatalf("the attached file holds %d bytes", len(m.Attachments[0].Data))
			}
		})
	}
}

func TestDecisionLandsInArchivedThread(t *testing.T) {
	for _, tc := range []struct {
		name  string
		close func(f *fakediscord.Server, thread string)
	}{
		{"auto_archived_after_a_week", func(f *fakediscord.Server, _ string) { f.Advance(8 * 24 * time.Hour) }},
		{"archived_by_a_moderator", func(f *fakediscord.Server, th string) { f.ArchiveThread(th) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			thread, p := e.touchRun("touch", "a")
			tc.close(e.fake, thread)
			if ch, _ := e.fake.Channel(thread); !ch.ThreadMetadata.Archived {
				t.Fatal("the fake did not archive the thread")
			}
			e.click(uAlice, thread, p, ActionApprove)
			e.decided(p.ID, "Approved** by <@"+uAlice.ID+">")
			e.wait("the result", func() bool { return hasText(e.fake.Messages(thread), "touched a") })
			refused, reopened := false, false
			for _, c := range e.fake.Calls() {
				refused = refused || c.Code == fakediscord.CodeThreadArchived
				reopened = reopened || refused && c.Method == "PATCH" && c.Path == "/channels/"+thread && c.Status == 200
			}
			if !refused || !reopened {
				t.Errorf("the edit met 50083: %v; then the thread was unarchived: %v", refused, reopened)
			}
		})
	}
}

// TestDecisionShownWhereTheRunContinues: a moderator closes the run's thread to the bot
// while a proposal waits — locks it, locks and archives it, or takes its right to post
// there — and an approver clicks Approve. The run goes on in a new thread linked from the
// channel; the decision is shown there (where the proposal's message cannot be edited, its
// update is posted there, naming the old thread, the step and who decided), and a reply
// in the new thread decides the next proposal.
func TestDecisionShownWhereTheRunContinues(t *testing.T) {
	for _, tc := range []struct {
		name  string
		close func(f *fakediscord.Server, thread string) error
		why   string // what the channel's note says of the old thread
		// head is what the decision posted in the new thread says of the old one; "" when
		// the proposal's own message shows it (edits are still allowed there).
		head string
	}{
		{"locked", (*fakediscord.Server).LockThread, "which is locked", "which is locked"},
		{"closed_and_locked", func(f *fakediscord.Server, th string) error { f.LockThread(th); return f.ArchiveThread(th) },
			"which is locked", "which is closed and I may not reopen"},
		{"posting_forbidden", (*fakediscord.Server).ForbidPosting, "where I may no longer post", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.Script(touch("a"), touch("b"))
			thread := e.startRun("touch")
			p := e.proposal(thread, 1)
			if err := tc.close(e.fake, thread); err != nil {
				t.Fatal(err)
			}
			chattest.Drain()
			e.click(uAlice, thread, p, ActionApprove)
			chattest.TouchedInOrder(e.t, "a")
			next := e.continuation(thread)
			if m := e.channelNote(thread); !strings.Contains(m, tc.why) {
				t.Errorf("the continuation note %q does not say %q", m, tc.why)
			}
			e.wait("the result and the next proposal in the new thread", func() bool {
				ms := e.fake.Messages(next)
				return hasText(ms, "touched a") && hasText(ms, "Step 2: ")
			})
			decision := "Approved** by <@" + uAlice.ID + ">"
			if tc.head == "" {
				e.decided(p.ID, decision)
			} else {
				var shown fakediscord.Message
				e.wait("the decision posted in the new thread", func() bool {
					for _, m := range e.fake.Messages(next) {
						if strings.Contains(m.Content, decision) {
							shown = m
							return true
						}
					}
					return false
				})
				head := "This updates a message in <#" + thread + ">, " + tc.head
				if !strings.Contains(shown.Content, head) || !strings.Contains(shown.Content, "Step 1: ") || len(shown.Components) != 0 {
					t.Errorf("the decision in the new thread = %q (%d button rows); want it under %q, naming step 1, without buttons",
						shown.Content, len(shown.Components), head)
				}
			}
			e.say(uAlice, next, "y")
			chattest.TouchedInOrder(e.t, "b")
		})
	}
}

// channelNote is the channel's message that links thread as the one a run continues from.
func (e *env) channelNote(thread string) string {
	for _, m := range e.fake.Messages(eChannel) {
		if strings.Contains(m.Content, "Continued from <#"+thread+">") {
			return m.Content
		}
	}
	return ""
}

// recorder stands between the bot and the relay, keeping what the bot hands on.
type recorder struct {
	bots.Handler
	mu     sync.Mutex
	clicks []bots.Click
	msgs   []bots.Incoming
}

func (r *recorder) OnClick(ctx context.Context, c bots.Click) {
	r.mu.Lock()
	r.clicks = append(r.clicks, c)
	r.mu.Unlock()
	r.Handler.OnClick(ctx, c)
}

func (r *recorder) OnMessage(ctx context.Context, in bots.Incoming) {
	r.mu.Lock()
	r.msgs = append(r.msgs, in)
	r.mu.Unlock()
	r.Handler.OnMessage(ctx, in)
}

func TestContractFieldsAndRedelivery(t *testing.T) {
	rec := &recorder{}
	e := newEnvWith(t, &env{Daemon: chattest.Daemon{Wrap: func(r bots.Handler) bots.Handler { rec.Handler = r; return rec }}})
	e.Script(touch("a"), touch("b"))
	thread := e.startRun("touch")
	p := e.proposal(thread, 1)
	agent := e.agentOf(thread)
	in := e.click(uAlice, thread, p, ActionApprove)
	e.decided(p.ID, "Approved")
	rec.mu.Lock()
	c := rec.clicks[0]
	rec.mu.Unlock()
	shown, _ := ParseCustomID(customID(t, p, ActionApprove))
	if c.ID != in.ID || c.Message != thread+"/"+p.ID || c.Ref.Hash != shown.Hash || c.Ref.ProposalID != agent.Pending.ID {
		t.Errorf("click = %+v, want ID %s, message %s, proposal %s, hash %q", c, in.ID, thread+"/"+p.ID, agent.Pending.ID, shown.Hash)
	}
	p2 := e.proposal(thread, 2)
	reply, err := e.fake.PostMessage(fakediscord.Message{ChannelID: thread, Author: uAlice, Content: "n",
		MessageReference: &fakediscord.MessageReference{MessageID: p2.ID, ChannelID: thread}})
	if err != nil {
		t.Fatal(err)
	}
	e.decided(p2.ID, "Denied")
	rec.mu.Lock()
	var got bots.Incoming
	for _, m := range rec.msgs {
		if m.ID == reply.ID {
			got = m
		}
	}
	rec.mu.Unlock()
	if got.ReplyTo != thread+"/"+p2.ID || got.ID != reply.ID {
		t.Errorf("reply = %+v, want ID %s replying to %s/%s (the form Post's ids have)", got, reply.ID, thread, p2.ID)
	}
	// The gateway resumes and replays the click: it is acknowledged once, applied once.
	e.fake.ReplayOnResume(64)
	e.settle()
	e.fake.Drop()
	e.wait("the click replayed and refused by Discord", func() bool {
		n := 0
		for _, c := range e.fake.Calls() {
			if strings.Contains(c.Path, "/interactions/"+in.ID+"/") {
				n++
			}
		}
		return n == 2
	})
	e.wait("the bot to ignore it", func() bool { return strings.Contains(e.Logs.String(), "interaction not acknowledged; ignoring it") })
	if n := e.Decisions(c.Ref.ProposalID); n != 1 {
		t.Errorf("decisions on %s = %d, want 1", c.Ref.ProposalID, n)
	}
}

func TestFeedbackLimitWithinDaemonCap(t *testing.T) {
	if maxFeedback*utf8.UTFMax > api.MaxTextBytes || maxFeedback > 4000 || maxFeedback < 1000 {
		t.Fatalf("feedback max_length %d characters: up to %d bytes, the daemon takes %d", maxFeedback, maxFeedback*utf8.UTFMax, api.MaxTextBytes)
	}
	_, err := ParseFeedback(feedbackSubmit(strings.Repeat("é", api.MaxTextBytes/2+1)), "u")
	if err == nil || !strings.Contains(err.Error(), "shorten it") {
		t.Fatalf("an over-long feedback: %v", err)
	}
}

func feedbackSubmit(text string) discordgo.ModalSubmitInteractionData {
	return discordgo.ModalSubmitInteractionData{
		CustomID: CustomID{Action: ActionFeedbackModal, ProposalID: "p-0123456789ab"}.String(),
		Components: []discordgo.MessageComponent{&discordgo.ActionsRow{Components: []discordgo.MessageComponent{
			&discordgo.TextInput{CustomID: feedbackInputID, Value: text},
		}}},
	}
}

func TestButtonsCarryTheShownHash(t *testing.T) {
	ref := bots.Ref{ProposalID: "p-0123456789ab", Hash: "00112233445566ff"}
	m := FromMessage(bots.Message{Summary: "s", Buttons: []bots.Button{
		{Action: bots.ActionApprove, Label: "Approve", Ref: ref},
		{Action: bots.ActionApproveN, Label: "Approve ×3", Ref: ref, Count: 3},
		{Action: bots.ActionDeny, Label: "Deny", Ref: ref},
		{Action: bots.ActionFeedback, Label: "Feedback…", Ref: ref},
	}})
	row := m.Components[0].(discordgo.ActionsRow)
	if len(row.Components) != 4 {
		t.Fatalf("buttons = %d", len(row.Components))
	}
	for _, c := range row.Components {
		id, err := ParseCustomID(c.(discordgo.Button).CustomID)
		if err != nil || id.Hash != ref.Hash {
			t.Errorf("%s: %+v, %v", c.(discordgo.Button).CustomID, id, err)
		}
	}
	modal := feedbackModalFor(ref, "step 1: x")
	if id, _ := ParseCustomID(modal.Data.CustomID); id.Hash != ref.Hash {
		t.Errorf("modal custom_id %s lost the hash", modal.Data.CustomID)
	}
}
