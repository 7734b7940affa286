package team

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/agent"
	"github.com/agentd/agentd/daemon/run"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/agenttest"
	"github.com/agentd/agentd/internal/testutil"
)

const withCommands = `
name = "build"
root = "build"
[roles.ceo]
description = "the CEO"
[roles.programmer]
description = "a programmer who writes files"
commands = ["write_file"]
max_steps = 4
[phases.code]
instructor = "ceo"
assistant = "programmer"
prompt = "Write hello.txt."
store = "code"
max_turns = 4
[states.build]
phases = ["code"]
`

// awaiting waits for the role agent of a team run to wait for a decision on command, and
// returns the agent.
func (e *env) awaiting(teamID, role, command string) *api.Agent {
	e.t.Helper()
	r := e.until(teamID, role+"'s agent", func(r *api.TeamRun) bool { return r.Agents[role] != "" })
	var a *api.Agent
	if !testutil.Wait(10*time.Second, func() bool {
		var err error
		if a, err = e.sup.API().Views.Agent(context.Background(), r.Agents[role]); err != nil {
			e.t.Fatal(err)
		}
		return a.State == api.StateAwaitingDecision && a.Pending != nil && a.Pending.Command == command
	}) {
		e.t.Fatalf("agent %s is %s (%s), not awaiting a decision on %s", a.Name, a.State, a.StateReason, command)
	}
	return a
}

// checkRanOnce checks that the role agent wrote hello.txt once, through one approved
// proposal, and that the team ended with its reply as the conclusion.
func (e *env) checkRanOnce(r *api.TeamRun, agentID string) {
	e.t.Helper()
	if r.Status != api.TeamFinished || r.Vars["code"] != "wrote hello.txt" {
		e.t.Fatalf("run: %s", dump(r))
	}
	ps, err := e.sup.API().Views.Proposals(context.Background(), agentID)
	if err != nil {
		e.t.Fatal(err)
	}
	var writes []string
	for _, p := range ps {
		if p.Command == "write_file" {
			writes = append(writes, string(p.Status))
		}
	}
	if strings.Join(writes, ",") != "succeeded" {
		e.t.Errorf("write_file proposals: %v, want one that succeeded", writes)
	}
	a, _ := e.sup.API().Views.Agent(context.Background(), agentID)
	if b, err := os.ReadFile(filepath.Join(a.Workspace, "hello.txt")); err != nil || string(b) != "hi" {
		e.t.Errorf("hello.txt = %q, %v", b, err)
	}
	var msg *api.TeamTurn
	for i := range r.Transcript {
		if r.Transcript[i].Role == "programmer" {
			msg = &r.Transcript[i]
		}
	}
	if msg == nil || msg.AgentID != agentID || msg.RunID == "" || msg.Text != "<INFO> wrote hello.txt" {
		e.t.Errorf("programmer's message: %+v", msg)
	}
}

// A role with commands is a real agent: its write_file waits for a person's decision
// like any agent's, runs once when approved, and its finish reason is its reply.
func TestRoleCommandGoesThroughTheDecisionPath(t *testing.T) {
	e := newEnv(t)
	e.keep = true
	team := e.startHello(withCommands, proposal("finish", map[string]string{"reason": "<INFO> wrote hello.txt"}))
	a := e.awaiting(team.ID, "programmer", "write_file")
	if a.Name != AgentName(team.ID, "programmer") {
		t.Errorf("agent name %q, want %q", a.Name, AgentName(team.ID, "programmer"))
	}
	if r, _ := e.eng.Team(context.Background(), team.ID); r.Waiting != a.ID || r.Status != api.TeamRunning || r.State != "build" || r.Phase != "code" {
		t.Errorf("team while waiting: %s", dump(r))
	}
	if _, err := e.sup.API().Decisions.Decide(context.Background(), a.ID, api.DecideRequest{ProposalID: a.Pending.ID, Kind: api.DecisionApprove, Source: "agentctl", By: "test"}); err != nil {
		t.Fatal(err)
	}
	r := e.ended(team.ID)
	e.checkRanOnce(r, a.ID)
}

// A daemon restart while a role's proposal waits: the team and the agent pick up where
// they were, the approval after the restart runs the command once, and the team goes on.
func TestRestartResumesWithoutRunningTwice(t *testing.T) {
	e := newEnv(t)
	e.keep = true
	team := e.startHello(withCommands, proposal("finish", map[string]string{"reason": "<INFO> wrote hello.txt"}))
	a := e.awaiting(team.ID, "programmer", "write_file")
	e.stop()
	e.start()
	a = e.awaiting(team.ID, "programmer", "write_file")
	if _, err := e.sup.API().Decisions.Decide(context.Background(), a.ID, api.DecideRequest{ProposalID: a.Pending.ID, Kind: api.DecisionApprove, Source: "agentctl"}); err != nil {
		t.Fatal(err)
	}
	e.checkRanOnce(e.ended(team.ID), a.ID)
	if n := len(e.fake.Requests()); n != 3 {
		t.Errorf("%d model calls, want 3 (ceo, write_file, finish): a turn was asked twice", n)
	}
}

// Denying a role's proposal ends its run; the phase ends with no reply, recorded.
func TestDeniedRoleCommandEndsThePhase(t *testing.T) {
	e := newEnv(t)
	e.keep = true
	team := e.startHello(withCommands)
	a := e.awaiting(team.ID, "programmer", "write_file")
	if _, err := e.sup.API().Decisions.Decide(context.Background(), a.ID, api.DecideRequest{ProposalID: a.Pending.ID, Kind: api.DecisionDeny, Source: "agentctl"}); err != nil {
		t.Fatal(err)
	}
	r := e.ended(team.ID)
	if !strings.Contains(outline(r), "phase_end code (no_reply)") || r.Status != api.TeamFinished {
		t.Errorf("transcript:\n%s", outline(r))
	}
	if _, err := os.Stat(filepath.Join(a.Workspace, "hello.txt")); err == nil {
		t.Error("the denied write_file ran")
	}
}

// Stopping a team stops the role agent's run it waits for, and removes the agent.
func TestStopTeamStopsTheRoleRun(t *testing.T) {
	e := newEnv(t)
	team := e.startHello(withCommands)
	a := e.awaiting(team.ID, "programmer", "write_file")
	r, err := e.eng.StopTeam(context.Background(), team.ID)
	if err != nil || r.Status != api.TeamStopped {
		t.Fatalf("StopTeam = %+v, %v", r, err)
	}
	if _, err := e.sup.API().Views.Agent(context.Background(), a.ID); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("role agent after the team stopped: %v, want it removed", err)
	}
	if _, err := os.Stat(a.Workspace); !os.IsNotExist(err) {
		t.Errorf("role agent's workspace after the team stopped: %v", err)
	}
	if _, err := e.eng.StopTeam(context.Background(), team.ID); err == nil {
		t.Error("stopping an ended team run: no error")
	}
}

// A team stopped by a known person says who: in its reason and its last entry.
func TestStopTeamByNamesWho(t *testing.T) {
	e := newEnv(t)
	team := e.startHello(withCommands)
	e.awaiting(team.ID, "programmer", "write_file")
	if _, err := e.eng.StopTeamBy(context.Background(), team.ID, " slack:U1 "); err != nil {
		t.Fatal(err)
	}
	r, err := e.eng.Team(context.Background(), team.ID)
	if err != nil {
		t.Fatal(err)
	}
	last := r.Transcript[len(r.Transcript)-1]
	if r.Status != api.TeamStopped || r.Reason != "stopped by slack:U1" || last.Kind != api.TurnEnd || last.Text != r.Reason {
		t.Errorf("run %s (%s), last entry %+v", r.Status, r.Reason, last)
	}
}

// A stored run whose workflow no longer parses (an upgrade changed the format) fails
// cleanly at start, with the reason.
func TestUnparsableStoredRunFails(t *testing.T) {
	e := newEnv(t)
	e.stop()
	err := e.st.Tx(context.Background(), func(tx *store.Tx) error {
		return tx.InsertTeamRun(&store.TeamRun{TeamRun: api.TeamRun{ID: "t-old", Workflow: "old", Task: "x",
			Status: api.TeamRunning, State: "a"}, Source: "name = \"old\"\n[states.a]\nphases = 3\n"})
	})
	if err != nil {
		t.Fatal(err)
	}
	e.start()
	r := e.ended("t-old")
	if r.Status != api.TeamFailed || !strings.Contains(r.Reason, "no longer parses") {
		t.Errorf("run: %s", dump(r))
	}
}

// A role using a command the daemon does not offer is refused at start, by name.
func TestUnknownRoleCommandRefused(t *testing.T) {
	e := newEnv(t)
	src := strings.Replace(withCommands, `commands = ["write_file"]`, `commands = ["write_file", "web_search"]`, 1)
	_, err := e.eng.StartTeam(context.Background(), api.TeamRunRequest{Workflow: src, File: "build.toml", Task: "x"})
	if !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), "build.toml: role programmer uses web_search, which this daemon does not offer") {
		t.Errorf("err = %v", err)
	}
	if runs, _ := e.eng.Teams(context.Background()); len(runs) != 0 {
		t.Errorf("a run was stored: %v", runs)
	}
}

// A role's agent may use only its role's commands: a role limited to read_file that
// proposes write_file is told the command is unknown, and it never runs.
func TestRoleLimitedToItsCommands(t *testing.T) {
	e := newEnv(t)
	e.keep = true
	src := strings.Replace(withCommands, `commands = ["write_file"]`, `commands = ["read_file"]`, 1)
	team := e.startHello(src, proposal("finish", map[string]string{"reason": "<INFO> I may only read files"}))
	r := e.ended(team.ID)
	if r.Vars["code"] != "I may only read files" {
		t.Fatalf("run: %s", dump(r))
	}
	reqs := e.fake.Requests()
	var told bool
	for _, q := range reqs {
		if strings.Contains(string(q.Format), `"thoughts"`) && strings.Contains(string(q.Format), "write_file") {
			t.Error("the role agent's reply schema offers write_file")
		}
		for _, m := range q.Messages {
			told = told || strings.Contains(m.Content, `unknown command "write_file"`)
		}
	}
	if !told {
		t.Error("the model was not told write_file is unknown")
	}
	id := r.Agents["programmer"]
	if ps, err := e.sup.API().Views.Proposals(context.Background(), id); err == nil {
		for _, p := range ps {
			if p.Command == "write_file" {
				t.Errorf("a write_file proposal was stored: %+v", p)
			}
		}
	}
}

// stopOnStart is the supervisor, with a team stop landing just after a role's run has
// started and before the engine records it.
type stopOnStart struct {
	agenttest.API
	e    *env
	once sync.Once
}

func (s *stopOnStart) StartTask(ctx context.Context, ref, task string, opt run.Options) (*api.Agent, error) {
	a, err := s.API.StartTask(ctx, ref, task, opt)
	s.once.Do(func() {
		runs, _ := s.e.eng.Teams(context.Background())
		if _, err := s.e.eng.StopTeam(context.Background(), runs[0].ID); err != nil {
			s.e.t.Error(err)
		}
	})
	return a, err
}

// A stop that lands while a role's run was just started (the engine's context cancelled
// before it recorded the run) still stops that run.
func TestStopDuringRoleRunStartStopsIt(t *testing.T) {
	e := newEnv(t)
	e.keep = true
	e.stop()
	e.wrap = func(sup *agent.Supervisor) Agents { return &stopOnStart{API: agenttest.Of(sup), e: e} }
	e.start()
	team := e.startHello(withCommands)
	r := e.ended(team.ID)
	if r.Status != api.TeamStopped {
		t.Fatalf("run: %s", dump(r))
	}
	id := AgentName(team.ID, "programmer")
	var a *api.Agent
	if !testutil.Wait(10*time.Second, func() bool {
		var err error
		if a, err = e.sup.API().Views.Agent(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		return a.State == api.StateIdle && a.RunID != ""
	}) {
		t.Fatalf("role agent is %s (%s) after the team stopped", a.State, a.StateReason)
	}
}

// When a team run ends its role agents are removed with their workspaces; the transcript
// keeps what they said. With KeepAgents they stay.
func TestRoleAgentsRemovedAtEnd(t *testing.T) {
	for _, keep := range []bool{false, true} {
		t.Run(map[bool]string{false: "removed", true: "kept"}[keep], func(t *testing.T) {
			e := newEnv(t)
			e.keep = keep
			team := e.startHello(withCommands, proposal("finish", map[string]string{"reason": "<INFO> wrote hello.txt"}))
			a := e.awaiting(team.ID, "programmer", "write_file")
			if _, err := e.sup.API().Decisions.Decide(context.Background(), a.ID, api.DecideRequest{ProposalID: a.Pending.ID, Kind: api.DecisionApprove, Source: "agentctl"}); err != nil {
				t.Fatal(err)
			}
			r := e.ended(team.ID)
			if r.Status != api.TeamFinished || r.KeepAgents != keep || r.Agents["programmer"] != a.ID {
				t.Fatalf("run: %s", dump(r))
			}
			var said bool
			for _, turn := range r.Transcript {
				said = said || (turn.AgentID == a.ID && turn.Text == "<INFO> wrote hello.txt")
			}
			if !said {
				t.Errorf("the transcript lost the role agent's message:\n%s", outline(r))
			}
			// The loop removes them once it has seen the end; Wait waits for the loop.
			e.stop()
			if _, err := e.sup.API().Views.Agent(context.Background(), a.ID); keep != (err == nil) {
				t.Errorf("keep %v: role agent: %v", keep, err)
			}
			_, err := os.Stat(filepath.Join(a.Workspace, "hello.txt"))
			if keep != (err == nil) {
				t.Errorf("keep %v: hello.txt: %v", keep, err)
			}
		})
	}
}

// A run that ended while the daemon died before its agents were removed is cleaned up
// at the next start.
func TestEndedRunsAgentsSweptAtStart(t *testing.T) {
	e := newEnv(t)
	e.stop()
	a, err := e.sup.API().Runs.CreateAgent(context.Background(), api.CreateAgentRequest{Name: "tdeadbeef-programmer", Goals: []string{"x"}, Start: new(bool)})
	if err != nil {
		t.Fatal(err)
	}
	err = e.st.Tx(context.Background(), func(tx *store.Tx) error {
		return tx.InsertTeamRun(&store.TeamRun{TeamRun: api.TeamRun{ID: "t-deadbeef", Workflow: "old", Task: "x",
			Status: api.TeamFinished, State: "a", Agents: map[string]string{"programmer": a.ID}}, Source: withCommands})
	})
	if err != nil {
		t.Fatal(err)
	}
	e.start()
	if _, err := e.sup.API().Views.Agent(context.Background(), a.ID); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("the ended run's agent after a start: %v, want it removed", err)
	}
}

// TestRolePromptReadsOnAfterItsName: a role's description follows "You are NAME, "
// mid-sentence, as an agent's does: no capital after the comma, no stop before ", in a
// team".
func TestRolePromptReadsOnAfterItsName(t *testing.T) {
	tests := []struct {
		name, desc, want string
	}{
		{"article_lowered", "An engineer who writes Go.", `You are cto, an engineer who writes Go, in a team following the workflow "pair".`},
		{"lowercase_unchanged", "chooses the technology", `You are cto, chooses the technology, in a team following the workflow "pair".`},
		{"acronym_kept", "NASA's reviewer", `You are cto, NASA's reviewer, in a team following the workflow "pair".`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			role := &Role{Name: "cto", Description: tt.desc}
			ph := &Phase{Name: "design", Instructor: "ceo", Assistant: "cto", Prompt: "design it"}
			got := system(&store.TeamRun{}, &Workflow{Name: "pair"}, &State{Name: "s"}, ph, role, "ceo")
			if first, _, _ := strings.Cut(got, "\n"); first != tt.want {
				t.Errorf("first line = %q, want %q", first, tt.want)
			}
		})
	}
}
