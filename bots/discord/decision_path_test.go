package discord

import (
	"context"
	"strings"
	"testing"

	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/internal/chattest"
)

// The chat decision path end to end on Discord: the real relay, supervisor and discordgo against the
// strict fake. Two cases live elsewhere: /agent run under a 429 is
// TestRunAckedInTimeWhilePostsAreRateLimited, and a decision in a thread the fake
// archived is TestDecisionLandsInArchivedThread (both assert the ack and the buttons).

// TestLockedThreadContinuationSurvivesRestart: a run whose thread is locked
// goes on in a new thread; after the daemon restarts, a reply there still decides, and
// later posts go there without a second continuation.
func TestLockedThreadContinuationSurvivesRestart(t *testing.T) {
	e := newEnv(t)
	e.Script(touch("a"), touch("b"), touch("c"))
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
