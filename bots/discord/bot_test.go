package discord

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/agentd/agentd/bots/discord/fakediscord"
)

func TestMentionStartsRunApprovedByClicks(t *testing.T) {
	e := newEnv(t)
	for _, w := range []string{"a", "b", "c"} {
		e.script(reply("bots_test_touch", map[string]string{"what": w}))
	}
	thread := e.startRun("touch three things")
	if ch, ok := e.fake.Channel(thread); !ok || ch.ParentID != eChannel || ch.Type != fakediscord.ChannelPublicThread {
		t.Fatalf("thread = %+v, %v", ch, ok)
	}
	p := e.proposal(thread, 1)
	for _, a := range []Action{ActionApprove, ActionApproveN, ActionDeny, ActionFeedback} {
		customID(t, p, a)
	}
	// The agent's words are escaped and ping nobody; the plan is shown.
	if !strings.Contains(p.Content, `I will bots\_test\_touch \*\*now\*\* @`+zwsp+`everyone`) || !strings.Contains(p.Content, "**Plan: **") {
		t.Errorf("proposal = %q", p.Content)
	}
	if p.MentionEveryone || len(p.Mentions) != 0 {
		t.Errorf("a proposal pinged: %+v", p)
	}
	drain()
	in := e.click(uAlice, thread, p, ActionApproveN)
	e.decided(p.ID, "Approved ×3** by <@"+uAlice.ID+">")
	if r := e.fake.InteractionResponse(in.ID); !r.Responded || r.Type != 6 {
		t.Errorf("click answered with %+v, want a deferred update (6)", r)
	}
	e.touchedInOrder("a", "b", "c")
	e.wait("three results", func() bool {
		ms := e.fake.Messages(thread)
		return hasText(ms, "touched a") && hasText(ms, "touched b") && hasText(ms, "touched c")
	})
	fin := e.proposal(thread, 4)
	e.say(uAlice, thread, "y")
	e.decided(fin.ID, "Approved** by <@"+uAlice.ID+">")
	e.wait("the finish note", func() bool { return hasText(e.fake.Messages(thread), "Finished: all done") })

	if strings.Contains(e.logs.String(), e.fake.Token()) {
		t.Error("the token is in the logs")
	}
	if got := e.fake.Intents(); got != int(Intents) {
		t.Errorf("intents = %d, want %d", got, Intents)
	}
}

func TestTypedDecisions(t *testing.T) {
	e := newEnv(t)
	e.script(reply("bots_test_touch", map[string]string{"what": "a"}), reply("bots_test_touch", map[string]string{"what": "b"}),
		reply("bots_test_touch", map[string]string{"what": "c"}), reply("bots_test_touch", map[string]string{"what": "d"}))
	thread := e.startRun("touch")
	p := e.proposal(thread, 1)
	drain()
	e.say(uCarol, thread, "y -2") // an approver by role
	e.decided(p.ID, "Approved ×2** by <@"+uCarol.ID+">")
	e.touchedInOrder("a", "b")
	p3 := e.proposal(thread, 3)
	e.say(uAlice, thread, "touch e instead")
	e.decided(p3.ID, "Feedback** by <@"+uAlice.ID+">: touch e instead")
	e.modelSaw("touch e instead")
	p4 := e.proposal(thread, 4)
	e.say(uAlice, thread, "n")
	e.decided(p4.ID, "Denied** by <@"+uAlice.ID+">")
	e.wait("the agent to stop", func() bool { return e.agentOf(thread).Pending == nil })
}

func TestFeedbackModal(t *testing.T) {
	e := newEnv(t)
	e.script(reply("bots_test_touch", map[string]string{"what": "x"}))
	thread := e.startRun("touch")
	p := e.proposal(thread, 1)
	opened := e.click(uAlice, thread, p, ActionFeedback)
	e.wait("the modal", func() bool { return e.fake.InteractionResponse(opened.ID).Type == 9 })
	if _, err := e.fake.SubmitModal(opened, uAlice, map[string]string{feedbackInputID: "not that, touch y"}); err != nil {
		t.Fatal(err)
	}
	e.decided(p.ID, "Feedback** by <@"+uAlice.ID+">: not that, touch y")
	e.modelSaw("not that, touch y")
}

func TestNonApproverRefused(t *testing.T) {
	e := newEnv(t)
	e.script(reply("bots_test_touch", map[string]string{"what": "x"}))
	thread := e.startRun("touch x")
	p := e.proposal(thread, 1)
	in := e.click(uBob, thread, p, ActionApprove)
	e.wait("an ephemeral refusal", func() bool {
		notes := e.ephemerals(in)
		return len(notes) == 1 && strings.Contains(notes[0], "not an approver")
	})
	e.say(uBob, thread, "y")
	e.wait("a reply to bob's y", func() bool { return hasText(e.fake.Messages(thread), "<@"+uBob.ID+"> You are not an approver") })
	e.say(uRobot, thread, "y") // bots are ignored
	opened := e.click(uBob, thread, p, ActionFeedback)
	e.wait("a refused dialog", func() bool { return len(e.ephemerals(opened)) == 1 })
	a := e.agentOf(thread)
	if a.Pending == nil || e.decisions(a.Pending.ID) != 0 {
		t.Fatalf("a refused click changed the agent: %+v", a)
	}
	if !strings.Contains(e.logs.String(), "refused a non-approver") {
		t.Error("refusal not logged")
	}
	// A mention in a channel the bot does not serve starts nothing.
	calls := e.fake.CallCount()
	e.say(uAlice, eOther, "<@"+e.fake.BotUser().ID+"> touch")
	e.click(uCarol, thread, p, ActionDeny)
	e.decided(p.ID, "Denied** by <@"+uCarol.ID+">")
	for _, c := range e.fake.Calls()[calls:] {
		if strings.Contains(c.Path, eOther) {
			t.Errorf("the bot answered in an unserved channel: %s %s", c.Method, c.Path)
		}
	}
}

func TestDoubleClickMakesOneDecision(t *testing.T) {
	e := newEnv(t)
	e.script(reply("bots_test_touch", map[string]string{"what": "race"}))
	thread := e.startRun("race")
	p := e.proposal(thread, 1)
	var wg sync.WaitGroup
	ins := make([]fakediscord.Interaction, 4)
	for i, u := range []fakediscord.User{uAlice, uAlice, uCarol, uCarol} {
		wg.Add(1)
		go func() { defer wg.Done(); ins[i] = e.click(u, thread, p, ActionApprove) }()
	}
	wg.Wait()
	e.decided(p.ID, "Approved** by")
	e.wait("three polite refusals", func() bool {
		n := 0
		for _, in := range ins {
			for _, s := range e.ephemerals(in) {
				if strings.Contains(s, "already decided") {
					n++
				}
			}
		}
		return n == 3
	})
	ps, _ := e.sup.Proposals(context.Background(), e.agentOf(thread).ID)
	if e.decisions(ps[0].ID) != 1 {
		t.Errorf("decisions = %d, want 1", e.decisions(ps[0].ID))
	}
}

func TestDirectMessageRun(t *testing.T) {
	e := newEnv(t)
	e.script(reply("bots_test_touch", map[string]string{"what": "dm"}))
	e.say(uAlice, eDM, "touch dm")
	e.wait("the run's note in the DM", func() bool { return hasText(e.fake.Messages(eDM), "is on it") })
	e.wait("the proposal", func() bool { return hasText(e.fake.Messages(eDM), "Step 1: ") })
	e.say(uAlice, eDM, "y")
	e.wait("the result", func() bool { return hasText(e.fake.Messages(eDM), "touched dm") })
}
