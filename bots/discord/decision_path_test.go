package discord

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/internal/chattest"
	"github.com/agentd/agentd/internal/fakediscord"
)

// The chat decision path end to end on Discord: the real relay, supervisor and discordgo against the
// strict fake. Two cases live elsewhere: /agent run under a 429 is
// TestRunAckedInTimeWhilePostsAreRateLimited, and a decision in a thread the fake
// archived is TestDecisionLandsInArchivedThread (both assert the ack and the buttons).

// A proposal of 10,000 characters full of & < > and backticks: every post is taken by
// the strict fake, the message says what it cut, and the full arguments are uploaded.
func TestHostileTenThousandCharProposalPostedWhole(t *testing.T) {
	e := newEnvWith(t, &env{Daemon: chattest.Daemon{Commands: []string{"bots_test_echo"}}})
	args := map[string]string{}
	for i, n := range chattest.EchoParams {
		args[n] = chattest.HostileArg(i)
	}
	speak := strings.Repeat("&<>`*_ ```", 200) // the relay shows 600 bytes of it; escaped, over Discord's limit
	b, _ := json.Marshal(map[string]any{
		"thoughts": map[string]string{"observations": "o", "text": "t", "reasoning": "r", "self_criticism": "s", "plan": "- echo", "speak": speak},
		"command":  map[string]any{"name": "bots_test_echo", "args": args},
	})
	e.Script(string(b))
	thread := e.startRun("echo it")
	p := e.proposal(thread, 1)
	checkContent(t, p.Content)
	if !strings.Contains(p.Content, "truncated — full text attached as message.txt") || len(p.Attachments) != 1 {
		t.Errorf("the cut proposal does not say so, or has no file (%d):\n%s", len(p.Attachments), p.Content)
	}
	if !strings.Contains(p.Content, Escape("more bytes)")) && !strings.Contains(p.Content, "truncated") {
		t.Errorf("the arguments were cut without a word:\n%s", p.Content)
	}
	if !strings.Contains(p.Content, Escape("Full arguments (")) {
		t.Errorf("the proposal does not say its arguments are attached:\n%s", p.Content)
	}
	var upload fakediscord.Attachment
	e.wait("the arguments uploaded", func() bool {
		for _, m := range e.fake.Messages(thread) {
			for _, a := range m.Attachments {
				if a.Filename == "step-1-bots_test_echo-args.json" {
					upload = a
					return true
				}
			}
		}
		return false
	})
	var got map[string]string
	if err := json.Unmarshal(upload.Data, &got); err != nil {
		t.Fatalf("the uploaded arguments: %v", err)
	}
	for n, want := range args {
		if got[n] != want {
			t.Errorf("argument %s uploaded with %d of its %d characters", n, len(got[n]), len(want))
		}
	}
	e.click(uAlice, thread, p, ActionApprove)
	e.decided(p.ID, "Approved** by")
	e.wait("the result", func() bool { return hasText(e.fake.Messages(thread), "echoed") })
	for _, c := range e.fake.Calls() {
		if c.Method != "GET" && c.Status >= 400 { // a GET of a message id as a channel is how the bot tells threads apart
			t.Errorf("the fake refused %s %s: %d (code %d)", c.Method, c.Path, c.Status, c.Code)
		}
	}
}

// TestLockedThreadContinuationSurvivesRestart: a run whose thread is locked
// goes on in a new thread; after the daemon restarts, a reply there still decides, and
// later posts go there without a second continuation.
func TestLockedThreadContinuationSurvivesRestart(t *testing.T) {
	e := newEnv(t)
	e.Script(reply("bots_test_touch", map[string]string{"what": "a"}), reply("bots_test_touch", map[string]string{"what": "b"}),
		reply("bots_test_touch", map[string]string{"what": "c"}))
	thread := e.startRun("touch")
	p := e.proposal(thread, 1)
	if err := e.fake.LockThread(thread); err != nil {
		t.Fatal(err)
	}
	e.fake.ArchiveThread(thread) // closed and locked, as a moderator closing it does
	e.click(uAlice, thread, p, ActionApprove)
	next := e.continuation(thread)
	e.wait("step 2 in the new thread", func() bool { return hasText(e.fake.Messages(next), "Step 2: ") })

	e.restart()
	chattest.Drain()
	e.say(uAlice, next, "y")
	e.wait("step 2 decided from the new thread after the restart", func() bool {
		return countText(e.fake.Messages(next), "Approved** by") >= 2
	})
	chattest.TouchedInOrder(e.t, "b")
	e.wait("step 3 in the new thread", func() bool { return hasText(e.fake.Messages(next), "Step 3: ") })
	// A post still addressed to the locked thread (an edit's fallback, say) goes on in the
	// new thread too, not in a third one.
	if _, err := e.bot.Post(context.Background(), eChannel, thread, bots.FormatNote("late note for the old thread")); err != nil {
		t.Fatal(err)
	}
	if !hasText(e.fake.Messages(next), "late note for the old thread") {
		t.Error("a post to the locked thread after the restart did not land in its continuation")
	}
	if n := countText(e.fake.Messages(eChannel), "Continued from <#"+thread+">"); n != 1 {
		t.Errorf("%d continuation notes, want 1", n)
	}
}

// continuation waits for the thread that continues the locked thread and returns it.
func (e *env) continuation(thread string) string {
	e.t.Helper()
	var next string
	e.wait("a thread continuing the locked one", func() bool {
		for _, m := range e.fake.Messages(eChannel) {
			if strings.Contains(m.Content, "Continued from <#"+thread+">") && m.Thread != nil {
				next = m.Thread.ID
				return true
			}
		}
		return false
	})
	return next
}
