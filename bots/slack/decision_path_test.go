package slack

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/fakeslack"
	"github.com/agentd/agentd/internal/testutil"
)

// The chat decision path end to end on Slack: the real relay, supervisor and slack-go against the
// strict fake. /agent run under a 429 is TestSlashRunAckedUnder429. A decision in an
// archived thread has no Slack case: Slack threads do not archive, and a message in
// one can be edited as long as the channel exists (Discord's is
// TestDecisionLandsInArchivedThread).

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

// noDecisionHeld checks, for a while, that proposal id waits undecided in thread.
func (e *env) noDecisionHeld(thread, id string) {
	e.t.Helper()
	if !testutil.Hold(200*time.Millisecond, func() bool {
		a := e.agentOf(thread)
		return a.Pending != nil && a.Pending.ID == id && e.decisions(id) == 0
	}) {
		e.t.Fatalf("proposal %s was decided: agent %+v, %d decisions", id, e.agentOf(thread), e.decisions(id))
	}
}

// noCommandRan checks that no command started since the last drain.
func noCommandRan(t *testing.T) {
	t.Helper()
	select {
	case w := <-touched:
		t.Errorf("a command ran: %s", w)
	default:
	}
}

// A `y` written while P1 was shown reaches the bot only once P1 was decided elsewhere
// (agentctl) and P2 waits: the socket was down and its reconnect rate limited. By its
// ts it answers P1, so it decides nothing, P2 is not run, and its writer is told.
func TestLateReplyForEarlierProposalDecidesNothing(t *testing.T) {
	e := newEnv(t)
	e.script(reply("bots_test_touch", map[string]string{"what": "a"}), reply("bots_test_touch", map[string]string{"what": "b"}))
	thread := e.startRun("touch twice")
	e.proposal(thread, 1)
	p1 := e.agentOf(thread)
	drain()

	e.slack.RateLimitNext("apps.connections.open", 3) // holds the reconnect for 3 s
	e.slack.Drop()
	_, yts := e.slack.Say(approver2, channel, "channel", thread, "y", false)
	if _, err := e.sup.API().Decisions.Decide(context.Background(), p1.ID, api.DecideRequest{ProposalID: p1.Pending.ID,
		Kind: api.DecisionApprove, Count: 1, By: "alice", Source: "agentctl"}); err != nil {
		t.Fatal(err)
	}
	p2 := e.proposal(thread, 2)
	if !e.slack.Wait(0, func(v fakeslack.View) bool { return !v.Connected() }) {
		t.Fatal("the bot reconnected before P2 was posted; the reply is not late")
	}
	if !bots.DecimalBefore(yts, p2.TS) {
		t.Fatalf("the reply (%s) is not older than P2 (%s)", yts, p2.TS)
	}
	e.wait("the note to its writer", func(v fakeslack.View) bool {
		for _, m := range v.Ephemeral(approver2) {
			if strings.Contains(m.Text, "That reply was for an earlier proposal (step 1), so it decided nothing; the agent now waits on step 2") {
				return true
			}
		}
		return false
	})
	pending := e.agentOf(thread).Pending.ID
	e.noDecisionHeld(thread, pending)
	if got := <-touched; got != "a" {
		t.Errorf("touched %q, want P1's a", got)
	}
	noCommandRan(t)
	button(t, e.message(thread, p2.TS), "approve") // P2 still asks
}

// A `y -3` redelivered by Slack (same payload, retry_attempt 1) is applied once: P1
// approved ×3, three commands run, the fourth proposal asks again and stays undecided.
func TestRedeliveredApproveNCountedOnce(t *testing.T) {
	e := newEnv(t)
	for _, w := range []string{"a", "b", "c", "d"} {
		e.script(reply("bots_test_touch", map[string]string{"what": w}))
	}
	thread := e.startRun("touch four")
	p1 := e.proposal(thread, 1)
	first := e.agentOf(thread).Pending.ID
	drain()
	env, ts := e.slack.Say(approver, channel, "channel", thread, "y -3", false)
	e.decided(thread, p1.TS, "Approved ×3* by \\u003c@"+approver)
	for _, w := range []string{"a", "b", "c"} {
		if got := <-touched; got != w {
			t.Errorf("touched %q, want %q", got, w)
		}
	}
	p4 := e.proposal(thread, 4)
	button(t, p4, "approve") // it asks again
	fourth := e.agentOf(thread).Pending.ID

	again := e.slack.Redeliver(env, "timeout")
	e.wait("the redelivery acked", func(v fakeslack.View) bool { return v.AckedInTime(again) })
	e.wait("the redelivery dropped", func(fakeslack.View) bool {
		return strings.Contains(e.logs.String(), `dropped a redelivered message" platform=slack channel=`+channel+" id="+ts)
	})
	e.noDecisionHeld(thread, fourth)
	if n := e.decisions(first); n != 1 {
		t.Errorf("decisions on P1 = %d, want 1", n)
	}
	var d *api.Decision
	e.st.View(context.Background(), func(tx *store.Tx) error {
		var err error
		d, err = tx.LastDecision(first)
		return err
	})
	if d == nil || d.Count != 3 || d.Source != "slack" {
		t.Errorf("P1's decision = %+v, want ×3 from slack", d)
	}
	noCommandRan(t)
}

// A non-approver's /agent list and /agent status are refused and reveal nothing: no
// agent's name, id or task.
func TestNonApproverListLearnsNothing(t *testing.T) {
	e := newEnv(t)
	e.script(reply("bots_test_touch", map[string]string{"what": "x"}))
	thread := e.startRun("touch the secret-project")
	e.proposal(thread, 1)
	a := e.agentOf(thread)
	for _, tc := range []struct{ name, text string }{
		{"list", "list"},
		{"status", "status " + a.Name},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := e.answer(e.slack.Slash(stranger, channel, "/agent", tc.text))
			if !strings.Contains(got, "not an approver") {
				t.Errorf("/agent %s by a stranger = %q, want a refusal", tc.text, got)
			}
			for _, secret := range []string{"secret-project", a.ID, a.Name} {
				if strings.Contains(got, secret) {
					t.Errorf("/agent %s by a stranger showed %q: %q", tc.text, secret, got)
				}
			}
		})
	}
}

// auditRows returns the audit log's refused chat actions under agentID.
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

// A click in run A's thread whose button value names run B's agent and proposal (a
// forged value) is refused, written to the audit log, and decides nothing: B still
// waits.
func TestClickInThreadANamingBRefused(t *testing.T) {
	e := newEnv(t)
	e.script(reply("bots_test_touch", map[string]string{"what": "a"}), reply("bots_test_touch", map[string]string{"what": "b"}))
	threadA := e.startRun("touch a")
	pA := e.proposal(threadA, 1)
	threadB := e.startRun("touch b")
	pB := e.proposal(threadB, 1)
	a, b := e.agentOf(threadA), e.agentOf(threadB)

	env := e.slack.Click(approver, channel, threadA, pA.TS)("agentd_approve", button(t, pB, "approve"))
	e.wait("the refusal", func(v fakeslack.View) bool {
		for _, m := range v.Ephemeral(approver) {
			if strings.Contains(m.Text, "decided nothing") {
				return true
			}
		}
		return false
	})
	// The refusal may be posted before the click's ack lands: wait for the ack, which the
	// fake marks in time or late by Slack's own deadline.
	e.wait("the forged click acked in time", func(v fakeslack.View) bool { return v.AckedInTime(env) })
	e.noDecisionHeld(threadB, b.Pending.ID)
	e.noDecisionHeld(threadA, a.Pending.ID)
	// Refused as a button that is not its message's proposal, or as another agent's: either
	// way one audit row, under the agent the button named, saying where and who.
	rows := append(e.auditRows(b.ID), e.auditRows(a.ID)...)
	if len(rows) != 1 || rows[0].Platform != "slack" || rows[0].Channel != channel || rows[0].Thread != threadA ||
		rows[0].User != approver || rows[0].ProposalID != b.Pending.ID || rows[0].Reason == "" {
		t.Errorf("audit rows = %+v, want one refusal of %s by %s in thread %s", rows, b.Pending.ID, approver, threadA)
	}
}

// sectionTexts is the text of every section and context block of a posted message.
func sectionTexts(t *testing.T, m fakeslack.Message) string {
	t.Helper()
	var raw []struct {
		Type string `json:"type"`
		Text struct {
			Text string `json:"text"`
		} `json:"text"`
		Elements []struct {
			Text any `json:"text"` // a context's is a string; a button's, an object
		} `json:"elements"`
	}
	if err := json.Unmarshal(m.Blocks, &raw); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, bl := range raw {
		b.WriteString(bl.Text.Text + "\n")
		for _, el := range bl.Elements {
			if s, ok := el.Text.(string); ok && bl.Type == "context" {
				b.WriteString(s + "\n")
			}
		}
	}
	return b.String()
}

// A proposal of 10,000 characters full of & < > and backticks: every post is taken by
// the strict fake, the message says it was truncated, the full text and the full
// arguments are uploaded.
func TestHostileTenThousandCharProposalPostedWhole(t *testing.T) {
	e := newEnvWith(t, &env{commands: []string{"bots_test_echo"}})
	args := map[string]string{}
	for i, n := range echoParams {
		args[n] = hostileArg(i)
	}
	e.script(reply("bots_test_echo", args))
	thread := e.startRun("echo it")
	p := e.proposal(thread, 1)
	checkFitted(t, blocksOf(t, p), true)
	if text := sectionTexts(t, p); !strings.Contains(text, "Full arguments (") {
		t.Errorf("the proposal does not say its arguments are attached:\n%s", text)
	}
	var upload fakeslack.File
	e.wait("the full text and the arguments uploaded", func(v fakeslack.View) bool {
		full := false
		for _, f := range v.Files() {
			if f.ThreadTS != thread {
				continue
			}
			full = full || strings.Contains(f.Content, "I will bots_test_echo <now> & then")
			if f.Name == "step-1-bots_test_echo-args.json" {
				upload = f
			}
		}
		return full && upload.Name != ""
	})
	var got map[string]string
	if err := json.Unmarshal([]byte(upload.Content), &got); err != nil {
		t.Fatalf("the uploaded arguments: %v", err)
	}
	for n, want := range args {
		if got[n] != want {
			t.Errorf("argument %s uploaded with %d of its %d characters", n, len(got[n]), len(want))
		}
	}
	e.click(approver, thread, p, "approve")
	d := e.decided(thread, p.TS, "Approved* by")
	checkFitted(t, blocksOf(t, d), true)
	e.wait("the result", func(v fakeslack.View) bool { return hasText(v.Messages(channel, thread), "echoed") })
	if bad := regexp.MustCompile(`msg_too_long|invalid_blocks|msg_blocks_too_long|level=ERROR`).FindString(e.logs.String()); bad != "" {
		t.Errorf("the fake refused a post (%s):\n%s", bad, e.logs.String())
	}
}

// hostileArg is 2,000 characters that grow fourfold when escaped for Slack and break
// naive cuts.
func hostileArg(i int) string {
	s := strings.Repeat(fmt.Sprintf("&<>&<>&<>`*_%d ```&amp; ", i), 200)
	return s[:commands.MaxGrammarRepetitions]
}

// A write_file proposal over a file of the agent's workspace shows the diff: the old
// line removed, the new one added, escaped for Slack.
func TestWriteFileDiffShown(t *testing.T) {
	e := newEnv(t)
	e.script(reply("write_file", map[string]string{"path": "notes.txt", "contents": "keep\nold & <a> line\n"}),
		reply("write_file", map[string]string{"path": "notes.txt", "contents": "keep\nnew & <b> line\n"}))
	thread := e.startRun("edit notes")
	p1 := e.proposal(thread, 1)
	e.click(approver, thread, p1, "approve")
	e.decided(thread, p1.TS, "Approved* by")
	p2 := e.proposal(thread, 2)
	checkFitted(t, blocksOf(t, p2), false)
	text := sectionTexts(t, p2)
	for _, line := range []string{"\n-old &amp; &lt;a&gt; line\n", "\n+new &amp; &lt;b&gt; line", "\n keep\n"} {
		if !strings.Contains(text, line) {
			t.Errorf("the diff lacks %q:\n%s", line, text)
		}
	}
}

// A reply also sent to the channel (subtype thread_broadcast) is a reply in its thread
// like any other: its "y" approves the proposal waiting there.
func TestThreadBroadcastIsAReply(t *testing.T) {
	e := newEnv(t)
	e.script(reply("bots_test_touch", map[string]string{"what": "a"}))
	thread := e.startRun("touch once")
	p := e.proposal(thread, 1)
	drain()
	e.slack.Broadcast(approver, channel, thread, "y")
	e.decided(thread, p.TS, "Approved* by \\u003c@"+approver)
	if got := <-touched; got != "a" {
		t.Errorf("touched %q, want a", got)
	}
}

// Feedback written while the run's proposal waited, delivered late (the socket was down)
// after it and the finish were approved in agentctl and the run ended, starts no new task: it
// was written before the finish note. A message written after the note does.
func TestLateTextAfterTheRunEndedStartsNothing(t *testing.T) {
	e := newEnv(t)
	e.script(reply("bots_test_touch", map[string]string{"what": "a"})) // then finish
	thread := e.startRun("touch once")
	e.proposal(thread, 1)
	a := e.agentOf(thread)
	drain()

	e.slack.RateLimitNext("apps.connections.open", 4) // holds the reconnect for 4 s
	e.slack.Drop()
	e.slack.Say(approver, channel, "channel", thread, "also look at the docs folder", false)
	if _, err := e.sup.API().Decisions.Decide(context.Background(), a.ID, api.DecideRequest{ProposalID: a.Pending.ID,
		Kind: api.DecisionApprove, Count: 1, By: "alice", Source: "agentctl"}); err != nil {
		t.Fatal(err)
	}
	if got := <-touched; got != "a" {
		t.Errorf("touched %q, want a", got)
	}
	e.proposal(thread, 2) // finish, approved too
	if _, err := e.sup.API().Decisions.Decide(context.Background(), a.ID, api.DecideRequest{ProposalID: e.agentOf(thread).Pending.ID,
		Kind: api.DecisionApprove, Count: 1, By: "alice", Source: "agentctl"}); err != nil {
		t.Fatal(err)
	}
	e.wait("the finish note", func(v fakeslack.View) bool { return hasText(v.Messages(channel, thread), "Finished") })
	if !e.slack.Wait(0, func(v fakeslack.View) bool { return !v.Connected() }) {
		t.Fatal("the bot reconnected before the run finished; the feedback is not late")
	}
	e.wait("the note to its writer", func(v fakeslack.View) bool {
		for _, m := range v.Ephemeral(approver) {
			if strings.Contains(m.Text, "That was written while the agent was still working on its last run, so it started nothing") {
				return true
			}
		}
		return false
	})
	if e.slack.Wait(0, func(v fakeslack.View) bool { return hasText(v.Messages(channel, thread), "New task taken") }) {
		t.Fatal("the late feedback started a new task")
	}
	e.slack.Say(approver, channel, "channel", thread, "now tidy the docs", false)
	e.wait("the follow-up task", func(v fakeslack.View) bool {
		return hasText(v.Messages(channel, thread), "New task taken: now tidy the docs")
	})
}
