package discord

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/fakediscord"
	"github.com/agentd/agentd/internal/testutil"
)

// Attacks on the chat decision path through the real adapter and the strict fake;
// the relay's own cases are in bots/hostile_chat_test.go.

// twoRuns starts two runs, each waiting on its first proposal, in threads a and b.
func twoRuns(e *env) (a, b string, pa, pb fakediscord.Message) {
	a, pa = e.touchRun("touch a", "a")
	b, pb = e.touchRun("touch b", "b")
	return a, b, pa, pb
}

// Custom IDs forged onto a proposal's message (Discord checks a click against the
// message's buttons, a modified client or a replayed payload need not) decide nothing:
// another thread's proposal, a proposal that does not exist, another hash, a count past
// the limit.
func TestForgedCustomIDsDecideNothing(t *testing.T) {
	e := newEnv(t)
	a, _, pa, pb := twoRuns(e)
	own, err := ParseCustomID(customID(t, pa, ActionApprove))
	if err != nil {
		t.Fatal(err)
	}
	other, err := ParseCustomID(customID(t, pb, ActionApprove))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, id, note string }{
		{"another_threads_proposal", CustomID{Action: ActionApprove, ProposalID: other.ProposalID, Hash: other.Hash}.String(), "names another proposal than the one its message shows"},
		{"another_threads_proposal_without_hash", CustomID{Action: ActionDeny, ProposalID: other.ProposalID}.String(), "names another proposal than the one its message shows"},
		{"made_up_proposal", CustomID{Action: ActionApprove, ProposalID: "p-0123456789ab", Hash: own.Hash}.String(), "names another proposal than the one its message shows"},
		{"another_hash", CustomID{Action: ActionApprove, ProposalID: own.ProposalID, Hash: "0123456789abcdef"}.String(), "as it was shown before"},
		{"count_past_the_limit", "agentd:v2:approve_n:" + own.ProposalID + ":1000:" + own.Hash, "not one I can act on"},
		{"old_format", "agentd:v1:approve:" + own.ProposalID, "older version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cp := pa
			in, err := e.fake.Interact(fakediscord.Interaction{Type: fakediscord.InteractionMessageComponent, ChannelID: a, Message: &cp,
				Data: fakediscord.ComponentData{CustomID: tc.id, ComponentType: 2}}, uAlice)
			if err != nil {
				t.Fatal(err)
			}
			e.wait("the refusal", func() bool { return len(e.ephemerals(in)) > 0 })
			if got := e.ephemerals(in); !strings.Contains(got[0], tc.note) {
				t.Errorf("note = %q, want it to say %q", got, tc.note)
			}
		})
	}
	if ag := e.agentOf(a); ag.Pending == nil || e.Decisions(ag.Pending.ID) != 0 || e.Decisions(other.ProposalID) != 0 {
		t.Errorf("a forged button decided: thread a waits on %+v; thread b's proposal has %d decisions", ag.Pending, e.Decisions(other.ProposalID))
	}
	e.checkNoPreviews()
	e.checkAcksInTime()
}

// A button forged onto proposal 1's message naming proposal 2 (waiting now, with its
// hash) decides nothing: a click is bound to the proposal its message shows.
func TestButtonNamingTheNextProposalDecidesNothing(t *testing.T) {
	e := newEnv(t)
	e.Script(touch("a"), touch("b"))
	thread := e.startRun("touch twice")
	p1 := e.proposal(thread, 1)
	e.click(uAlice, thread, p1, ActionApprove)
	e.decided(p1.ID, "Approved")
	p2 := e.proposal(thread, 2)
	next, err := ParseCustomID(customID(t, p2, ActionApprove))
	if err != nil {
		t.Fatal(err)
	}
	cp := p1
	in, err := e.fake.Interact(fakediscord.Interaction{Type: fakediscord.InteractionMessageComponent, ChannelID: thread, Message: &cp,
		Data: fakediscord.ComponentData{CustomID: next.String(), ComponentType: 2}}, uAlice)
	if err != nil {
		t.Fatal(err)
	}
	e.wait("the refusal", func() bool { return len(e.ephemerals(in)) > 0 })
	if got := e.ephemerals(in); !strings.Contains(got[0], "names another proposal than the one its message shows") {
		t.Errorf("note = %q", got)
	}
	if n := e.Decisions(next.ProposalID); n != 0 {
		t.Errorf("proposal 2 was decided from proposal 1's message (%d decisions)", n)
	}
	e.checkAcksInTime()
}

// A typed reply in one thread that references another thread's proposal message
// decides neither.
func TestReplyReferencingAnotherThreadsProposalDecidesNothing(t *testing.T) {
	e := newEnv(t)
	a, b, pa, pb := twoRuns(e)
	if _, err := e.fake.PostMessage(fakediscord.Message{ChannelID: a, Author: uAlice, Content: "y",
		MessageReference: &fakediscord.MessageReference{MessageID: pb.ID, ChannelID: b}}); err != nil {
		t.Fatal(err)
	}
	state := func() string {
		pa2, pb2 := e.agentOf(a).Pending, e.agentOf(b).Pending
		if pa2 == nil || pb2 == nil {
			ida, _ := ParseCustomID(customID(t, pa, ActionApprove))
			return fmt.Sprintf("a (%s) waits on %v (its first has %d decisions), b on %v", e.agentOf(a).State, pa2, e.Decisions(ida.ProposalID), pb2 != nil)
		}
		return fmt.Sprintf("decisions: a %d, b %d", e.Decisions(pa2.ID), e.Decisions(pb2.ID))
	}
	const undecided = "decisions: a 0, b 0"
	if !testutil.Hold(300*time.Millisecond, func() bool { return state() == undecided }) {
		t.Errorf("a reply in thread a referencing thread b's proposal: %s, want %s", state(), undecided)
	}
	e.checkNoPreviews()
}

// hostileText is model text that tries to ping, link and hide on Discord.
const hostileText = "@everyone @here <@400000000000000003> <@&300000000000000003> <#300000000000000005> </agent run:1> " +
	"https://evil.example/leak?d=SECRET [docs](https://evil.example/leak?d=SECRET) \u202egnp.exe\u202c a\u200bb ``` <t:0:R>"

// liveMarkup reports Discord markup in content that would ping or link: an unbroken
// mention, an invisible character left as is, or a masked link outside code blocks
// (inside them markdown is shown as typed).
func liveMarkup(content string) string {
	for _, bad := range []string{"@everyone", "@here", "<@400000000000000003", "<@&", "<#", "</agent", "<t:", "\u202e", "a\u200bb"} {
		if strings.Contains(content, bad) {
			return bad
		}
	}
	for i, part := range strings.Split(content, "```") {
		if i%2 == 0 && strings.Contains(part, "](https://") {
			return "](https://"
		}
	}
	return ""
}

func (c discordChat) HostileText() string { return hostileText }

// LiveMarkup is the live markup in every message the bot wrote.
func (c discordChat) LiveMarkup() []string {
	var out []string
	for _, m := range c.fake.AllMessages() {
		if m.Author.ID != c.fake.BotUser().ID {
			continue
		}
		if bad := liveMarkup(m.Content); bad != "" {
			out = append(out, fmt.Sprintf("bot message %s holds %q: %.200q", m.ID, bad, m.Content))
		}
	}
	return out
}
