package discord

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/fakediscord"
	"github.com/agentd/agentd/internal/testutil"
)

// The chat decision path end to end on Discord: the real relay, supervisor and discordgo against the
// strict fake. Two cases live elsewhere: /agent run under a 429 is
// TestRunAckedInTimeWhilePostsAreRateLimited, and a decision in a thread the fake
// archived is TestDecisionLandsInArchivedThread (both assert the ack and the buttons).

// echo is a test command whose five arguments take 2,000 characters each (the most
// Ollama's grammar bounds a string to): a proposal of 10,000 characters.
type echo struct{}

var echoParams = []string{"a", "b", "c", "d", "e"}

func (echo) Spec() commands.Spec {
	var props []commands.Prop
	for _, n := range echoParams {
		props = append(props, commands.Prop{Name: n, Schema: commands.String(n, commands.MaxGrammarRepetitions)})
	}
	return commands.Spec{Name: "bots_test_echo", Description: "echo long text", Params: commands.Object(props...), Class: commands.ClassWriteWorkspace}
}

func (echo) Execute(context.Context, commands.Env, json.RawMessage) (string, error) {
	return "echoed", nil
}

func init() { commands.Register(echo{}) }

// noDecisionHeld checks, for a while, that proposal id waits undecided.
func (e *env) noDecisionHeld(thread, id string) {
	e.t.Helper()
	if !testutil.Hold(200*time.Millisecond, func() bool {
		a := e.agentOf(thread)
		return a.Pending != nil && a.Pending.ID == id && e.decisions(id) == 0
	}) {
		e.t.Fatalf("proposal %s was decided: agent %+v, %d decisions", id, e.agentOf(thread), e.decisions(id))
	}
}

// A reply to P1 that arrives once P2 waits (P1 was decided by a click meanwhile) decides
// nothing: P2 is not run, and the person is told what waits.
func TestLateReplyForEarlierProposalDecidesNothing(t *testing.T) {
	e := newEnv(t)
	e.script(reply("bots_test_touch", map[string]string{"what": "a"}), reply("bots_test_touch", map[string]string{"what": "b"}))
	thread := e.startRun("touch twice")
	p1 := e.proposal(thread, 1)
	drain()
	e.click(uAlice, thread, p1, ActionApprove)
	e.decided(p1.ID, "Approved** by")
	e.touchedInOrder("a")
	p2 := e.proposal(thread, 2)
	pending := e.agentOf(thread).Pending.ID

	if _, err := e.fake.PostMessage(fakediscord.Message{ChannelID: thread, Author: uCarol, Content: "y",
		MessageReference: &fakediscord.MessageReference{MessageID: p1.ID, ChannelID: thread}}); err != nil {
		t.Fatal(err)
	}
	e.wait("the note to carol", func() bool {
		return hasText(e.fake.Messages(thread), "<@"+uCarol.ID+"> "+Escape("That reply was for an earlier proposal (step 1), so it decided nothing; the agent now waits on step 2"))
	})
	e.noDecisionHeld(thread, pending)
	select {
	case w := <-touched:
		t.Fatalf("a command ran after the late reply: %s", w)
	default:
	}
	if m, _ := e.fake.Message(p2.ID); len(m.Components) == 0 {
		t.Error("P2 lost its buttons")
	}
}

// `y -3` replayed by a resumed gateway is applied once: P1 approved ×3, three commands
// run, the fourth proposal asks again and stays undecided.
func TestRedeliveredApproveNCountedOnce(t *testing.T) {
	e := newEnv(t)
	for _, w := range []string{"a", "b", "c", "d"} {
		e.script(reply("bots_test_touch", map[string]string{"what": w}))
	}
	thread := e.startRun("touch four")
	p1 := e.proposal(thread, 1)
	first := e.agentOf(thread).Pending.ID
	drain()
	y := e.say(uCarol, thread, "y -3")
	e.decided(p1.ID, "Approved ×3** by <@"+uCarol.ID+">")
	e.touchedInOrder("a", "b", "c")
	p4 := e.proposal(thread, 4)
	customID(t, p4, ActionApprove) // it asks again
	fourth := e.agentOf(thread).Pending.ID

	resumed := e.resumes()
	e.fake.ReplayOnResume(64)
	e.settle()
	e.fake.Drop()
	e.wait("the replayed y -3 dropped", func() bool {
		return e.resumes() > resumed && strings.Contains(e.logs.String(), `dropped a redelivered message" platform=discord channel=`+eChannel+" id="+y.ID)
	})
	e.noDecisionHeld(thread, fourth)
	if n := e.decisions(first); n != 1 {
		t.Errorf("decisions on P1 = %d, want 1", n)
	}
	ds := e.decisionsOf(e.agentOf(thread).ID)
	if len(ds) != 3 || ds[0].Count != 3 || ds[0].Source != Platform || ds[1].Source != "grant" || ds[2].Source != "grant" ||
		ds[1].Grant == "" || ds[1].Grant != ds[0].Grant || ds[2].Grant != ds[0].Grant {
		t.Errorf("decisions = %+v, want P1 ×3 from discord, then two by the grant it made", ds)
	}
	select {
	case w := <-touched:
		t.Errorf("a fourth command ran: %s", w)
	default:
	}
}

// decisionsOf lists an agent's decisions, oldest first.
func (e *env) decisionsOf(agentID string) []api.Decision {
	e.t.Helper()
	ps, err := e.sup.API().Views.Proposals(context.Background(), agentID)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []api.Decision
	e.st.View(context.Background(), func(tx *store.Tx) error {
		for _, p := range ps {
			if n, _ := tx.CountDecisions(p.ID); n > 1 {
				e.t.Errorf("proposal %s has %d decisions", p.ID, n)
			}
			if d, err := tx.LastDecision(p.ID); err == nil {
				out = append(out, *d)
			}
		}
		return nil
	})
	return out
}

// originalText is every text the bot wrote into the interaction's response.
func (e *env) originalText(in fakediscord.Interaction) string {
	var b strings.Builder
	for _, c := range e.fake.Calls() {
		if strings.Contains(c.Path, in.Token) || strings.Contains(c.Path, in.ID+"/") {
			b.Write(c.Body)
		}
	}
	return b.String()
}

// A non-approver's /agent list and /agent status are refused and reveal nothing: no
// agent's name, id or task.
func TestNonApproverListLearnsNothing(t *testing.T) {
	e := newEnv(t)
	e.script(reply("bots_test_touch", map[string]string{"what": "x"}))
	thread := e.startRun("touch the secret-project")
	e.proposal(thread, 1)
	a := e.agentOf(thread)
	for _, sub := range []fakediscord.CommandOption{
		{Type: 1, Name: "list"},
		{Type: 1, Name: "status", Options: []fakediscord.CommandOption{{Type: 3, Name: "agent", Value: a.Name}}},
	} {
		t.Run(sub.Name, func(t *testing.T) {
			in, err := e.fake.Command(eChannel, uBob, "agent", sub)
			if err != nil {
				t.Fatal(err)
			}
			e.wait("bob refused", func() bool { return e.original(in, "not an approver") })
			got := e.originalText(in)
			for _, secret := range []string{"secret-project", a.ID, a.Name} {
				if strings.Contains(got, secret) {
					t.Errorf("a non-approver's /agent %s showed %q: %s", sub.Name, secret, got)
				}
			}
		})
	}
}

// auditRows returns the audit log's refused chat actions of agentID.
func (e *env) auditRows(agentID string) []bots.AuditEvent {
	e.t.Helper()
	var out []bots.AuditEvent
	err := e.st.View(context.Background(), func(tx *store.Tx) error {
		entries, err := tx.AuditEntries(store.AuditFilter{AgentID: agentID})
		for _, en := range entries {
			if en.Kind == bots.AuditKind {
				var ev bots.AuditEvent
				json.Unmarshal(en.Detail, &ev)
				out = append(out, ev)
			}
		}
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// A click in run A's thread carrying the custom id of run B's proposal (forged: Discord
// only sends a message's own buttons) is refused and decides nothing for either.
func TestClickInThreadANamingBRefused(t *testing.T) {
	e := newEnv(t)
	e.script(reply("bots_test_touch", map[string]string{"what": "a"}), reply("bots_test_touch", map[string]string{"what": "b"}))
	threadA := e.startRun("touch a")
	pA := e.proposal(threadA, 1)
	threadB := e.startRun("touch b")
	pB := e.proposal(threadB, 1)
	a, b := e.agentOf(threadA), e.agentOf(threadB)

	msg := pA
	in, err := e.fake.Interact(fakediscord.Interaction{Type: fakediscord.InteractionMessageComponent, ChannelID: threadA, Message: &msg,
		Data: fakediscord.ComponentData{CustomID: customID(t, pB, ActionApprove), ComponentType: 2}}, uAlice)
	if err != nil {
		t.Fatal(err)
	}
	e.wait("the refusal", func() bool { return len(e.ephemerals(in)) == 1 })
	e.noDecisionHeld(threadB, b.Pending.ID)
	e.noDecisionHeld(threadA, a.Pending.ID)
	if got := e.ephemerals(in)[0]; !strings.Contains(got, "decided nothing") {
		t.Errorf("refusal = %q, want it to say it decided nothing", got)
	}
	rows := append(e.auditRows(b.ID), e.auditRows(a.ID)...)
	if len(rows) != 1 || rows[0].Platform != "discord" || rows[0].Thread != threadA || rows[0].User != uAlice.ID ||
		rows[0].ProposalID != b.Pending.ID || rows[0].Reason == "" {
		t.Errorf("audit rows = %+v, want one refusal of %s by %s in thread %s", rows, b.Pending.ID, uAlice.ID, threadA)
	}
}

// A proposal of 10,000 characters full of & < > and backticks: every post is taken by
// the strict fake, the message says what it cut, and the full arguments are uploaded.
func TestHostileTenThousandCharProposalPostedWhole(t *testing.T) {
	e := newEnvWith(t, &env{commands: []string{"bots_test_echo"}})
	args := map[string]string{}
	for i, n := range echoParams {
		args[n] = hostileArg(i)
	}
	speak := strings.Repeat("&<>`*_ ```", 200) // the relay shows 600 bytes of it; escaped, over Discord's limit
	b, _ := json.Marshal(map[string]any{
		"thoughts": map[string]string{"observations": "o", "text": "t", "reasoning": "r", "self_criticism": "s", "plan": "- echo", "speak": speak},
		"command":  map[string]any{"name": "bots_test_echo", "args": args},
	})
	e.script(string(b))
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

// hostileArg is 2,000 characters that grow when escaped and break naive cuts.
func hostileArg(i int) string {
	s := strings.Repeat(fmt.Sprintf("&<>`*_%d ```&amp; ", i), 200)
	return s[:commands.MaxGrammarRepetitions]
}

// A write_file proposal over a file of the agent's workspace shows the diff: the old
// line removed, the new one added, escaped for Discord.
func TestWriteFileDiffShown(t *testing.T) {
	e := newEnv(t)
	e.script(reply("write_file", map[string]string{"path": "notes.txt", "contents": "keep\nold *bold* line\n"}),
		reply("write_file", map[string]string{"path": "notes.txt", "contents": "keep\nnew `tick` line\n"}))
	thread := e.startRun("edit notes")
	p1 := e.proposal(thread, 1)
	e.click(uAlice, thread, p1, ActionApprove)
	e.decided(p1.ID, "Approved** by")
	p2 := e.proposal(thread, 2)
	checkContent(t, p2.Content)
	for _, line := range []string{"\n-old *bold* line\n", "\n+new `tick` line\n", "\n keep\n"} {
		if !strings.Contains(p2.Content, codeBlock(line)) {
			t.Errorf("the diff lacks %q:\n%s", codeBlock(line), p2.Content)
		}
	}
}

// TestLockedThreadContinuationSurvivesRestart: a run whose thread is locked
// goes on in a new thread; after the daemon restarts, a reply there still decides, and
// later posts go there without a second continuation.
func TestLockedThreadContinuationSurvivesRestart(t *testing.T) {
	e := newEnv(t)
	e.script(reply("bots_test_touch", map[string]string{"what": "a"}), reply("bots_test_touch", map[string]string{"what": "b"}),
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
	drain()
	e.say(uAlice, next, "y")
	e.wait("step 2 decided from the new thread after the restart", func() bool {
		return countText(e.fake.Messages(next), "Approved** by") >= 2
	})
	e.touchedInOrder("b")
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
