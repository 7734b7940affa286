package bots

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/testutil"
)

// daemonFake decides the way the daemon does: only the proposal waiting now, and only
// when the decision's hash (when given) is a prefix of that proposal's.
type daemonFake struct {
	Service
	mu      sync.Mutex
	agents  []api.Agent
	props   map[string][]api.Proposal // agent → its proposals, oldest first
	decided []string                  // "agent proposal kind count hash"
	tasks   []string
	answers []string
	stopped []string
}

func (s *daemonFake) find(ref string) *api.Agent {
	for i := range s.agents {
		if s.agents[i].ID == ref || s.agents[i].Name == ref {
			return &s.agents[i]
		}
	}
	return nil
}

func (s *daemonFake) Agents(context.Context) ([]api.Agent, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.agents), nil
}

func (s *daemonFake) Agent(_ context.Context, ref string) (*api.Agent, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.find(ref); a != nil {
		c := *a
		return &c, nil
	}
	return nil, api.Errorf(api.ErrNotFound, "no agent %q", ref)
}

func (s *daemonFake) Proposals(_ context.Context, ref string) ([]api.Proposal, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.props[ref]), nil
}

func (s *daemonFake) Decide(_ context.Context, ref string, req api.DecideRequest) (*api.Decision, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.find(ref)
	switch {
	case a == nil:
		return nil, api.Errorf(api.ErrNotFound, "no agent %q", ref)
	case a.Pending == nil || a.Pending.ID != req.ProposalID:
		return nil, api.Errorf(api.ErrConflict, "proposal %s is not waiting for a decision", req.ProposalID)
	case req.Hash != "" && (len(req.Hash) < HashLen || !strings.HasPrefix(a.Pending.Hash, req.Hash)):
		return nil, api.Errorf(api.ErrConflict, "proposal %s is not the one shown", req.ProposalID)
	}
	s.decided = append(s.decided, fmt.Sprintf("%s %s %s %d %s", a.ID, req.ProposalID, req.Kind, req.Count, req.Hash))
	a.Pending, a.State = nil, api.StateExecuting
	return &api.Decision{ProposalID: req.ProposalID, Kind: req.Kind, Count: req.Count}, nil
}

func (s *daemonFake) Answer(_ context.Context, ref string, req api.AnswerRequest) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answers = append(s.answers, ref+" "+req.ProposalID+" "+req.Text)
	return nil
}

func (s *daemonFake) Task(_ context.Context, ref, task string) (*api.Agent, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tasks = append(s.tasks, ref+" "+task)
	a := s.find(ref)
	a.State, a.RunID = api.StateThinking, fmt.Sprint("r-", len(s.tasks))
	c := *a
	return &c, nil
}

func (s *daemonFake) Stop(_ context.Context, ref string) (*api.Agent, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = append(s.stopped, ref)
	a := s.find(ref)
	a.State = api.StateIdle
	c := *a
	return &c, nil
}

// wait makes p the proposal agent waits on.
func (s *daemonFake) wait(agent string, p *api.Proposal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.props[agent] = append(s.props[agent], *p)
	a := s.find(agent)
	a.Pending, a.State = p, api.StateAwaitingDecision
}

func (s *daemonFake) record() (decided, tasks []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.decided), slices.Clone(s.tasks)
}

func proposal(id, agent string, step int, command string) *api.Proposal {
	return &api.Proposal{ID: id, AgentID: agent, Step: step, Command: command, Status: api.ProposalPending,
		Args: []byte(`{}`), Hash: strings.Repeat(fmt.Sprintf("%x", step%16), 64)}
}

// bindingWorld is a relay whose thread T1 in C1 is bound to a-1 and T2 in C2 to a-2; U1
// is the approver and a-9 runs unbound.
type bindingWorld struct {
	r       *Relay
	ad      *fakeAdapter
	svc     *daemonFake
	binds   *memBindings
	mu      sync.Mutex
	audited []AuditEvent
}

func newBindingWorld(t testing.TB) *bindingWorld {
	t.Helper()
	w := &bindingWorld{ad: &fakeAdapter{}, svc: &daemonFake{props: map[string][]api.Proposal{}, agents: []api.Agent{
		{ID: "a-1", Name: "writer", State: api.StateThinking, Task: "write the notes"},
		{ID: "a-2", Name: "deployer", State: api.StateThinking, Task: "deploy the secret service"},
		{ID: "a-9", Name: "loner", State: api.StateThinking, Task: "private work"},
	}}}
	w.binds = &memBindings{msgs: map[string]*ChatMessage{}, bs: []*Binding{
		{Platform: "slack", Channel: "C1", Thread: "T1", AgentID: "a-1"},
		{Platform: "slack", Channel: "C2", Thread: "T2", AgentID: "a-2"},
	}, agents: w.svc}
	w.r = New(Options{Service: w.svc, Bindings: w.binds, Audit: func(_ context.Context, e AuditEvent) error {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.audited = append(w.audited, e)
		return nil
	}})
	w.r.Add(w.ad, Rules{Channels: map[string]Access{"C1": {}, "C2": {}}, Approvers: Access{Users: []string{"U1"}}})
	return w
}

// show makes p wait and posts it in its agent's thread, as the relay does on its event.
func (w *bindingWorld) show(p *api.Proposal) {
	w.svc.wait(p.AgentID, p)
	w.r.posts.handle(context.Background(), api.Event{Type: api.EventProposal, AgentID: p.AgentID, Proposal: p})
	w.r.out.flush()
}

// decidedElsewhere has a-1's waiting proposal id decided as kind by someone else
// (agentctl, another click) before what a case checks; the record forgets it, so only
// what the case decides is counted.
func (w *bindingWorld) decidedElsewhere(id string, kind api.DecisionKind) {
	if _, err := w.svc.Decide(context.Background(), "a-1", api.DecideRequest{ProposalID: id, Kind: kind}); err != nil {
		panic(err)
	}
	w.svc.mu.Lock()
	w.svc.decided = nil
	w.svc.mu.Unlock()
}

// ask makes a-1 wait on a question with text and posts it in T1, as the relay does on its
// event.
func (w *bindingWorld) ask(text string) {
	w.svc.mu.Lock()
	a := w.svc.find("a-1")
	a.Question, a.State = &api.Question{ProposalID: "p-q", Text: text}, api.StateAwaitingDecision
	q := *a.Question
	w.svc.mu.Unlock()
	w.r.posts.handle(context.Background(), api.Event{Type: api.EventQuestion, AgentID: "a-1", Question: &q})
	w.r.out.flush()
}

// say delivers a message written in T1 with id (and replyTo, the message it answers).
func (w *bindingWorld) say(id, replyTo, text string) {
	w.r.OnMessage(context.Background(), Incoming{Platform: "slack", Where: Where{Channel: "C1", Thread: "T1"},
		User: User{ID: "U1"}, Text: text, ID: id, ReplyTo: replyTo})
}

// lastNote is the last ephemeral note shown to a person.
func (w *bindingWorld) lastNote() string {
	w.ad.mu.Lock()
	defer w.ad.mu.Unlock()
	for i := len(w.ad.posts) - 1; i >= 0; i-- {
		if s, ok := strings.CutPrefix(w.ad.posts[i], "ephemeral "); ok {
			return s
		}
	}
	return ""
}

func (w *bindingWorld) message(proposalID string) string {
	m, _ := w.binds.Message(context.Background(), proposalID, "slack", "proposal")
	if m == nil {
		return ""
	}
	return m.Message
}

// A typed reply decides the proposal it was written for, or nothing.
func TestTypedRepliesAreBoundToTheProposalShown(t *testing.T) {
	for _, tc := range []struct {
		name string
		// run shows proposals and delivers messages; it returns what must be decided.
		run      func(w *bindingWorld) string
		wantNote string
	}{
		{"late_y_for_p1_while_p2_waits", func(w *bindingWorld) string {
			w.show(proposal("p-1", "a-1", 1, "read_file"))
			late := w.ad.stamp() // written for p-1, delivered after p-1 was decided and p-2 shown
			w.decidedElsewhere("p-1", api.DecisionApprove)
			w.show(proposal("p-2", "a-1", 2, "write_file"))
			w.say(late, "", "y")
			return ""
		}, "That reply was for an earlier proposal (step 1), so it decided nothing; the agent now waits on step 2: write_file — answer that one."},
		{"reply_after_p2_shown_decides_p2", func(w *bindingWorld) string {
			w.show(proposal("p-2", "a-1", 2, "write_file"))
			w.say(w.ad.stamp(), "", "y")
			return "a-1 p-2 approve 1 " + strings.Repeat("2", 64)
		}, ""},
		{"reply_while_p2_not_posted", func(w *bindingWorld) string {
			w.svc.wait("a-1", proposal("p-2", "a-1", 2, "write_file"))
			w.say(w.ad.stamp(), "", "n")
			return ""
		}, "the agent now waits on step 2: write_file — answer that one."},
		{"reply_to_p1_message_while_p2_waits", func(w *bindingWorld) string {
			w.show(proposal("p-1", "a-1", 1, "read_file"))
			p1 := w.message("p-1")
			w.decidedElsewhere("p-1", api.DecisionApprove)
			w.show(proposal("p-2", "a-1", 2, "write_file"))
			w.say(w.ad.stamp(), p1, "y")
			return ""
		}, "That reply was for an earlier proposal (step 1)"},
		{"reply_to_p2_message_decides_p2", func(w *bindingWorld) string {
			w.show(proposal("p-2", "a-1", 2, "write_file"))
			w.say(w.ad.stamp(), w.message("p-2"), "n")
			return "a-1 p-2 deny 0 " + strings.Repeat("2", 64)
		}, ""},
		{"message_without_id", func(w *bindingWorld) string {
			w.show(proposal("p-2", "a-1", 2, "write_file"))
			w.say("", "", "y")
			return ""
		}, "came without an id"},
		{"feedback_over_the_cap", func(w *bindingWorld) string {
			w.show(proposal("p-2", "a-1", 2, "write_file"))
			w.say(w.ad.stamp(), "", strings.Repeat("é", api.MaxTextBytes/2+1))
			return ""
		}, fmt.Sprintf("Feedback is %d bytes; the limit is 8000 — shorten it", api.MaxTextBytes+2)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newBindingWorld(t)
			want := tc.run(w)
			decided, _ := w.svc.record()
			if want == "" && len(decided) != 0 || want != "" && fmt.Sprint(decided) != "["+want+"]" {
				t.Fatalf("decided %q, want %q", decided, want)
			}
			if note := w.lastNote(); tc.wantNote != "" && !strings.Contains(note, tc.wantNote) {
				t.Errorf("note = %q, want it to say %q", note, tc.wantNote)
			}
		})
	}
}

// An answer is bound to its question's message the same way.
func TestAnswersAreBoundToTheQuestionShown(t *testing.T) {
	w := newBindingWorld(t)
	early := w.ad.stamp()
	w.ask("Which folder?")
	w.say(early, "", "docs")
	if len(w.svc.answers) != 0 || !strings.Contains(w.lastNote(), "now waits on its question: Which folder?") {
		t.Fatalf("an answer written before the question: answers %q, note %q", w.svc.answers, w.lastNote())
	}
	w.say(w.ad.stamp(), "", "docs")
	if fmt.Sprint(w.svc.answers) != "[a-1 p-q docs]" {
		t.Errorf("answers = %q", w.svc.answers)
	}
}

// A message delivered again (a Slack retry racing the first delivery) is applied once.
func TestRedeliveredReplyIsAppliedOnce(t *testing.T) {
	w := newBindingWorld(t)
	w.show(proposal("p-1", "a-1", 1, "read_file"))
	id := w.ad.stamp()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() { defer wg.Done(); w.say(id, "", "y -3") }()
	}
	wg.Wait()
	decided, _ := w.svc.record()
	if fmt.Sprint(decided) != "[a-1 p-1 approve 3 "+strings.Repeat("1", 64)+"]" {
		t.Fatalf("decided %q, want one approval ×3", decided)
	}
	w.ad.mu.Lock()
	defer w.ad.mu.Unlock()
	for _, p := range w.ad.posts {
		if strings.HasPrefix(p, "ephemeral") {
			t.Errorf("a redelivery was answered: %q", p)
		}
	}
}

// A follow-up task is taken once, however often its message is delivered; a bare "y"
// to an idle agent starts nothing.
func TestFollowUpTasksAreTakenOnce(t *testing.T) {
	w := newBindingWorld(t)
	w.svc.mu.Lock()
	w.svc.find("a-1").State = api.StateIdle
	w.svc.mu.Unlock()
	w.say(w.ad.stamp(), "", "y")
	if _, tasks := w.svc.record(); len(tasks) != 0 || !strings.Contains(w.lastNote(), "nothing waits for a decision") {
		t.Fatalf("a late y started %q; note %q", tasks, w.lastNote())
	}
	id := w.ad.stamp()
	w.say(id, "", "now tidy the docs")
	w.svc.mu.Lock()
	w.svc.find("a-1").State = api.StateIdle // its run ended before the redelivery
	w.svc.mu.Unlock()
	w.say(id, "", "now tidy the docs")
	if _, tasks := w.svc.record(); fmt.Sprint(tasks) != "[a-1 now tidy the docs]" {
		t.Errorf("tasks = %q, want one", tasks)
	}
}

func (w *bindingWorld) click(thread, id string, ref Ref) {
	channel := "C1"
	if thread == "T2" {
		channel = "C2"
	}
	w.r.OnClick(context.Background(), Click{Platform: "slack", Where: Where{Channel: channel, Thread: thread}, User: User{ID: "U1"},
		Action: ActionApprove, Ref: ref, ID: id})
}

// The agent a click decides for is its thread's; a button naming another agent, or
// another command than the one waiting, is refused and audited.
func TestClicksAreBoundToTheirThread(t *testing.T) {
	hash := func(step int) string { return proposal("", "", step, "").Hash[:HashLen] }
	for _, tc := range []struct {
		name      string
		thread    string
		ref       Ref
		want      string
		wantAudit string
	}{
		{"own_agent", "T1", Ref{AgentID: "a-1", ProposalID: "p-1", Hash: hash(1)}, "a-1 p-1 approve 1 " + hash(1), ""},
		{"agent_from_thread_when_ref_names_none", "T1", Ref{ProposalID: "p-1"}, "a-1 p-1 approve 1 ", ""},
		{"thread_a_naming_agent_b", "T1", Ref{AgentID: "a-2", ProposalID: "p-9", Hash: hash(9)}, "", "a-2 in a-1's thread"},
		{"hash_mismatch", "T1", Ref{AgentID: "a-1", ProposalID: "p-1", Hash: hash(7)}, "", "a-1 in a-1's thread"},
		{"unbound_thread", "T7", Ref{AgentID: "a-1", ProposalID: "p-1"}, "", "a-1 in 's thread"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newBindingWorld(t)
			w.show(proposal("p-1", "a-1", 1, "read_file"))
			w.show(proposal("p-9", "a-2", 9, "delete_file"))
			w.click(tc.thread, "c-1", tc.ref)
			decided, _ := w.svc.record()
			if tc.want == "" && len(decided) != 0 || tc.want != "" && fmt.Sprint(decided) != "["+tc.want+"]" {
				t.Fatalf("decided %q, want %q", decided, tc.want)
			}
			var audited []string
			for _, e := range w.audited {
				audited = append(audited, fmt.Sprintf("%s in %s's thread", e.AgentID, e.ThreadAgent))
			}
			if tc.wantAudit != "" && fmt.Sprint(audited) != "["+tc.wantAudit+"]" || tc.wantAudit == "" && len(audited) != 0 {
				t.Errorf("audited %q, want %q", audited, tc.wantAudit)
			}
			if tc.want == "" && !strings.Contains(w.lastNote(), "decided nothing") && !strings.Contains(w.lastNote(), "gone") {
				t.Errorf("refused click note = %q", w.lastNote())
			}
		})
	}
}

// A click delivered twice (same click id) decides once, and its copy is not answered
// with the daemon's refusal.
func TestRedeliveredClickIsAppliedOnce(t *testing.T) {
	w := newBindingWorld(t)
	w.show(proposal("p-1", "a-1", 1, "read_file"))
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() { defer wg.Done(); w.click("T1", "c-7", Ref{AgentID: "a-1", ProposalID: "p-1"}) }()
	}
	wg.Wait()
	if decided, _ := w.svc.record(); len(decided) != 1 {
		t.Fatalf("decided %q, want once", decided)
	}
	if note := w.lastNote(); note != "" {
		t.Errorf("a redelivered click was answered: %q", note)
	}
}

// A feedback dialog is bound like a click, and text over the daemon's cap is refused
// with a note before the daemon is called.
func TestFeedbackDialogs(t *testing.T) {
	w := newBindingWorld(t)
	w.show(proposal("p-1", "a-1", 1, "read_file"))
	w.show(proposal("p-9", "a-2", 9, "delete_file"))
	feedback := func(ref Ref, text string) {
		w.r.OnFeedback(context.Background(), "slack", Where{Channel: "C1", Thread: "T1"}, User{ID: "U1"}, ref, text)
	}
	feedback(Ref{AgentID: "a-1", ProposalID: "p-1"}, strings.Repeat("x", api.MaxTextBytes+1))
	if d, _ := w.svc.record(); len(d) != 0 || !strings.Contains(w.lastNote(), "Feedback is 8001 bytes; the limit is 8000") {
		t.Fatalf("long feedback: decided %q, note %q", d, w.lastNote())
	}
	feedback(Ref{AgentID: "a-2", ProposalID: "p-9"}, "go on")
	if d, _ := w.svc.record(); len(d) != 0 || len(w.audited) != 1 {
		t.Fatalf("feedback naming another thread's agent: decided %q, audited %+v", d, w.audited)
	}
	feedback(Ref{AgentID: "a-1", ProposalID: "p-1", Hash: strings.Repeat("1", HashLen)}, "use docs/")
	if d, _ := w.svc.record(); fmt.Sprint(d) != "[a-1 p-1 feedback 0 "+strings.Repeat("1", HashLen)+"]" {
		t.Errorf("decided %q", d)
	}
}

// Slash commands answer approvers only, about this channel's agents only.
func TestSlashCommandsAreScopedToTheChannel(t *testing.T) {
	for _, tc := range []struct {
		name, user, channel, text string
		want                      []string
		not                       []string
	}{
		{"non_approver_list", "U5", "C1", "list", []string{"You are not an approver here"}, []string{"writer", "deployer", "loner", "agents"}},
		{"non_approver_status", "U5", "C1", "status writer", []string{"You are not an approver here"}, []string{"writer", "thinking"}},
		{"non_approver_stop", "U5", "C1", "stop writer", []string{"You are not an approver here"}, []string{"writer"}},
		{"approver_list", "U1", "C1", "list", []string{"writer  thinking  write the notes"}, []string{"deployer", "loner"}},
		{"approver_status", "U1", "C1", "status", []string{"1 agents, 1 thinking"}, nil},
		{"other_channels_agent_status", "U1", "C1", "status deployer", []string{"No agent deployer in this channel."}, []string{"secret"}},
		{"unbound_agent_status", "U1", "C1", "status a-9", []string{"No agent a-9 in this channel."}, []string{"private"}},
		{"other_channels_agent_stop", "U1", "C1", "stop deployer", []string{"No agent deployer in this channel."}, nil},
		{"own_agent_status", "U1", "C2", "status deployer", []string{"deployer: thinking", "deploy the secret service"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newBindingWorld(t)
			got := w.r.OnCommand(context.Background(), "slack", Where{Channel: tc.channel}, User{ID: tc.user}, tc.text)
			testutil.CheckContains(t, "the reply", got, tc.want, tc.not)
			if len(w.svc.stopped) != 0 {
				t.Errorf("stopped %q", w.svc.stopped)
			}
		})
	}
}

// An agent's own approvers may use slash commands in a channel whose list they are not on.
func TestAgentApproversMayCommand(t *testing.T) {
	w := newBindingWorld(t)
	w.r.eps.get("slack").rules.Agents = map[string]Access{"writer": {Users: []string{"U3"}}}
	got := w.r.OnCommand(context.Background(), "slack", Where{Channel: "C1"}, User{ID: "U3"}, "stop writer")
	if got != "Agent writer is idle." || fmt.Sprint(w.svc.stopped) != "[a-1]" {
		t.Errorf("stop by the agent's approver = %q, stopped %q", got, w.svc.stopped)
	}
}

func TestParseApprover(t *testing.T) {
	for _, tc := range []struct {
		name, in, id string
		group, ok    bool
	}{
		{"plain", "U123", "U123", false, true},
		{"user_mention", "<@U123>", "U123", false, true},
		{"user_mention_with_name", "<@U123|ann>", "U123", false, true},
		{"nickname_mention", "<@!42>", "42", false, true},
		{"role_mention", "<@&42>", "42", true, true},
		{"slack_group", "<!subteam^S9|@ops>", "S9", true, true},
		{"at_name", "@ann", "", false, false},
		{"channel_mention", "<#C1>", "", false, false},
		{"empty_mention", "<@>", "", false, false},
		{"spaces", "U 1", "", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, group, err := ParseApprover(tc.in)
			if (err == nil) != tc.ok || id != tc.id || group != tc.group {
				t.Errorf("ParseApprover(%q) = %q, %v, %v", tc.in, id, group, err)
			}
		})
	}
}

// A proposal's buttons carry the hash of what they show.
func TestButtonsCarryTheProposalsHash(t *testing.T) {
	p := proposal("p-1", "a-1", 3, "write_file")
	for _, b := range FormatProposal(ProposalView{Proposal: p, ApproveN: 3}, "slack").Buttons {
		if b.Ref.Hash != strings.Repeat("3", HashLen) || b.Ref.AgentID != "a-1" || b.Ref.ProposalID != "p-1" {
			t.Errorf("%s button ref = %+v", b.Action, b.Ref)
		}
	}
	p.Hash = "abc" // too short to name it: left out rather than cut wrong
	for _, b := range FormatProposal(ProposalView{Proposal: p}, "slack").Buttons {
		if b.Ref.Hash != "" {
			t.Errorf("%s button ref = %+v", b.Action, b.Ref)
		}
	}
}

// A reply can reach the relay before the call that posted its proposal returns: it is
// bound to the proposal once the post's id is known, not refused.
func TestReplyRacingItsProposalsPost(t *testing.T) {
	w := newBindingWorld(t)
	replied, missed := make(chan struct{}), make(chan struct{})
	w.ad.onPost = func(string) {
		w.ad.onPost = nil // the first post only; Post runs on the outbox's one goroutine
		w.binds.mu.Lock()
		var once sync.Once
		w.binds.onLookup = func(id string, found bool) {
			if id == "p-1" && !found {
				once.Do(func() { close(missed) })
			}
		}
		w.binds.mu.Unlock()
		go func() { defer close(replied); w.say(w.ad.stamp(), "", "y") }()
		<-missed // the reply looked for p-1's message before its post returned
	}
	w.show(proposal("p-1", "a-1", 1, "read_file"))
	<-replied
	if decided, _ := w.svc.record(); len(decided) != 1 {
		t.Fatalf("decided %q, note %q; want p-1 approved", decided, w.lastNote())
	}
}

// A non-approver's /agent run is refused in a note before anything is made.
func TestNonApproverRunRefused(t *testing.T) {
	w := newBindingWorld(t)
	if got := w.r.OnCommand(context.Background(), "slack", Where{Channel: "C1"}, User{ID: "U5"}, "run leak the keys"); got != "" {
		t.Errorf("answer = %q", got)
	}
	if !strings.Contains(w.lastNote(), "You are not an approver here") {
		t.Errorf("note = %q", w.lastNote())
	}
}

// With helpers waiting in one thread, a plain reply goes to the proposal at the bottom of
// the thread as it was when the reply was written, not to one shown after it.
func TestReplyGoesToTheHelperShownBeforeIt(t *testing.T) {
	ctx := context.Background()
	svc := helpersWaiting()
	r, ad := threadRelay(ctx, svc)
	r.posts.handle(ctx, api.Event{Type: api.EventProposal, AgentID: "a-2", Proposal: svc.agents[1].Pending})
	r.out.flush()
	written := ad.stamp() // after fetcher's proposal, before writer's
	r.posts.handle(ctx, api.Event{Type: api.EventProposal, AgentID: "a-3", Proposal: svc.agents[2].Pending})
	r.out.flush()
	r.OnMessage(ctx, Incoming{Platform: "slack", Where: Where{Channel: "C1", Thread: "T1"}, User: User{ID: "U1"}, Text: "y", ID: written})
	if fmt.Sprint(svc.decided) != "[a-2 p-2 approve]" {
		t.Errorf("decided %q, want fetcher's proposal, the one shown when the reply was written", svc.decided)
	}
}

// BenchmarkClickBinding is the relay's part of click → decision: finding the thread's
// agent, the approver check, the hash check and the redelivery memory, against
// in-memory bindings and daemon.
func BenchmarkClickBinding(b *testing.B) {
	w := newBindingWorld(b)
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		p := proposal(fmt.Sprint("p-", i), "a-1", i+1, "read_file")
		w.svc.wait("a-1", p)
		b.StartTimer()
		w.click("T1", fmt.Sprint("c-", i), Ref{AgentID: "a-1", ProposalID: p.ID, Hash: p.Hash[:HashLen]})
	}
	b.StopTimer()
	if decided, _ := w.svc.record(); len(decided) != b.N {
		b.Fatalf("%d decisions for %d clicks", len(decided), b.N)
	}
}
