package chattest

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/bots"
	"github.com/agentd/agentd/internal/testutil"
)

const speak = "I will touch it"

// Scenarios are the cases both chat platforms run, each asserting the same on both.
var Scenarios = []Scenario{
	{"redelivered_approve_n_counted_once", redeliveredApproveNCountedOnce},
	{"non_approver_list_learns_nothing", nonApproverListLearnsNothing},
	{"click_in_thread_a_naming_b_refused", clickInThreadANamingBRefused},
	{"racing_clicks_make_one_decision", racingClicksMakeOneDecision},
	{"restart_keeps_thread_and_pending_proposal", restartKeepsThreadAndPendingProposal},
	{"feedback_typed_and_by_dialog", feedbackTypedAndByDialog},
	{"stopped_run_ends_for_late_messages", stoppedRunEndsForLateMessages},
	{"late_reply_for_an_earlier_proposal_decides_nothing", lateReplyForAnEarlierProposalDecidesNothing},
	{"reply_to_the_task_message_steers_its_run", replyToTheTaskMessageSteersItsRun},
	{"hostile_model_text_pings_and_links_nothing", hostileModelTextPingsAndLinksNothing},
	{"team_stop_is_for_approvers_and_closes_the_role_proposal", teamStopIsForApprovers},
	{"team_file_outside_the_directory_refused_unread", teamFileOutsideTheDirectoryRefused},
	{"scheduled_run_delivered_to_its_thread", scheduledRunDeliveredToItsThread},
	{"edits_are_answered_not_read", editsAreAnsweredNotRead},
	{"rewind_asked_in_the_thread_and_done_by_an_approver", rewindAskedInTheThreadAndDoneByAnApprover},
	{"write_file_diff_shown", writeFileDiffShown},
	{"non_approver_refused", nonApproverRefused},
	{"hostile_ten_thousand_char_proposal_posted_whole", hostileTenThousandCharProposalPostedWhole},
	{"slash_commands_drive_a_run", slashCommandsDriveARun},
	{"team_run_in_thread", teamRunInThread},
	{"long_result_uploaded_as_file", longResultUploadedAsFile},
	{"mention_starts_a_run_approved_by_a_click", mentionStartsARunApprovedByAClick},
	{"forged_button_values_decide_nothing", forgedButtonValuesDecideNothing},
	{"dropped_connection_loses_nothing", droppedConnectionLosesNothing},
	{"direct_message_run", directMessageRun},
	{"unserved_channel_gets_nothing", unservedChannelGetsNothing},
}

func agentOf(c Chat, thread string) *api.Agent {
	return c.Daemon().AgentOf(c.Platform(), c.Channel(), thread)
}

func noDecisionHeld(c Chat, thread, id string) {
	c.Daemon().NoDecisionHeld(c.Platform(), c.Channel(), thread, id)
}

// A `y -3` the platform delivers again (Slack's retry of the same payload, Discord's
// replay on a resumed gateway) is applied once: P1 approved ×3, three commands run, the
// fourth proposal asks again and stays undecided.
func redeliveredApproveNCountedOnce(t *testing.T, c Chat) {
	d := c.Daemon()
	for _, w := range []string{"a", "b", "c", "d"} {
		d.Script(Touch(w, speak))
	}
	thread := c.StartRun("touch four")
	p1 := c.Proposal(thread, 1)
	first := agentOf(c, thread).Pending.ID
	Drain()
	y := c.Say(Approver, thread, "y -3")
	c.Decided(thread, p1, c.Shown("Approved ×3", Approver))
	TouchedInOrder(t, "a", "b", "c")
	// The grant, not a policy, decided the third; made by a plain id, its maker is a mention.
	c.Decided(thread, c.Proposal(thread, 3), c.Shown("Approved", Approver)+c.Escaped("'s y -3 (0 of 2 left)"))
	p4 := c.Proposal(thread, 4)
	if !c.Asks(thread, p4) {
		t.Error("the fourth proposal does not ask")
	}
	fourth := agentOf(c, thread).Pending.ID

	c.Redeliver(y)
	c.Wait("the redelivery dropped", func() bool {
		return strings.Contains(d.Logs.String(), `dropped a redelivered message" platform=`+c.Platform()+" channel="+c.Channel()+" id="+y)
	})
	noDecisionHeld(c, thread, fourth)
	if n := d.Decisions(first); n != 1 {
		t.Errorf("decisions on P1 = %d, want 1", n)
	}
	ds := d.DecisionsOf(agentOf(c, thread).ID)
	if len(ds) != 3 || ds[0].Count != 3 || ds[0].Source != c.Platform() || ds[1].Source != "grant" || ds[2].Source != "grant" ||
		ds[1].Grant == "" || ds[1].Grant != ds[0].Grant || ds[2].Grant != ds[0].Grant {
		t.Errorf("decisions = %+v, want P1 ×3 from %s, then two by the grant it made", ds, c.Platform())
	}
	NoCommandRan(t)
}

// A non-approver's /agent list and /agent status are refused and reveal nothing: no
// agent's name, id or task.
func nonApproverListLearnsNothing(t *testing.T, c Chat) {
	c.Daemon().Script(Touch("x", speak))
	thread := c.StartRun("touch the secret-project")
	c.Proposal(thread, 1)
	a := agentOf(c, thread)
	for _, text := range []string{"list", "status " + a.Name} {
		got := c.Command(Stranger, text)
		if !strings.Contains(got, "not an approver") {
			t.Errorf("/agent %s by a stranger = %q, want a refusal", text, got)
		}
		for _, secret := range []string{"secret-project", a.ID, a.Name} {
			if strings.Contains(got, secret) {
				t.Errorf("/agent %s by a stranger showed %q: %q", text, secret, got)
			}
		}
	}
}

// A click in run A's thread whose button names run B's agent and proposal (forged: a
// platform only sends a message's own buttons) is refused with a note, written to the
// audit log, and decides nothing for either.
func clickInThreadANamingBRefused(t *testing.T, c Chat) {
	d := c.Daemon()
	d.Script(Touch("a", speak), Touch("b", speak))
	threadA := c.StartRun("touch a")
	pA := c.Proposal(threadA, 1)
	threadB := c.StartRun("touch b")
	pB := c.Proposal(threadB, 1)
	a, b := agentOf(c, threadA), agentOf(c, threadB)

	c.ForgeClick(Approver, threadA, pA, pB)
	c.Wait("the refusal", func() bool { return Has(c.NotesTo(Approver), "decided nothing") })
	noDecisionHeld(c, threadB, b.Pending.ID)
	noDecisionHeld(c, threadA, a.Pending.ID)
	if notes := c.NotesTo(Approver); len(notes) != 1 {
		t.Errorf("notes to the clicker = %q, want the one refusal", notes)
	}
	// Refused as a button that is not its message's proposal, or as another agent's: either
	// way one audit row, under the agent the button named, saying where and who.
	rows := append(d.AuditRows(b.ID), d.AuditRows(a.ID)...)
	if len(rows) != 1 || rows[0].Platform != c.Platform() || rows[0].Channel != c.Channel() || rows[0].Thread != threadA ||
		rows[0].User != c.UserID(Approver) || rows[0].ProposalID != b.Pending.ID || rows[0].Reason == "" {
		t.Errorf("audit rows = %+v, want one refusal of %s by %s in thread %s", rows, b.Pending.ID, c.UserID(Approver), threadA)
	}
}

// Four clicks at once (two people, each twice) make one decision; the other three are
// refused politely; a button on a proposal already decided is refused too.
func racingClicksMakeOneDecision(t *testing.T, c Chat) {
	d := c.Daemon()
	d.Script(Touch("race", speak))
	thread := c.StartRun("race")
	p := c.Proposal(thread, 1)
	var wg sync.WaitGroup
	for _, u := range []User{Approver, Approver, GroupApprover, GroupApprover} {
		wg.Add(1)
		go func() { defer wg.Done(); c.Click(u, thread, p, bots.ActionApprove) }()
	}
	wg.Wait()
	c.Decided(thread, p, c.Shown("Approved", Anyone))
	refusals := func() int {
		return Count(c.NotesTo(Approver), "already decided") + Count(c.NotesTo(GroupApprover), "already decided")
	}
	c.Wait("three polite refusals", func() bool { return refusals() == 3 })
	ps, _ := d.Sup.API().Views.Proposals(context.Background(), agentOf(c, thread).ID)
	if n := d.Decisions(ps[0].ID); n != 1 {
		t.Errorf("decisions = %d, want 1", n)
	}
	c.Proposal(thread, 2)
	before := len(c.NotesTo(GroupApprover))
	c.Click(GroupApprover, thread, p, bots.ActionDeny)
	c.Wait("the refusal of the old button", func() bool { return len(c.NotesTo(GroupApprover)) == before+1 })
}

// After the daemon restarts, the run's thread and its waiting proposal are the same: a
// click on the proposal posted before decides it, the result lands in the thread, and
// the proposal is not posted again.
func restartKeepsThreadAndPendingProposal(t *testing.T, c Chat) {
	c.Daemon().Script(Touch("x", speak))
	thread := c.StartRun("touch")
	p := c.Proposal(thread, 1)
	c.Restart()
	c.Click(GroupApprover, thread, p, bots.ActionApprove)
	c.Decided(thread, p, c.Shown("Approved", GroupApprover))
	c.Wait("the result in the same thread", func() bool { return Has(c.Posted(thread), "touched x") })
	if n := Count(c.Posted(thread), "Step 1: "); n != 1 {
		t.Errorf("step 1 posted %d times", n)
	}
}

// Feedback typed in the thread and feedback written in the dialog behind the button are
// each recorded as the decision, and reach the model.
func feedbackTypedAndByDialog(t *testing.T, c Chat) {
	d := c.Daemon()
	d.Script(Touch("x", speak), Touch("y", speak))
	thread := c.StartRun("touch")
	p := c.Proposal(thread, 1)
	c.Say(Approver, thread, "touch y instead")
	c.Decided(thread, p, c.Shown("Feedback", Approver)+": touch y instead")

	p2 := c.Proposal(thread, 2)
	c.Feedback(Approver, thread, p2, "not that, touch z")
	c.Decided(thread, p2, c.Shown("Feedback", Approver)+": not that, touch z")
	c.Wait("the model to see the feedback", func() bool { return d.ModelSaw("not that, touch z") })
}

// A run stopped with /agent stop shows its end in its thread, so a message written in
// the thread before the stop and delivered after it starts no task (its writer is told
// why); one written after the end does.
func stoppedRunEndsForLateMessages(t *testing.T, c Chat) {
	release := c.Hold("also look at the docs")
	t.Cleanup(release)
	c.Daemon().Script(Touch("a", speak))
	thread := c.StartRun("touch")
	c.Proposal(thread, 1)
	late := c.Say(Approver, thread, "also look at the docs")
	if got := c.Command(Approver, "stop "+agentOf(c, thread).ID); !strings.Contains(got, "is idle") {
		t.Fatalf("/agent stop answered %q", got)
	}
	c.Wait("the run's end in its thread", func() bool { return Has(c.Posted(thread), "Finished: stopped by a person") })
	release()
	c.Wait("the note to the late message's writer", func() bool {
		return Has(c.RepliesTo(Approver, thread, late), "written while the agent was still working on its last run")
	})
	if Has(c.Posted(thread), "New task taken") {
		t.Fatal("the message written before the stop started a task")
	}
	c.Say(Approver, thread, "now tidy the docs")
	c.Wait("the follow-up task", func() bool { return Has(c.Posted(thread), "New task taken: now tidy the docs") })
}

// A reply to proposal 1 delivered late — after the click that decided proposal 1, once
// proposal 2 waits — decides nothing: proposal 2 is not run and keeps its buttons, and
// the reply's writer is told what waits now.
func lateReplyForAnEarlierProposalDecidesNothing(t *testing.T, c Chat) {
	d := c.Daemon()
	d.Script(Touch("a", speak), Touch("b", speak))
	thread := c.StartRun("touch twice")
	p1 := c.Proposal(thread, 1)
	Drain()
	late, deliver := c.LateReply(GroupApprover, thread, p1, "y")
	t.Cleanup(deliver)
	c.Click(Approver, thread, p1, bots.ActionApprove)
	c.Decided(thread, p1, c.Shown("Approved", Approver))
	TouchedInOrder(t, "a")
	p2 := c.Proposal(thread, 2)
	pending := agentOf(c, thread).Pending.ID
	deliver()
	c.Wait("the note to the late reply's writer", func() bool {
		return Has(c.RepliesTo(GroupApprover, thread, late), "so it decided nothing; the agent now waits on step 2")
	})
	if notes := c.RepliesTo(GroupApprover, thread, late); !Has(notes, "That reply was for an earlier proposal") || !Has(notes, "step 1") {
		t.Errorf("the note does not name the proposal the reply was for: %q", notes)
	}
	noDecisionHeld(c, thread, pending)
	select {
	case w := <-Touched:
		t.Fatalf("a command ran after the late reply: %s", w)
	default:
	}
	if !c.Asks(thread, p2) {
		t.Error("proposal 2 lost its buttons")
	}
}

// A reply to the bot's "Task: …" message that a run started by /agent run hangs off
// (TaskReply) speaks to that run as a reply in its thread does: a stranger's is refused,
// an approver's decides the proposal waiting there, or gives the idle agent a follow-up
// task. It starts no second run and no second thread.
func replyToTheTaskMessageSteersItsRun(t *testing.T, c Chat) {
	d := c.Daemon()
	d.Script(Reply("finish", map[string]string{"reason": "nothing to do"}, speak), Touch("b", speak))
	if got := c.Command(Approver, "run tidy"); !strings.Contains(got, "Started agent") {
		t.Fatalf("/agent run tidy = %q", got)
	}
	root := c.Find("", "Task: tidy")
	thread := root.ID // the thread hangs off the task message
	p := c.Proposal(thread, 1)

	c.TaskReply(Stranger, root, "y")
	c.Wait("the stranger refused", func() bool { return c.Answered(Stranger, "not an approver") > 0 })
	c.TaskReply(Approver, root, "y")
	c.Decided(thread, p, c.Shown("Approved", Approver))
	c.Wait("the run's end", func() bool { return Has(c.Posted(thread), "Finished") })

	Drain()
	c.TaskReply(Approver, root, "now touch b")
	c.Wait("the follow-up task in the run's thread", func() bool { return Has(c.Posted(thread), "New task taken: now touch b") })
	c.Wait("the follow-up's proposal", func() bool {
		a := agentOf(c, thread)
		return a.Pending != nil && a.Pending.Command == "bots_test_touch"
	})
	c.TaskReply(Approver, root, "y")
	select {
	case got := <-Touched:
		if got != "b" {
			t.Errorf("touched %q, want b", got)
		}
	case <-time.After(5 * time.Second):
		// The agent's state can run ahead of the relay's post: a reply that came before
		// the thread showed the proposal decides nothing, and a person replies again.
		c.TaskReply(Approver, root, "y")
		TouchedInOrder(t, "b")
	}
	if agents, err := d.Sup.API().Views.Agents(t.Context()); err != nil || len(agents) != 1 {
		t.Fatalf("agents = %d (%v), want the one /agent run started", len(agents), err)
	}
	if n := Count(c.Posted(""), "Task: "); n != 1 {
		t.Errorf("%d task messages in the channel, want 1", n)
	}
}

// A hostile model's question and proposal ping, link and hide nothing anywhere the bot
// writes. (Every harness checks at its end that nothing the bot wrote has previews on
// and that every delivery was acked in time.)
func hostileModelTextPingsAndLinksNothing(t *testing.T, c Chat) {
	hostile := c.HostileText()
	c.Daemon().Script(
		Reply("ask_user", map[string]string{"question": hostile}, speak),
		Reply("write_file", map[string]string{"path": "notes.txt", "contents": strings.Repeat(hostile+"\n", 6)}, speak),
	)
	thread := c.StartRun("write the notes")
	c.Wait("the question", func() bool { return Has(c.Posted(thread), "Question") })
	c.Say(Approver, thread, "fine")
	p := c.Proposal(thread, 2)
	if a := agentOf(c, thread); a.Pending == nil || a.Pending.Command != "write_file" {
		t.Fatalf("step 2 is not the hostile write_file: %+v", a.Pending)
	}
	c.Click(Approver, thread, p, bots.ActionDeny)
	c.Decided(thread, p, c.Shown("Denied", Anyone))
	for _, bad := range c.LiveMarkup() {
		t.Errorf("the bot wrote live markup: %s", bad)
	}
}

// /agent team stop ID is for approvers: a stranger's is refused and the run goes on; an
// approver's stops it, the end in the thread names who stopped it, the role's open
// proposal loses its buttons though the run ended first, and a second stop says the run
// has ended already.
func teamStopIsForApprovers(t *testing.T, c Chat) {
	d := c.Daemon()
	d.Script(Touch("page", speak))
	thread := c.StartTeam("build", "say hi")
	p := c.RoleProposal(thread, "programmer", 1)
	runs, err := d.Eng.Teams(t.Context())
	if err != nil || len(runs) != 1 {
		t.Fatalf("team runs = %+v, %v", runs, err)
	}
	id := runs[0].ID
	if got := c.StopTeam(Stranger, id); !strings.Contains(got, "not an approver") {
		t.Errorf("a stranger's /agent team stop = %q, want a refusal", got)
	}
	if r, _ := d.Eng.Team(t.Context(), id); r.Status != api.TeamRunning {
		t.Fatalf("a refused stop stopped the run: %s (%s)", r.Status, r.Reason)
	}
	if got := c.StopTeam(GroupApprover, id); !strings.Contains(got, "Stopped team run "+id+" (build).") {
		t.Fatalf("/agent team stop = %q", got)
	}
	by := c.UserID(GroupApprover)
	c.Wait("the run's end naming who stopped it", func() bool {
		return slices.ContainsFunc(c.Posted(thread), func(m string) bool {
			return strings.Contains(m, "Team run stopped") && strings.Contains(m, "stopped by") && strings.Contains(m, by)
		})
	})
	c.Wait("the role's proposal closed", func() bool { return !c.Asks(thread, p) })
	if r, _ := d.Eng.Team(t.Context(), id); r.Status != api.TeamStopped || r.Reason != "stopped by "+c.Platform()+":"+by {
		t.Errorf("run = %s (%s), want stopped by %s:%s", r.Status, r.Reason, c.Platform(), by)
	}
	if got := c.StopTeam(Approver, id); !strings.Contains(got, "has ended already") {
		t.Errorf("stopping twice = %q", got)
	}
	if !strings.Contains(d.Logs.String(), "team run stopped from chat") {
		t.Error("the stop is not logged")
	}
}

// An edit of a message the relay read — a decision in a run's thread, the mention that
// started the run — changes nothing and is answered, once per message: edits are not
// read, send a new message. An edit of chatter is left alone.
func editsAreAnsweredNotRead(t *testing.T, c Chat) {
	d := c.Daemon()
	d.Script(Touch("a", speak))
	thread := c.StartRun("touch")
	p := c.Proposal(thread, 1)
	Drain()
	y := c.Say(Approver, thread, "y")
	approved := c.Shown("Approved", Approver)
	c.Decided(thread, p, approved)
	TouchedInOrder(t, "a")
	c.Proposal(thread, 2) // finish, waiting: an edit to "n" must not deny it
	finish := agentOf(c, thread).Pending.ID
	chatter := c.Say(GroupApprover, "", "lunch?")

	c.Edit(GroupApprover, "", chatter, "lunch at noon?")
	c.Edit(Approver, thread, y, "n")
	c.Edit(Approver, thread, y, "n, really")
	c.Edit(Approver, thread, thread, c.BotMention()+" touch twice") // the mention the run's thread hangs off
	const note = "Edits are not read"
	c.Wait("the answers to the edits", func() bool { return c.Answered(Approver, note) >= 2 })
	if n := c.Answered(Approver, note); n != 2 {
		t.Errorf("%d answers to the edits of the decision (twice) and the mention, want 2: one per message", n)
	}
	if n := c.Answered(GroupApprover, note); n != 0 {
		t.Errorf("an edit of chatter was answered %d times", n)
	}
	if n := d.Decisions(finish); n != 0 {
		t.Errorf("the edits decided the waiting finish (%d decisions)", n)
	}
	c.Decided(thread, p, approved) // step 1 still shows its approval
}

// A stranger's click and typed "y" are each refused with a note in the run's thread
// that only they see, and another bot's "y" is ignored: none of them reaches the agent,
// the refusal is logged, and an approver through a group may still decide.
func nonApproverRefused(t *testing.T, c Chat) {
	d := c.Daemon()
	d.Script(Touch("x", speak))
	thread := c.StartRun("touch x")
	p := c.Proposal(thread, 1)
	c.Click(Stranger, thread, p, bots.ActionApprove)
	y := c.Say(Stranger, thread, "y")
	c.Say(OtherBot, thread, "y")
	c.Wait("two refusals", func() bool { return c.Answered(Stranger, "not an approver") == 2 })
	if !Has(c.RepliesTo(Stranger, thread, y), "not an approver") {
		t.Errorf("the typed y's refusal is not in the thread: %q", c.RepliesTo(Stranger, thread, y))
	}
	// Nothing the refusals or the other bot sent may reach the agent meanwhile.
	id := agentOf(c, thread).Pending.ID
	testutil.Hold(100*time.Millisecond, func() bool {
		a := agentOf(c, thread)
		return a.Pending != nil && a.Pending.ID == id && d.Decisions(id) == 0
	})
	if a := agentOf(c, thread); a.Pending == nil || a.Pending.ID != id || d.Decisions(id) != 0 {
		t.Fatalf("a refused click changed the agent: %+v", a)
	}
	if !strings.Contains(d.Logs.String(), "refused a non-approver") {
		t.Error("refusal not logged")
	}
	c.Click(GroupApprover, thread, p, bots.ActionDeny)
	c.Decided(thread, p, c.Shown("Denied", GroupApprover))
}

// A proposal of 10,000 characters full of & < > and backticks, in its speech and its
// arguments: every post is taken by the strict fake, the message says what it cut, the
// full text and the full arguments are uploaded, and an approval runs it.
func hostileTenThousandCharProposalPostedWhole(t *testing.T, c Chat) {
	args := map[string]string{}
	for i, n := range EchoParams {
		args[n] = HostileArg(i)
	}
	said := strings.Repeat("&<>`*_ ```", 200) // the relay shows 600 bytes of it; escaped, over either platform's limit
	c.Daemon().Script(Reply(EchoCommand, args, said))
	thread := c.StartRun("echo it")
	p := c.Proposal(thread, 1)
	if text := c.Cut(thread, p); !strings.Contains(text, "Full arguments") || !strings.Contains(text, "attached") {
		t.Errorf("the proposal does not say its arguments are attached:\n%s", text)
	}
	var files map[string]string
	c.Wait("the full text and the arguments uploaded", func() bool {
		files = c.Files(thread)
		full := false
		for _, f := range files {
			full = full || strings.Contains(f, said[:300]) // the relay shows the speech's first 600 bytes
		}
		return full && files["step-1-"+EchoCommand+"-args.json"] != ""
	})
	var got map[string]string
	if err := json.Unmarshal([]byte(files["step-1-"+EchoCommand+"-args.json"]), &got); err != nil {
		t.Fatalf("the uploaded arguments: %v", err)
	}
	for n, want := range args {
		if got[n] != want {
			t.Errorf("argument %s uploaded with %d of its %d characters", n, len(got[n]), len(want))
		}
	}
	c.Click(Approver, thread, p, bots.ActionApprove)
	c.Decided(thread, p, c.Shown("Approved", Approver))
	c.Cut(thread, c.Find(thread, c.Shown("Approved", Approver)))
	c.Wait("the result", func() bool { return Has(c.Posted(thread), "echoed") })
	if bad := c.Refused(); len(bad) != 0 {
		t.Errorf("the fake refused a post: %q", bad)
	}
}

// /agent list, run, status and stop drive a run for an approver; a stranger's stop is
// refused, and their list shows no agent's task.
func slashCommandsDriveARun(t *testing.T, c Chat) {
	d := c.Daemon()
	if got := c.Command(Approver, "list"); !strings.Contains(got, "No agents.") {
		t.Errorf("list = %q", got)
	}
	d.Script(Touch("x", speak))
	if got := c.Command(Approver, "run touch-from-a-command"); !strings.Contains(got, "Started agent") {
		t.Errorf("run = %q", got)
	}
	var a api.Agent
	c.Wait("the agent waiting", func() bool {
		as, _ := d.Sup.API().Views.Agents(context.Background())
		if len(as) == 1 && as[0].Pending != nil {
			a = as[0]
			return true
		}
		return false
	})
	if got := c.Command(Approver, "list"); !strings.Contains(got, "touch-from-a-command") {
		t.Errorf("list = %q", got)
	}
	if got := c.Command(Stranger, "list"); !strings.Contains(got, "not an approver") || strings.Contains(got, "touch-from-a-command") {
		t.Errorf("a stranger's list = %q, want a refusal that shows no task", got)
	}
	if got := c.Command(Approver, "status "+a.Name); !strings.Contains(got, "Waiting for a decision on step 1") {
		t.Errorf("status = %q", got)
	}
	// By its ID: the name may still change once the profile is made.
	if got := c.Command(Stranger, "stop "+a.ID); !strings.Contains(got, "not an approver") {
		t.Errorf("stranger's stop = %q", got)
	}
	if got := c.Command(Approver, "stop "+a.ID); !strings.Contains(got, "is idle") {
		t.Errorf("stop = %q", got)
	}
}

// A command's output of 400 lines is uploaded into the run's thread as one file, whole.
func longResultUploadedAsFile(t *testing.T, c Chat) {
	c.Daemon().Script(Touch("big", speak))
	thread := c.StartRun("touch big")
	c.Click(Approver, thread, c.Proposal(thread, 1), bots.ActionApprove)
	c.Wait("the output as one file", func() bool {
		files := c.Files(thread)
		for _, f := range files {
			if len(files) == 1 && strings.Count(f, "\n") >= 399 {
				return true
			}
		}
		return false
	})
}
