package bots

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/testutil"
)

// helpService is one agent's daemon: it records decisions, answers and tasks, and, like
// the daemon's Decide, refuses help words sent as feedback.
type helpService struct {
	helperService
	answered, tasks, created []string
}

func (s *helpService) CreateAgent(_ context.Context, req api.CreateAgentRequest) (*api.Agent, error) {
	s.created = append(s.created, req.Task)
	return &api.Agent{ID: "a-9", Name: "new"}, nil
}

func (s *helpService) Decide(ctx context.Context, ref string, req api.DecideRequest) (*api.Decision, error) {
	if req.Kind == api.DecisionFeedback && api.IsHelp(req.Feedback) {
		return nil, api.Errorf(api.ErrBadRequest, "%q asks for help, so it was not sent as feedback", req.Feedback)
	}
	return s.helperService.Decide(ctx, ref, req)
}
func (s *helpService) Answer(_ context.Context, ref string, req api.AnswerRequest) error {
	s.answered = append(s.answered, ref+" "+req.ProposalID+" "+req.Text)
	return nil
}
func (s *helpService) Task(_ context.Context, ref, task string) (*api.Agent, error) {
	s.tasks = append(s.tasks, ref+" "+task)
	return &s.agents[0], nil
}

// TestHelpInAThreadDecidesNothing: "?", "help" and "h" in a thread, where a proposal
// waits, show the person alone what each answer does and leave the proposal waiting;
// look-alikes are feedback. At a question only "?" is help; elsewhere help says what
// the thread takes.
func TestHelpInAThreadDecidesNothing(t *testing.T) {
	pending := &api.Proposal{ID: "p-1", AgentID: "a-1", Step: 4, Command: "write_file", Status: api.ProposalPending, Args: []byte(`{}`)}
	question := &api.Question{ProposalID: "p-2", Text: "Which colour?"}
	waiting := api.Agent{ID: "a-1", Name: "boss", State: api.StateAwaitingDecision, Pending: pending}
	asking := api.Agent{ID: "a-1", Name: "boss", State: api.StateAwaitingDecision, Question: question}
	idle := api.Agent{ID: "a-1", Name: "boss", State: api.StateIdle}
	thinking := api.Agent{ID: "a-1", Name: "boss", State: api.StateThinking}
	for _, tc := range []struct {
		name  string
		agent api.Agent
		text  string
		note  string // in the ephemeral note; "" when none is wanted
		sent  string // what reached the daemon: "decide …", "answer …", "task …"; "" nothing
	}{
		{"mark_at_proposal", waiting, "?", "y -N     run it and the next N-1", ""},
		{"word_at_proposal", waiting, " HELP ", "Step 4 (write_file) still waits for your decision", ""},
		{"letter_at_proposal", waiting, "h", "n!       like n", ""},
		{"help_sentence_is_feedback", waiting, "help me with the tests", "", "decide a-1 p-1 feedback"},
		{"marks_and_words_are_feedback", waiting, "?? why", "", "decide a-1 p-1 feedback"},
		{"y_still_decides", waiting, "y", "", "decide a-1 p-1 approve"},
		{"mark_at_question", asking, "?", "what you send is its answer", ""},
		{"word_at_question_is_the_answer", asking, "help", "", "answer a-1 p-2 help"},
		{"mark_when_idle", idle, "?", "Agent boss is idle: nothing waits for a decision", ""},
		{"word_when_idle_is_no_task", idle, "help", "Write a new task in words", ""},
		{"mark_while_thinking", thinking, "?", "When it proposes a command, reply with one of", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			svc := &helpService{helperService: helperService{agents: []api.Agent{tc.agent}}}
			r, ad := threadRelay(ctx, svc)
			showWaiting(ctx, r, tc.agent) // the reply is written after the proposal is shown
			r.OnMessage(ctx, Incoming{Platform: "slack", Where: Where{Channel: "C1", Thread: "T1"}, User: User{ID: "U1"}, Text: tc.text, ID: ad.stamp()})

			var sent []string
			for _, d := range svc.decided {
				sent = append(sent, "decide "+d)
			}
			for _, a := range svc.answered {
				sent = append(sent, "answer "+a)
			}
			for _, task := range svc.tasks {
				sent = append(sent, "task "+task)
			}
			if got := strings.Join(sent, "; "); got != tc.sent {
				t.Errorf("sent to the daemon: %q, want %q", got, tc.sent)
			}
			ephemerals := func() string {
				ad.mu.Lock()
				defer ad.mu.Unlock()
				var b strings.Builder
				for _, p := range ad.posts {
					if strings.HasPrefix(p, "ephemeral U1 ") {
						b.WriteString(p + "\n")
					}
				}
				return b.String()
			}
			if tc.note == "" {
				if got := ephemerals(); got != "" {
					t.Errorf("unwanted notes: %s", got)
				}
				return
			}
			testutil.Eventually(t, 5*time.Second, "the help note to U1", func() bool { return strings.Contains(ephemerals(), tc.note) })
		})
	}
}

// TestHelpInATeamThreadDecidesNothing: the same help in a team run's thread, for the
// role agent whose proposal waits.
func TestHelpInATeamThreadDecidesNothing(t *testing.T) {
	ctx := context.Background()
	p := &api.Proposal{ID: "p-7", AgentID: "a-7", Step: 2, Command: "run_shell", Status: api.ProposalPending, Args: []byte(`{}`)}
	svc := &helpService{helperService: helperService{agents: []api.Agent{
		{ID: "a-7", Name: "t1a2b3c4d-programmer", State: api.StateAwaitingDecision, Pending: p}}}}
	teams := &fakeTeams{runs: map[string]*api.TeamRun{
		"t-1a2b3c4d": {ID: "t-1a2b3c4d", Status: api.TeamRunning, Agents: map[string]string{"programmer": "a-7"}}}}
	r, ad := teamRelay(t, svc, teams)
	r.posts.handle(ctx, api.Event{Type: api.EventProposal, AgentID: "a-7", Proposal: p})
	r.out.flush()
	in := func(text string) Incoming {
		return Incoming{Platform: "slack", Where: Where{Channel: "C1", Thread: "T-t-1a2b3c4d"}, User: User{ID: "U1"}, Text: text, ID: ad.stamp()}
	}
	b := &TeamBinding{TeamRunID: "t-1a2b3c4d", Platform: "slack", Channel: "C1", Thread: "T-t-1a2b3c4d"}
	for _, text := range []string{"?", "programmer: help", "H"} {
		r.teams.teamReply(ctx, r.eps.get("slack"), in(text), b)
	}
	testutil.Eventually(t, 5*time.Second, "three help notes", func() bool {
		ad.mu.Lock()
		defer ad.mu.Unlock()
		n := 0
		for _, post := range ad.posts {
			if strings.HasPrefix(post, "ephemeral U1 Step 2 (run_shell) still waits") && strings.Contains(post, "y -N") {
				n++
			}
		}
		return n == 3
	})
	if len(svc.decided) != 0 {
		t.Fatalf("help in a team thread decided: %q", svc.decided)
	}
	r.teams.teamReply(ctx, r.eps.get("slack"), in("programmer: y"), b)
	if want := "a-7 p-7 approve"; len(svc.decided) != 1 || svc.decided[0] != want {
		t.Fatalf("after the help, y decided %q, want %q", svc.decided, want)
	}
}

// TestHelpWhereARunWouldStartStartsNone: "@agentd help" (or "?", "h") is a question
// about agentd, not a task: no thread, no agent, a note to the person alone.
func TestHelpWhereARunWouldStartStartsNone(t *testing.T) {
	ctx := context.Background()
	for _, text := range []string{"help", " ? ", "H"} {
		svc := &helpService{}
		r := New(Options{Service: svc, Bindings: &memBindings{msgs: map[string]*ChatMessage{}, agents: svc}})
		ad := &fakeAdapter{}
		r.Add(ad, Rules{Channels: map[string]Access{"C1": {}}, Approvers: Access{Users: []string{"U1"}}})
		r.OnMessage(ctx, Incoming{Platform: "slack", Where: Where{Channel: "C1"}, User: User{ID: "U1"}, Text: text, ID: ad.stamp(), Mention: true})
		if len(svc.created) != 0 {
			t.Errorf("%q created agents for %q", text, svc.created)
		}
		testutil.Eventually(t, 5*time.Second, "the note on how to start a run", func() bool {
			ad.mu.Lock()
			defer ad.mu.Unlock()
			return len(ad.posts) == 1 && strings.HasPrefix(ad.posts[0], "ephemeral U1 Tell me a task") && strings.Contains(ad.posts[0], "y -N")
		})
	}
}

// TestTaskTextShowsGoals: /agent status and list show what an agent created with goals
// works on, not the stand-in task of its run.
func TestTaskTextShowsGoals(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    api.Agent
		want string
	}{
		{"task", api.Agent{Task: "tidy notes.md", Goals: []string{"keep notes"}}, "tidy notes.md"},
		{"goals", api.Agent{Task: api.GoalsTask, Goals: []string{"keep notes.md up to date", "never delete a note"}},
			"its goals: keep notes.md up to date; never delete a note"},
		{"stand_in_without_goals", api.Agent{Task: api.GoalsTask}, api.GoalsTask},
		{"idle", api.Agent{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := taskText(&tc.a); got != tc.want {
				t.Errorf("taskText = %q, want %q", got, tc.want)
			}
			if tc.want != "" && !strings.Contains(agentText(&tc.a), "Task: "+tc.want) {
				t.Errorf("agentText = %q", agentText(&tc.a))
			}
		})
	}
}
