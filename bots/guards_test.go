package bots

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
)

// TestGuardsRunInTheListedOrder: the checks each chat action passes, as guards.go lists
// them; a change of order is a change of behaviour (a stranger's click must be refused
// before anything about the agents is read).
func TestGuardsRunInTheListedOrder(t *testing.T) {
	names := func(gs []guard) string {
		var out []string
		for _, g := range gs {
			out = append(out, g.name)
		}
		return strings.Join(out, " ")
	}
	for _, tc := range []struct {
		name   string
		guards []guard
		want   string
	}{
		{"click", clickGuards, "served_here first_delivery approver_here message_shows_proposal message_asks_rewind count_shown thread_agent rewind_agent agent_approver hash_matches not_expired rewind_unanswered"},
		{"dialog", dialogGuards, "served_here approver_here feedback_fits thread_agent agent_approver hash_matches not_expired"},
		{"reply", replyGuards, "thread_agent_exists agent_approver says_something helper_named_waits not_help written_for_what_waits"},
		{"team_reply", teamReplyGuards, "says_something team_run_exists channel_approver role_named_waits not_help written_for_what_waits"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := names(tc.guards); got != tc.want {
				t.Errorf("guards:\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

// guardCase is one case of one guard: setup prepares the world and the action; the
// guard passes it or not, and a refusal tells the person note (when set) and audits
// audited actions.
type guardCase struct {
	name    string
	setup   func(w *bindingWorld, c *check)
	pass    bool
	note    string
	audited int
}

// TestEachGuard runs each guard's own table: a clean action in thread T1 of a-1 ("writer")
// by approver U1, changed by the case.
func TestEachGuard(t *testing.T) {
	stranger := func(_ *bindingWorld, c *check) { c.u = User{ID: "U5"} }
	waits := func(w *bindingWorld, c *check) {
		w.show(proposal("p-1", "a-1", 1, "write_file"))
		c.ref.ProposalID, c.ref.Hash = "p-1", strings.Repeat("1", HashLen)
	}
	atWriter := func(w *bindingWorld, c *check) { c.a, _ = w.svc.Agent(context.Background(), "a-1") }
	waitsAtWriter := func(w *bindingWorld, c *check) { waits(w, c); atWriter(w, c) }
	// asksRewind: the click is a Rewind on the question the relay posted for step p-9 of
	// a-1 (message M9); rewindAtWriter: and its agent was found.
	asksRewind := func(w *bindingWorld, c *check) {
		w.binds.SetMessage(context.Background(), ChatMessage{ProposalID: "p-9", Platform: "slack", Kind: rewindKind, Channel: "C1", Message: "M9"})
		c.action, c.ref.ProposalID, c.click.Message = ActionRewind, "p-9", "M9"
	}
	rewindAtWriter := func(w *bindingWorld, c *check) {
		asksRewind(w, c)
		c.asked, _ = w.binds.MessageAt(context.Background(), "slack", "C1", "M9")
		atWriter(w, c)
	}
	team := func(w *bindingWorld, c *check) {
		w.r.SetTeams(&fakeTeams{runs: map[string]*api.TeamRun{"t-1": {ID: "t-1", Status: api.TeamRunning, Agents: map[string]string{"writer": "a-1"}}}})
		c.team = &TeamBinding{TeamRunID: "t-1", Platform: "slack", Channel: "C1", Thread: "T1"}
		c.run, _ = w.r.teams.engine.Team(context.Background(), "t-1")
	}
	tables := map[string][]guardCase{
		"served_here": {
			{"channel_served", nil, true, "", 0},
			{"no_adapter_for_the_platform", func(_ *bindingWorld, c *check) { c.ep = nil }, false, "", 0},
			{"a_bot", func(_ *bindingWorld, c *check) { c.u.Bot = true }, false, "", 0},
			{"channel_not_served", func(_ *bindingWorld, c *check) { c.w.Channel = "C9" }, false, "", 0},
		},
		"first_delivery": {
			{"new_click", nil, true, "", 0},
			{"click_without_id", func(_ *bindingWorld, c *check) { c.click.ID = "" }, true, "", 0},
			{"redelivered_click", func(w *bindingWorld, c *check) { firstClickDelivery(context.Background(), c) }, false, "", 0},
		},
		"approver_here": {
			{"approver", nil, true, "", 0},
			{"stranger", stranger, false, notApproverText, 1},
		},
		"message_shows_proposal": {
			{"no_message_named", waits, true, "", 0},
			{"its_own_message", func(w *bindingWorld, c *check) { waits(w, c); c.click.Message = w.message("p-1") }, true, "", 0},
			{"message_of_another_proposal", func(w *bindingWorld, c *check) {
				waits(w, c)
				c.click.Message, c.ref.ProposalID = w.message("p-1"), "p-0"
			}, false, "names another proposal", 1},
		},
		"message_asks_rewind": {
			{"a_proposals_button", nil, true, "", 0},
			{"on_its_question", asksRewind, true, "", 0},
			{"on_a_proposals_message", func(w *bindingWorld, c *check) {
				waits(w, c)
				c.action, c.click.Message = ActionRewind, w.message("p-1")
			}, false, "not on the rewind question it names", 1},
			{"names_another_step", func(w *bindingWorld, c *check) { asksRewind(w, c); c.ref.ProposalID = "p-8" }, false, "not on the rewind question it names", 1},
		},
		"rewind_agent": {
			{"a_proposals_button", nil, true, "", 0},
			{"the_agent_it_names", asksRewind, true, "", 0},
			{"named_agent_not_the_threads", func(w *bindingWorld, c *check) {
				asksRewind(w, c)
				w.svc.agents = append(w.svc.agents, api.Agent{ID: "a-7", Name: "other", State: api.StateIdle})
				c.ref.AgentID = "a-7"
			}, true, "", 0},
			{"names_no_agent", func(w *bindingWorld, c *check) { asksRewind(w, c); c.ref.AgentID = "" }, false, "made before buttons named their agent", 0},
			{"agent_gone", func(w *bindingWorld, c *check) { asksRewind(w, c); c.ref.AgentID = "a-404" }, false, "agent is gone", 0},
		},
		"rewind_unanswered": {
			{"a_proposals_button", nil, true, "", 0},
			{"first_answer", rewindAtWriter, true, "", 0},
			{"answered_already", func(w *bindingWorld, c *check) {
				rewindAtWriter(w, c)
				rewindUnanswered(context.Background(), c)
			}, false, "already answered", 0},
			{"cancelled_already", func(w *bindingWorld, c *check) {
				rewindAtWriter(w, c)
				c.action = ActionRewindCancel
				rewindUnanswered(context.Background(), c)
				c.action = ActionRewind
			}, false, "already answered", 0},
		},
		"count_shown": {
			{"approve_once", nil, true, "", 0},
			{"count_shown", func(w *bindingWorld, c *check) { w.r.opt.ApproveN, c.action, c.ref.Count = 3, ActionApproveN, 3 }, true, "", 0},
			{"forged_count", func(w *bindingWorld, c *check) { w.r.opt.ApproveN, c.action, c.ref.Count = 3, ActionApproveN, 1000 }, false, "approves 1000 steps", 1},
			{"no_approve_n_button", func(_ *bindingWorld, c *check) { c.action, c.ref.Count = ActionApproveN, 2 }, false, "approves 2 steps", 1},
		},
		"thread_agent": {
			{"the_threads_agent", waits, true, "", 0},
			{"button_names_no_agent", func(w *bindingWorld, c *check) { waits(w, c); c.ref.AgentID = "" }, true, "", 0},
			{"another_threads_agent", func(_ *bindingWorld, c *check) { c.ref.AgentID = "a-2" }, false, "not for this thread's agent", 1},
			{"no_thread", func(_ *bindingWorld, c *check) { c.w.Thread = "" }, false, "in no agent's thread", 1},
		},
		"agent_approver": {
			{"approver", atWriter, true, "", 0},
			{"stranger", func(w *bindingWorld, c *check) { atWriter(w, c); stranger(w, c) }, false, notApproverText, 0},
			{"agents_own_approver", func(w *bindingWorld, c *check) {
				atWriter(w, c)
				w.r.eps.get("slack").rules.Agents = map[string]Access{"writer": {Users: []string{"U3"}}}
			}, false, notApproverText, 0},
		},
		"hash_matches": {
			{"hash_of_what_waits", waitsAtWriter, true, "", 0},
			{"no_hash", func(w *bindingWorld, c *check) { waitsAtWriter(w, c); c.ref.Hash = "" }, true, "", 0},
			{"hash_of_another_command", func(w *bindingWorld, c *check) { waitsAtWriter(w, c); c.ref.Hash = strings.Repeat("2", HashLen) }, false, "as it was shown before", 1},
			{"ref_of_its_preview_before_a_run_again", func(w *bindingWorld, c *check) {
				first, again := withEffect("p-1", "first-root"), withEffect("p-1", "second-root")
				w.show(again)
				c.ref.ProposalID, c.ref.Hash = "p-1", first.Ref()[:HashLen]
				atWriter(w, c)
			}, false, "the preview changed since", 1},
			{"ref_of_its_preview_now", func(w *bindingWorld, c *check) {
				again := withEffect("p-1", "second-root")
				w.show(again)
				c.ref.ProposalID, c.ref.Hash = "p-1", again.Ref()[:HashLen]
				atWriter(w, c)
			}, true, "", 0},
		},
		"not_expired": {
			{"no_expiry", waitsAtWriter, true, "", 0},
			{"expired", func(w *bindingWorld, c *check) {
				waitsAtWriter(w, c)
				w.r.expiry = expiry{time.Minute, time.Now}
			}, false, "Expired after 1m0s", 0},
			{"expired_but_not_the_one_named", func(w *bindingWorld, c *check) {
				waitsAtWriter(w, c)
				w.r.expiry, c.ref.ProposalID = expiry{time.Minute, time.Now}, "p-0"
			}, true, "", 0},
		},
		"feedback_fits": {
			{"short", func(_ *bindingWorld, c *check) { c.text = "use tabs" }, true, "", 0},
			{"over_the_cap", func(_ *bindingWorld, c *check) { c.text = strings.Repeat("x", api.MaxTextBytes+1) }, false, "the limit is", 0},
		},
		"thread_agent_exists": {
			{"bound_agent", nil, true, "", 0},
			{"agent_gone", func(_ *bindingWorld, c *check) { c.b.AgentID = "a-404" }, false, "This thread's agent is gone", 0},
		},
		"says_something": {
			{"text", func(_ *bindingWorld, c *check) { c.text = " y " }, true, "", 0},
			{"blank", func(_ *bindingWorld, c *check) { c.text = "  " }, false, "", 0},
		},
		"helper_named_waits": {
			{"plain_reply", func(w *bindingWorld, c *check) { waitsAtWriter(w, c); c.text = "y" }, true, "", 0},
			{"names_an_idle_helper", func(w *bindingWorld, c *check) {
				w.svc.agents = append(w.svc.agents, api.Agent{ID: "a-3", Name: "writer/fetcher", ParentID: "a-1", State: api.StateIdle})
				atWriter(w, c)
				c.text = "fetcher: y"
			}, false, "Helper writer/fetcher has nothing waiting", 0},
			{"names_a_helper_and_says_nothing", func(w *bindingWorld, c *check) {
				w.svc.agents = append(w.svc.agents, api.Agent{ID: "a-3", Name: "writer/fetcher", ParentID: "a-1", State: api.StateIdle})
				w.show(proposal("p-3", "a-3", 1, "web_fetch"))
				atWriter(w, c)
				c.text = "fetcher:"
			}, false, "Say what to tell writer/fetcher after its name", 0},
		},
		"not_help": {
			{"a_decision", func(w *bindingWorld, c *check) { waitsAtWriter(w, c); c.text = "y" }, true, "", 0},
			{"asks_for_help", func(w *bindingWorld, c *check) { waitsAtWriter(w, c); c.text = "help" }, false, "still waits for your decision", 0},
		},
		"written_for_what_waits": {
			{"nothing_waits", atWriter, true, "", 0},
			{"written_after_it_was_shown", func(w *bindingWorld, c *check) { waitsAtWriter(w, c); c.in.ID = w.ad.stamp() }, true, "", 0},
			{"written_for_an_earlier_proposal", func(w *bindingWorld, c *check) {
				w.show(proposal("p-1", "a-1", 1, "read_file"))
				c.in.ReplyTo, c.in.ID = w.message("p-1"), w.ad.stamp()
				w.svc.Decide(context.Background(), "a-1", api.DecideRequest{ProposalID: "p-1", Kind: api.DecisionApprove, Count: 1})
				w.show(proposal("p-2", "a-1", 2, "write_file"))
				atWriter(w, c)
			}, false, "That reply was for an earlier proposal (step 1)", 0},
		},
		"team_run_exists": {
			{"running", team, true, "", 0},
			{"no_team_engine", func(_ *bindingWorld, c *check) { c.team = &TeamBinding{TeamRunID: "t-1"} }, false, "", 0},
			{"gone", func(w *bindingWorld, c *check) { team(w, c); c.team.TeamRunID = "t-404" }, false, "This thread's team run is gone", 0},
		},
		"channel_approver": {
			{"approver", team, true, "", 0},
			{"stranger", func(w *bindingWorld, c *check) { team(w, c); stranger(w, c) }, false, notApproverText, 0},
		},
		"role_named_waits": {
			{"names_a_waiting_role", func(w *bindingWorld, c *check) { team(w, c); waits(w, c); c.text = "writer: y" }, true, "", 0},
			{"names_an_idle_role", func(w *bindingWorld, c *check) { team(w, c); c.text = "writer: y" }, false, "Role writer has nothing waiting", 0},
			{"nothing_waits", func(w *bindingWorld, c *check) { team(w, c); c.text = "y" }, false, "Nothing in team run t-1 waits for you now", 0},
		},
	}
	all := map[string]func(context.Context, *check) bool{}
	for _, gs := range [][]guard{clickGuards, dialogGuards, replyGuards, teamReplyGuards} {
		for _, g := range gs {
			all[g.name] = g.pass
		}
	}
	for name := range all {
		if len(tables[name]) < 2 {
			t.Errorf("guard %s has no table of its own here", name)
		}
	}
	for name, cases := range tables {
		pass, ok := all[name]
		if !ok {
			t.Errorf("no guard named %s", name)
			continue
		}
		for _, tc := range cases {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				w := newBindingWorld(t)
				in := &Incoming{Platform: "slack", Where: Where{Channel: "C1", Thread: "T1"}, User: User{ID: "U1"}, ID: w.ad.stamp()}
				c := &check{r: w.r, ep: w.r.eps.get("slack"), w: in.Where, u: in.User, action: ActionApprove,
					ref: Ref{AgentID: "a-1", ProposalID: "p-1"}, click: &Click{ID: "k-1"}, in: in, b: &Binding{AgentID: "a-1"}, text: "y"}
				if tc.setup != nil {
					tc.setup(w, c)
				}
				before := len(w.ad.posts)
				got := pass(context.Background(), c)
				w.mu.Lock()
				audited := len(w.audited)
				w.mu.Unlock()
				notes := slices.Clone(w.ad.posts[before:])
				if got != tc.pass || audited != tc.audited {
					t.Errorf("passed %v, audited %d; want %v, %d (notes %q)", got, audited, tc.pass, tc.audited, notes)
				}
				if tc.note != "" && !strings.Contains(strings.Join(notes, "\n"), tc.note) {
					t.Errorf("notes %q; want one saying %q", notes, tc.note)
				}
				if tc.pass && len(notes) > 0 {
					t.Errorf("passed, yet told the person %q", notes)
				}
			})
		}
	}
}

// A feedback dialog submitted once chat may no longer decide its proposal (Options.Expiry)
// decides nothing, as a click or a typed reply then does: the dialog may have been opened
// before the proposal expired.
func TestFeedbackDialogOnExpiredProposalDecidesNothing(t *testing.T) {
	w := newBindingWorld(t)
	w.show(proposal("p-1", "a-1", 1, "read_file"))
	w.r.expiry = expiry{time.Minute, time.Now} // p-1 was made long ago (CreatedAt zero)
	w.r.OnFeedback(context.Background(), "slack", Where{Channel: "C1", Thread: "T1"}, User{ID: "U1"},
		Ref{AgentID: "a-1", ProposalID: "p-1", Hash: strings.Repeat("1", HashLen)}, "use docs/")
	if d, _ := w.svc.record(); len(d) != 0 {
		t.Errorf("an expired proposal took feedback from a dialog: decided %q", d)
	}
	if note := w.lastNote(); !strings.Contains(note, "Expired after 1m0s") {
		t.Errorf("note %q; want one saying the proposal expired", note)
	}
}

// withEffect is a1's write_file proposal id with an effect preview whose change has root.
func withEffect(id, root string) *api.Proposal {
	p := proposal(id, "a-1", 1, "write_file")
	p.Preview = &api.Preview{Effect: &api.Effect{From: 1, To: 2, ToRoot: root}}
	return p
}
