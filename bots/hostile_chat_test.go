package bots

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentd/agentd/api"
)

// Attacks on the chat decision path, as a hostile workspace member, a replaying
// platform or a hostile model would try them. Each case says what it tries;
// every one must decide, reveal, start or ping nothing it should not.

// attackWorld is a bindingWorld whose C1 also holds a-3 (reviewer, thread T3), with a
// schedule and a team run delivering to each of C1 and C2.
type attackWorld struct {
	*bindingWorld
	sched *attackSchedules
	teams *attackTeams
}

// attackSchedules serves schedules and records the ones fired.
type attackSchedules struct {
	mu    sync.Mutex
	all   []api.Schedule
	fired []string
}

func (s *attackSchedules) Schedules(context.Context) ([]api.Schedule, error) {
	return slices.Clone(s.all), nil
}

func (s *attackSchedules) RunSchedule(_ context.Context, ref string) (*api.ScheduleRun, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sc := range s.all {
		if sc.ID == ref || sc.Name == ref {
			s.fired = append(s.fired, sc.Name)
			return &api.ScheduleRun{Outcome: "started"}, nil
		}
	}
	return nil, api.Errorf(api.ErrNotFound, "no schedule %q", ref)
}

// attackTeams serves team runs and records the ones stopped.
type attackTeams struct {
	unusedTeams // the methods not needed here
	runs        map[string]*api.TeamRun
	stopped     []string
}

func (f *attackTeams) Team(_ context.Context, ref string) (*api.TeamRun, error) {
	if r, ok := f.runs[ref]; ok {
		return r, nil
	}
	return nil, api.Errorf(api.ErrNotFound, "no team run %q", ref)
}

func (f *attackTeams) Teams(context.Context) ([]api.TeamRun, error) {
	var out []api.TeamRun
	for _, r := range f.runs {
		out = append(out, *r)
	}
	return out, nil
}

func (f *attackTeams) StopTeamBy(_ context.Context, ref, by string) (*api.TeamRun, error) {
	r, ok := f.runs[ref]
	if !ok {
		return nil, api.Errorf(api.ErrNotFound, "no team run %q", ref)
	}
	f.stopped = append(f.stopped, ref)
	return r, nil
}

func newAttackWorld(t testing.TB) *attackWorld {
	t.Helper()
	svc := &daemonFake{props: map[string][]api.Proposal{}, agents: []api.Agent{
		{ID: "a-1", Name: "writer", State: api.StateThinking, Task: "write the notes"},
		{ID: "a-2", Name: "deployer", State: api.StateThinking, Task: "deploy the secret service"},
		{ID: "a-3", Name: "reviewer", State: api.StateThinking, Task: "review the layoffs memo"},
		{ID: "a-9", Name: "loner", State: api.StateThinking, Task: "private work"},
	}}
	binds := &memBindings{msgs: map[string]*ChatMessage{}, bs: []*Binding{
		{Platform: "slack", Channel: "C1", Thread: "T1", AgentID: "a-1"},
		{Platform: "slack", Channel: "C2", Thread: "T2", AgentID: "a-2"},
		{Platform: "slack", Channel: "C1", Thread: "T3", AgentID: "a-3"},
		{Platform: "slack", Channel: "C9", Thread: "T9", AgentID: "a-9"}, // C9 was taken out of the config
	}, teams: []*TeamBinding{
		{TeamRunID: "t-c1", Platform: "slack", Channel: "C1", Thread: "TT1"},
		{TeamRunID: "t-c2", Platform: "slack", Channel: "C2", Thread: "TT2"},
	}, agents: svc}
	w := &attackWorld{bindingWorld: &bindingWorld{ad: &fakeAdapter{}, svc: svc, binds: binds}}
	w.r = New(Options{Service: svc, Bindings: binds, ApproveN: 3, Audit: func(_ context.Context, e AuditEvent) error {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.audited = append(w.audited, e)
		return nil
	}})
	w.r.Add(w.ad, Rules{Channels: map[string]Access{"C1": {}, "C2": {}}, Approvers: Access{Users: []string{"U1"}},
		Agents: map[string]Access{"writer": {Users: []string{"U1", "U3"}}}})
	w.sched = &attackSchedules{all: []api.Schedule{
		{ID: "s-1", Name: "digest", Spec: "0 9 * * *", Delivery: "slack:C1", Goal: "summarize the notes"},
		{ID: "s-2", Name: "payroll", Spec: "0 1 * * *", Delivery: "slack:C2", Goal: "pay the salaries from the secret account"},
		{ID: "s-3", Name: "local", Spec: "@daily", Delivery: "agentctl", Goal: "tidy the private disk"},
	}}
	w.r.SetSchedules(w.sched)
	w.teams = &attackTeams{runs: map[string]*api.TeamRun{
		"t-c1": {ID: "t-c1", Workflow: "review", Status: api.TeamRunning},
		"t-c2": {ID: "t-c2", Workflow: "merger-talks", Status: api.TeamRunning},
	}}
	w.r.SetTeams(w.teams)
	return w
}

func (w *attackWorld) decided() []string {
	d, _ := w.svc.record()
	return d
}

// notes are every ephemeral note shown, oldest first.
func (w *attackWorld) notes() []string {
	w.ad.mu.Lock()
	defer w.ad.mu.Unlock()
	var out []string
	for _, p := range w.ad.posts {
		if s, ok := strings.CutPrefix(p, "ephemeral "); ok {
			out = append(out, s)
		}
	}
	return out
}

// flood has user send n messages: in T1 (a bound thread), or as chatter at C1's top level.
func (w *attackWorld) flood(user string, n int, inThread bool) {
	where := Where{Channel: "C1"}
	if inThread {
		where.Thread = "T1"
	}
	for range n {
		w.r.OnMessage(context.Background(), Incoming{Platform: "slack", Where: where, User: User{ID: user}, Text: "spam", ID: w.ad.stamp()})
	}
}

// replyAttack is one attack by typed replies: run plays it and returns what must have
// been decided ("" for nothing) and the tasks that must have been taken.
type replyAttack struct {
	name      string
	run       func(w *attackWorld) (decided string, tasks []string)
	wantNote  string // in the last note shown
	wantNotes int    // how many notes; -1: any
}

func runReplyAttacks(t *testing.T, cases []replyAttack) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newAttackWorld(t)
			want, wantTasks := tc.run(w)
			decided, tasks := w.svc.record()
			if want == "" && len(decided) != 0 || want != "" && fmt.Sprint(decided) != "["+want+"]" {
				t.Errorf("decided %q, want %q", decided, want)
			}
			if fmt.Sprint(tasks) != fmt.Sprint(wantTasks) {
				t.Errorf("tasks %q, want %q", tasks, wantTasks)
			}
			notes := w.notes()
			if tc.wantNotes >= 0 && len(notes) != tc.wantNotes {
				t.Errorf("%d notes, want %d: %q", len(notes), tc.wantNotes, notes)
			}
			if tc.wantNote != "" && (len(notes) == 0 || !strings.Contains(notes[len(notes)-1], tc.wantNote)) {
				t.Errorf("notes %q, want the last to say %q", notes, tc.wantNote)
			}
		})
	}
}

// Replies that were not written for what waits now, or that name no proposal the thread
// shows, decide nothing.
func TestStaleRepliesDecideNothing(t *testing.T) {
	p1 := proposal("p-1", "a-1", 1, "read_file")
	// yAfter shows shown, then has in say "y": where, by whom and on which platform differ.
	yAfter := func(shown *api.Proposal, in Incoming) func(w *attackWorld) (string, []string) {
		return func(w *attackWorld) (string, []string) {
			p := *shown // each case's world gets its own
			w.show(&p)
			in.Text, in.ID = "y", w.ad.stamp()
			w.r.OnMessage(context.Background(), in)
			return "", nil
		}
	}
	runReplyAttacks(t, []replyAttack{
		{"reply_id_that_does_not_parse", func(w *attackWorld) (string, []string) {
			w.show(proposal("p-1", "a-1", 1, "write_file"))
			w.say("not-a-ts", "", "y")
			return "", nil
		}, "cannot be ordered", 1},
		{"reply_naming_another_threads_proposal", func(w *attackWorld) (string, []string) {
			w.show(proposal("p-1", "a-1", 1, "read_file"))
			w.show(proposal("p-3", "a-3", 3, "delete_file")) // in T3, same channel
			w.say(w.ad.stamp(), w.message("p-3"), "y")
			return "", nil
		}, "decided nothing", 1},
		{"reply_to_an_unrecorded_message_newer_than_the_proposal", func(w *attackWorld) (string, []string) {
			// Another proposal whose post is in flight, or another thread's message.
			w.show(proposal("p-1", "a-1", 1, "read_file"))
			newer := w.ad.stamp()
			w.say(w.ad.stamp(), newer, "y")
			return "", nil
		}, "answers a message newer than the proposal waiting", 1},
		{"reply_to_an_unrecorded_message_older_than_the_proposal", func(w *attackWorld) (string, []string) {
			older := w.ad.stamp() // someone's earlier message in the thread
			w.show(proposal("p-1", "a-1", 1, "read_file"))
			w.say(w.ad.stamp(), older, "y")
			return "a-1 p-1 approve 1 " + strings.Repeat("1", 64), nil
		}, "", 0},
		{"reply_at_the_channels_top_level", yAfter(p1, Incoming{Platform: "slack", Where: Where{Channel: "C1"}, User: User{ID: "U1"}}), "", 0},
		{"reply_in_same_thread_id_of_another_channel", yAfter(proposal("p-9", "a-2", 9, "delete_file"),
			Incoming{Platform: "slack", Where: Where{Channel: "C1", Thread: "T2"}, User: User{ID: "U1"}}), "", 0},
		{"reply_from_another_platform", yAfter(p1, Incoming{Platform: "discord", Where: Where{Channel: "C1", Thread: "T1"}, User: User{ID: "U1"}}), "", 0},
		{"non_approver_y", yAfter(p1, Incoming{Platform: "slack", Where: Where{Channel: "C1", Thread: "T1"}, User: User{ID: "U5"}}),
			"You are not an approver here", 1},
	})
}

// A delivery is applied once however much else arrives between, and a late one starts
// nothing.
func TestReplayedRepliesAppliedOnce(t *testing.T) {
	runReplyAttacks(t, []replyAttack{
		{"follow_up_redelivered_after_a_refused_flood", func(w *attackWorld) (string, []string) {
			w.idle("a-1")
			id := w.ad.stamp()
			w.say(id, "", "deploy to prod")
			w.idle("a-1")             // the run ended before the platform redelivered it
			w.flood("U5", 5000, true) // refused messages from someone who may not decide
			w.say(id, "", "deploy to prod")
			return "", []string{"a-1 deploy to prod"}
		}, "", -1},
		{"follow_up_redelivered_after_chatter", func(w *attackWorld) (string, []string) {
			w.idle("a-1")
			id := w.ad.stamp()
			w.say(id, "", "deploy to prod")
			w.idle("a-1")
			w.flood("U1", 5000, false) // an approver's own chatter in the channel
			w.say(id, "", "deploy to prod")
			return "", []string{"a-1 deploy to prod"}
		}, "", 0},
		{"feedback_for_an_earlier_proposal_delivered_late_to_an_idle_agent", func(w *attackWorld) (string, []string) {
			w.show(proposal("p-1", "a-1", 1, "delete_file"))
			late := w.ad.stamp() // "keep the backups" written for p-1
			w.decidedElsewhere("p-1", api.DecisionApprove)
			w.show(proposal("p-2", "a-1", 2, "delete_file"))
			w.decidedElsewhere("p-2", api.DecisionDeny)
			w.idle("a-1")
			w.say(late, "", "keep the backups")
			return "", nil
		}, "written before agent writer's proposal at step 2", 1},
		{"new_task_after_the_last_proposal", func(w *attackWorld) (string, []string) {
			w.show(proposal("p-1", "a-1", 1, "delete_file"))
			w.decidedElsewhere("p-1", api.DecisionDeny)
			w.idle("a-1")
			w.say(w.ad.stamp(), "", "keep the backups")
			return "", []string{"a-1 keep the backups"}
		}, "", 0},
		{"y3_redelivered_after_a_flood_when_p2_waits", func(w *attackWorld) (string, []string) {
			w.show(proposal("p-1", "a-1", 1, "read_file"))
			id := w.ad.stamp()
			w.say(id, "", "y -3")
			w.flood("U5", 5000, true)
			w.show(proposal("p-4", "a-1", 4, "delete_file"))
			w.say(id, "", "y -3")
			return "a-1 p-1 approve 3 " + strings.Repeat("1", 64), nil
		}, "", -1},
	})
}

// press clicks action on a button carrying ref, as user in channel's thread.
func (w *attackWorld) press(user, channel, thread, action string, ref Ref, id string) {
	w.r.OnClick(context.Background(), Click{Platform: "slack", Where: Where{Channel: channel, Thread: thread}, User: User{ID: user},
		Action: action, Ref: ref, ID: id})
}

// idle makes agent idle, its run ended.
func (w *attackWorld) idle(agent string) {
	w.svc.mu.Lock()
	defer w.svc.mu.Unlock()
	w.svc.find(agent).State = api.StateIdle
}

// Clicks and dialogs decide only for their thread's agents, only the proposal their
// message shows, only for approvers; anything else is refused, and a forged or misplaced
// button is audited.
func TestClicksDecideOnlyTheirThreadsShownProposal(t *testing.T) {
	hash := func(step int) string { return proposal("", "", step, "").Hash[:HashLen] }
	for _, tc := range []struct {
		name      string
		run       func(w *attackWorld)
		want      string // decided
		wantAudit string // the audit's reason, "" for none
		wantNote  string
	}{
		{"proposal_alone_naming_another_threads", func(w *attackWorld) {
			// Discord's buttons name the proposal alone.
			w.click("T1", "c-1", Ref{ProposalID: "p-9", Hash: hash(9)})
		}, "", "the button names another agent than its thread's", "not for this thread's agent"},
		{"proposal_alone_naming_the_threads_own", func(w *attackWorld) {
			w.click("T1", "c-1", Ref{ProposalID: "p-1", Hash: hash(1)})
		}, "a-1 p-1 approve 1 " + hash(1), "", ""},
		{"button_on_p1_message_naming_p2", func(w *attackWorld) {
			m1 := w.message("p-1")
			w.decidedElsewhere("p-1", api.DecisionApprove)
			w.show(proposal("p-2", "a-1", 2, "delete_file"))
			w.r.OnClick(context.Background(), Click{Platform: "slack", Where: Where{Channel: "C1", Thread: "T1"}, User: User{ID: "U1"},
				Action: ActionApprove, Ref: Ref{AgentID: "a-1", ProposalID: "p-2", Hash: hash(2)}, ID: "c-2", Message: m1})
		}, "", "the button names another proposal than the message it is on", "names another proposal"},
		{"button_in_a_team_thread_naming_a_bound_agents_proposal", func(w *attackWorld) {
			w.press("U1", "C1", "TT1", ActionApprove, Ref{ProposalID: "p-1"}, "c-3")
		}, "", "the button names another agent than its thread's", "not for this thread's agent"},
		{"approve_n_past_the_count_shown", func(w *attackWorld) {
			w.press("U1", "C1", "T1", ActionApproveN, Ref{AgentID: "a-1", ProposalID: "p-1", Count: 1000, Hash: hash(1)}, "c-8")
		}, "", "the button approves 1000 steps, not the 3 shown", "approves 1000 steps"},
		{"approve_n_as_shown", func(w *attackWorld) {
			w.press("U1", "C1", "T1", ActionApproveN, Ref{AgentID: "a-1", ProposalID: "p-1", Count: 3, Hash: hash(1)}, "c-9")
		}, "a-1 p-1 approve 3 " + hash(1), "", ""},
		{"non_approver", func(w *attackWorld) {
			w.press("U5", "C1", "T1", ActionApproveN, Ref{AgentID: "a-1", ProposalID: "p-1", Count: 3}, "c-4")
		}, "", "not an approver here", "You are not an approver here"},
		{"click_in_an_unserved_channel", func(w *attackWorld) {
			w.press("U1", "C7", "T1", ActionApprove, Ref{AgentID: "a-1", ProposalID: "p-1"}, "c-5")
		}, "", "", ""},
		{"click_in_a_dm", func(w *attackWorld) {
			w.r.OnClick(context.Background(), Click{Platform: "slack", Where: Where{Channel: "D1", Thread: "T1", DM: true}, User: User{ID: "U1"},
				Action: ActionApprove, Ref: Ref{AgentID: "a-1", ProposalID: "p-1"}, ID: "c-6"})
		}, "", "", ""},
		{"feedback_dialog_metadata_naming_another_thread", func(w *attackWorld) {
			w.r.OnFeedback(context.Background(), "slack", Where{Channel: "C1", Thread: "T1"}, User{ID: "U1"}, Ref{AgentID: "a-2", ProposalID: "p-9"}, "rm -rf")
		}, "", "the button names another agent than its thread's", "not for this thread's agent"},
		{"feedback_dialog_naming_the_proposal_alone_of_another_thread", func(w *attackWorld) {
			w.r.OnFeedback(context.Background(), "slack", Where{Channel: "C1", Thread: "T1"}, User{ID: "U1"}, Ref{ProposalID: "p-9"}, "rm -rf")
		}, "", "the button names another agent than its thread's", "not for this thread's agent"},
		{"feedback_dialog_in_a_channel_no_longer_served", func(w *attackWorld) {
			w.svc.wait("a-9", proposal("p-5", "a-9", 5, "delete_file"))
			w.r.OnFeedback(context.Background(), "slack", Where{Channel: "C9", Thread: "T9"}, User{ID: "U1"}, Ref{AgentID: "a-9", ProposalID: "p-5"}, "go on")
		}, "", "", ""},
		{"click_in_a_channel_no_longer_served", func(w *attackWorld) {
			w.svc.wait("a-9", proposal("p-5", "a-9", 5, "delete_file"))
			w.press("U1", "C9", "T9", ActionApprove, Ref{AgentID: "a-9", ProposalID: "p-5"}, "c-10")
		}, "", "", ""},
		{"helper_name_forged_as_agent_of_another_thread", func(w *attackWorld) {
			w.click("T1", "c-7", Ref{AgentID: "a-3", ProposalID: "p-1", Hash: hash(1)})
		}, "", "the button names another agent than its thread's", "not for this thread's agent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newAttackWorld(t)
			w.show(proposal("p-1", "a-1", 1, "read_file"))
			w.show(proposal("p-9", "a-2", 9, "delete_file"))
			tc.run(w)
			if d := w.decided(); tc.want == "" && len(d) != 0 || tc.want != "" && fmt.Sprint(d) != "["+tc.want+"]" {
				t.Errorf("decided %q, want %q", d, tc.want)
			}
			var reasons []string
			for _, e := range w.audited {
				reasons = append(reasons, e.Reason)
			}
			if tc.wantAudit == "" && len(reasons) != 0 || tc.wantAudit != "" && fmt.Sprint(reasons) != "["+tc.wantAudit+"]" {
				t.Errorf("audited %q, want %q", reasons, tc.wantAudit)
			}
			notes := w.notes()
			if tc.wantNote == "" && len(notes) != 0 || tc.wantNote != "" && (len(notes) != 1 || !strings.Contains(notes[0], tc.wantNote)) {
				t.Errorf("notes %q, want one saying %q", notes, tc.wantNote)
			}
		})
	}
}

// Clicks from someone who may not decide cannot make the relay forget an approver's
// click, whose redelivery stays dropped.
func TestRefusedClicksDoNotEvictApproversClicks(t *testing.T) {
	w := newAttackWorld(t)
	w.show(proposal("p-1", "a-1", 1, "read_file"))
	w.click("T1", "c-approver", Ref{AgentID: "a-1", ProposalID: "p-1"})
	for i := range 5000 {
		w.r.OnClick(context.Background(), Click{Platform: "slack", Where: Where{Channel: "C1", Thread: "T1"}, User: User{ID: "U5"},
			Action: ActionApprove, Ref: Ref{AgentID: "a-1", ProposalID: "p-1"}, ID: fmt.Sprint("c-", i)})
	}
	before := len(w.notes())
	w.click("T1", "c-approver", Ref{AgentID: "a-1", ProposalID: "p-1"})
	if d := w.decided(); len(d) != 1 {
		t.Errorf("decided %q, want once", d)
	}
	if n := w.notes(); len(n) != before {
		t.Errorf("the redelivered click was handled again: %q", n[before:])
	}
}

// Slash commands show and act on what the person may decide on in this channel, and
// answer anything else as if it did not exist.
func TestSlashCommandsLeakNothing(t *testing.T) {
	for _, tc := range []struct {
		name, user, channel, text string
		want, not                 []string
		fired, stopped            string
	}{
		{"agent_approver_lists_only_its_agent", "U3", "C1", "list", []string{"writer"}, []string{"reviewer", "layoffs"}, "", ""},
		{"agent_approver_status_of_another_agent", "U3", "C1", "status reviewer", []string{"No agent reviewer in this channel."}, []string{"layoffs", "thinking"}, "", ""},
		{"agent_approver_status_counts_only_its_agent", "U3", "C1", "status", []string{"1 agents"}, []string{"t-c1", "review ("}, "", ""},
		{"agent_approver_stops_another_agent", "U3", "C1", "stop reviewer", []string{"No agent reviewer in this channel."}, []string{"layoffs"}, "", ""},
		{"channel_approver_lists_the_channels_agents", "U1", "C1", "list", []string{"writer", "reviewer"}, []string{"deployer", "loner"}, "", ""},
		{"schedules_of_this_channel_only", "U1", "C1", "schedule ls", []string{"digest", "summarize the notes"}, []string{"payroll", "secret account", "local", "private disk"}, "", ""},
		{"schedules_of_another_channel", "U1", "C2", "schedule ls", []string{"payroll"}, []string{"digest", "local"}, "", ""},
		{"fire_another_channels_schedule", "U1", "C1", "schedule run payroll", []string{`no schedule "payroll"`}, []string{"secret", "fired"}, "", ""},
		{"fire_an_agentctl_schedule", "U1", "C1", "schedule run s-3", []string{`no schedule "s-3"`}, []string{"private"}, "", ""},
		{"fire_this_channels_schedule", "U1", "C1", "schedule run digest", []string{"Schedule digest fired"}, nil, "digest", ""},
		{"non_approver_schedules", "U5", "C1", "schedule ls", []string{"not an approver"}, []string{"digest", "payroll"}, "", ""},
		{"stop_another_channels_team_run", "U1", "C1", "team stop t-c2", []string{`no team run "t-c2" in this channel`}, []string{"merger"}, "", ""},
		{"stop_this_channels_team_run", "U1", "C1", "team stop t-c1", []string{"Stopped team run t-c1"}, nil, "", "t-c1"},
		{"status_shows_only_this_channels_team_runs", "U1", "C1", "status", []string{"t-c1"}, []string{"t-c2", "merger"}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newAttackWorld(t)
			got := w.r.OnCommand(context.Background(), "slack", Where{Channel: tc.channel}, User{ID: tc.user}, tc.text)
			for _, s := range tc.want {
				if !strings.Contains(strings.ToLower(got), strings.ToLower(s)) {
					t.Errorf("%q: missing %q", got, s)
				}
			}
			for _, s := range tc.not {
				if strings.Contains(got, s) {
					t.Errorf("%q reveals %q", got, s)
				}
			}
			if fmt.Sprint(w.sched.fired) != fmt.Sprint(strings.Fields(tc.fired)) {
				t.Errorf("fired %q, want %q", w.sched.fired, tc.fired)
			}
			if fmt.Sprint(w.teams.stopped) != fmt.Sprint(strings.Fields(tc.stopped)) {
				t.Errorf("stopped team runs %q, want %q", w.teams.stopped, tc.stopped)
			}
			if len(w.svc.stopped) != 0 {
				t.Errorf("stopped agents %q", w.svc.stopped)
			}
		})
	}
}

// failingGroups is an adapter whose group lookups fail, as Slack's usergroups call does
// under a 429 or a missing scope.
type failingGroups struct{ *fakeAdapter }

func (failingGroups) InGroup(context.Context, string, string) (bool, error) {
	return false, errors.New("ratelimited")
}

// A group lookup that fails lets nobody decide, list or reply through that group.
func TestFailingGroupLookupLetsNobodyThrough(t *testing.T) {
	w := newBindingWorld(t)
	r := New(Options{Service: w.svc, Bindings: w.binds})
	r.Add(failingGroups{w.ad}, Rules{Channels: map[string]Access{"C1": {}}, Approvers: Access{Groups: []string{"S-ops"}}})
	w.r = r
	w.show(proposal("p-1", "a-1", 1, "read_file"))
	w.click("T1", "c-1", Ref{AgentID: "a-1", ProposalID: "p-1"})
	w.say(w.ad.stamp(), "", "y")
	if got := r.OnCommand(context.Background(), "slack", Where{Channel: "C1"}, User{ID: "U1"}, "list"); strings.Contains(got, "writer") {
		t.Errorf("list under a failing group lookup = %q", got)
	}
	if d, _ := w.svc.record(); len(d) != 0 {
		t.Errorf("decided %q with the group lookup failing", d)
	}
}

// One group whose lookup fails does not lock out the members of another, nor let
// anyone through itself.
func TestOneBrokenGroupLocksOutOnlyItself(t *testing.T) {
	rules := Rules{Approvers: Access{Groups: []string{"broken", "S1"}}}
	g := groups{"S1": {"U9"}}
	if ok, err := rules.Allowed(context.Background(), g, "C1", "", "U9"); !ok || err != nil {
		t.Errorf("a member of S1 with another group broken: %v, %v; want allowed", ok, err)
	}
	if ok, err := rules.Allowed(context.Background(), g, "C1", "", "U5"); ok || err == nil || !strings.Contains(err.Error(), "group broken") {
		t.Errorf("a stranger with a group broken: %v, %v; want refused, naming the group", ok, err)
	}
}

// A team run's end text names who stopped it; only a plain user id there becomes a
// mention, never markup that pings a channel.
func TestTeamEndTextCannotPing(t *testing.T) {
	end := api.TeamTurn{Kind: api.TurnEnd, Mode: api.TeamStopped}
	for _, text := range []string{
		"stopped by slack:U1><!channel>",
		"stopped by slack:<!here>",
		"stopped by slack:U1|x",
		"stopped by slack:@everyone",
	} {
		m, _ := FormatTeamTurn(end, text, 300)
		stoppedBy(&m, end, text, "slack")
		for _, p := range m.Parts {
			for _, s := range p.Spans {
				if s.User != "" {
					t.Errorf("%q became a mention of %q", text, s.User)
				}
			}
		}
	}
}
