package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/apitest"
)

// The fake daemon's team runs: t-1 finished a software-company run with every kind of
// transcript entry; t-2 waits for its programmer agent. A started run is t-3, which has
// finished by the time it is read back.
func cannedTeam() *api.TeamRun {
	turn := func(seq int, kind, state, phase string, cycle int, role, text, mode string) api.TeamTurn {
		return api.TeamTurn{Seq: seq, Kind: kind, State: state, Phase: phase, Cycle: cycle, Role: role, Text: text, Mode: mode, At: fixedTime}
	}
	return &api.TeamRun{ID: "t-1", Workflow: "software-company", File: "software_company.toml", Task: "a CLI that counts words",
		Status: api.TeamFinished, Reason: "state test led to the end: the model chose it: the tests pass",
		State: "test", Phase: "testing", Turns: 7, MaxTurns: 80, CreatedAt: fixedTime, UpdatedAt: fixedTime, EndedAt: fixedTime,
		Vars:   map[string]string{"task": "a CLI that counts words", "language": "Go", "review": "Finished.", "ideas": ""},
		Agents: map[string]string{"programmer": "a-5"},
		Transcript: []api.TeamTurn{
			turn(1, api.TurnMessage, "design", "language", 0, "ceo", "Instruction: pick a language.", ""),
			turn(2, api.TurnMessage, "design", "language", 0, "cto", "<INFO> Go", ""),
			turn(3, api.TurnConclusion, "design", "language", 0, "", "Go", "language"),
			turn(4, api.TurnPhaseEnd, "design", "language", 0, "", "cto concluded with <INFO>", "info"),
			turn(5, api.TurnTransition, "review", "", 0, "", "design → review: the first next state whose condition holds", "rule"),
			ranBy(turn(6, api.TurnMessage, "review", "comment", 1, "programmer", "Instruction: review main.go.\nIt is short.", ""), "a-5", "r-6"),
			turn(7, api.TurnMessage, "review", "comment", 1, "reviewer", "Sure, I will look at it.", ""),
			turn(8, api.TurnPhaseEnd, "review", "comment", 1, "", `the assistant reviewer said what it would do without doing it: "Sure, I will look at it."`, "flake_reply"),
			turn(9, api.TurnMessage, "review", "comment", 2, "programmer", "Instruction: review main.go again.", ""),
			turn(10, api.TurnMessage, "review", "comment", 2, "reviewer", "<INFO> Finished.", ""),
			turn(11, api.TurnConclusion, "review", "comment", 2, "", "Finished.", "review"),
			turn(12, api.TurnPhaseEnd, "review", "comment", 2, "", "reviewer concluded with <INFO>", "info"),
			turn(13, api.TurnPhaseEnd, "review", "review_loop", 2, "", `its break condition "review contains 'finished'" holds`, "break"),
			turn(14, api.TurnEnd, "test", "", 0, "", "state test led to the end: the model chose it: the tests pass", "finished"),
		}}
}

// ranBy is t as a role agent's run made it: show names the run whose changes are the turn's.
func ranBy(t api.TeamTurn, agent, run string) api.TeamTurn {
	t.AgentID, t.RunID = agent, run
	return t
}

func cannedTeams() []api.TeamRun {
	done := cannedTeam()
	done.Transcript = nil
	waiting := api.TeamRun{ID: "t-2", Workflow: "research-report", Task: "compare SQLite WAL and rollback journals",
		Status: api.TeamRunning, State: "research", Phase: "gather", Turns: 3, MaxTurns: 60, Waiting: "a-7",
		Agents: map[string]string{"researcher": "a-7"}, Vars: map[string]string{"task": "compare SQLite WAL and rollback journals"},
		CreatedAt: fixedTime, UpdatedAt: fixedTime}
	return []api.TeamRun{waiting, *done}
}

// findTeam is a canned team run by id.
func findTeam(id string) (*api.TeamRun, error) {
	switch id {
	case "t-1", "t-3":
		t := cannedTeam()
		t.ID = id
		return t, nil
	case "t-2":
		t := cannedTeams()[0]
		return &t, nil
	}
	return nil, api.Errorf(api.ErrNotFound, "no team run %q: see `agentctl team ls`", id)
}

// teamRoutes sets the team routes of the fake daemon's api.
func (f *fakeDaemon) teamRoutes() {
	fk := &f.api
	apitest.Handle(fk, api.TeamsRoute, func(context.Context, string, api.None) ([]api.TeamRun, error) {
		return cannedTeams(), nil
	})
	apitest.Handle(fk, api.StartTeamRoute, func(_ context.Context, _ string, req api.TeamRunRequest) (*api.TeamRun, error) {
		if strings.Contains(req.Workflow, "reflekt") {
			return nil, api.Errorf(api.ErrBadRequest, "%s", req.File+`:24: unknown key "phases.language.reflekt"`+"\n"+req.File+`:31: phase code: assistant "cfo" is not a role`)
		}
		return &api.TeamRun{ID: "t-3", Workflow: "software-company", File: req.File, Task: req.Task, Status: api.TeamRunning,
			State: "design", MaxTurns: 80, Vars: map[string]string{"task": req.Task}, CreatedAt: fixedTime, UpdatedAt: fixedTime}, nil
	})
	apitest.Handle(fk, api.PlanTeamRoute, func(_ context.Context, _ string, req api.TeamPlanRequest) (*api.TeamPlan, error) {
		return &api.TeamPlan{Revised: true, Problems: []string{"no summarizing role: add one (e.g. summarizer) that concludes the last step with the final answer"},
			Workflow: "# Planned by agentd for the task: " + req.Task + "\nname = \"planned\"\nroot = \"work\"\n"}, nil
	})
	apitest.Handle(fk, api.TeamRoute, func(_ context.Context, id string, _ api.None) (*api.TeamRun, error) {
		return findTeam(id)
	})
	apitest.Handle(fk, api.StopTeamRoute, func(_ context.Context, id string, _ api.None) (*api.TeamRun, error) {
		t, err := findTeam(id)
		if err != nil {
			return nil, err
		}
		if t.Status != api.TeamRunning {
			return nil, api.Errorf(api.ErrConflict, "team run %s has ended already (%s)", t.ID, t.Status)
		}
		t.Status, t.Reason, t.Waiting = api.TeamStopped, "stopped by a person", ""
		return t, nil
	})
}

func (f *fakeDaemon) teamEventStream(w http.ResponseWriter, r *http.Request) {
	var t *api.TeamRun
	switch id := r.PathValue("ref"); id {
	case "t-1", "t-3":
		t = cannedTeam()
		t.ID = id
	default:
		w.WriteHeader(http.StatusNotFound)
		json.NewEncoder(w).Encode(api.ErrorResponse{Error: fmt.Sprintf("no team run %q: see `agentctl team ls`", id)})
		return
	}
	since, _ := strconv.Atoi(r.URL.Query().Get("since"))
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	ew := &eventWriter{w: w, r: r}
	for i := range t.Transcript {
		if turn := t.Transcript[i]; turn.Seq > since {
			ew.send(api.Event{Type: api.EventTeam, AgentID: t.ID, Team: &api.TeamEvent{TeamID: t.ID, Status: t.Status, Turn: &turn}})
		}
	}
}
