package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentd/agentd/daemon/client"
	"github.com/agentd/agentd/daemon/client/clienttest"
)

// The fake daemon's team runs: t-1 finished a software-company run with every kind of
// transcript entry; t-2 waits for its programmer agent. A started run is t-3, which has
// finished by the time it is read back.
func cannedTeam() *client.TeamRun {
	turn := func(seq int, kind, state, phase string, cycle int, role, text, mode string) client.TeamTurn {
		return client.TeamTurn{Seq: seq, Kind: kind, State: state, Phase: phase, Cycle: cycle, Role: role, Text: text, Mode: mode, At: fixedTime}
	}
	return &client.TeamRun{ID: "t-1", Workflow: "software-company", File: "software_company.toml", Task: "a CLI that counts words",
		Status: client.TeamFinished, Reason: "state test led to the end: the model chose it: the tests pass",
		State: "test", Phase: "testing", Turns: 7, MaxTurns: 80, CreatedAt: fixedTime, UpdatedAt: fixedTime, EndedAt: fixedTime,
		Vars:   map[string]string{"task": "a CLI that counts words", "language": "Go", "review": "Finished.", "ideas": ""},
		Agents: map[string]string{"programmer": "a-5"},
		Transcript: []client.TeamTurn{
			turn(1, client.TurnMessage, "design", "language", 0, "ceo", "Instruction: pick a language.", ""),
			turn(2, client.TurnMessage, "design", "language", 0, "cto", "<INFO> Go", ""),
			turn(3, client.TurnConclusion, "design", "language", 0, "", "Go", "language"),
			turn(4, client.TurnPhaseEnd, "design", "language", 0, "", "cto concluded with <INFO>", "info"),
			turn(5, client.TurnTransition, "review", "", 0, "", "design → review: the first next state whose condition holds", "rule"),
			turn(6, client.TurnMessage, "review", "comment", 1, "programmer", "Instruction: review main.go.\nIt is short.", ""),
			turn(7, client.TurnMessage, "review", "comment", 1, "reviewer", "Sure, I will look at it.", ""),
			turn(8, client.TurnPhaseEnd, "review", "comment", 1, "", `the assistant reviewer said what it would do without doing it: "Sure, I will look at it."`, "flake_reply"),
			turn(9, client.TurnMessage, "review", "comment", 2, "programmer", "Instruction: review main.go again.", ""),
			turn(10, client.TurnMessage, "review", "comment", 2, "reviewer", "<INFO> Finished.", ""),
			turn(11, client.TurnConclusion, "review", "comment", 2, "", "Finished.", "review"),
			turn(12, client.TurnPhaseEnd, "review", "comment", 2, "", "reviewer concluded with <INFO>", "info"),
			turn(13, client.TurnPhaseEnd, "review", "review_loop", 2, "", `its break condition "review contains 'finished'" holds`, "break"),
			turn(14, client.TurnEnd, "test", "", 0, "", "state test led to the end: the model chose it: the tests pass", "finished"),
		}}
}

func cannedTeams() []client.TeamRun {
	done := cannedTeam()
	done.Transcript = nil
	waiting := client.TeamRun{ID: "t-2", Workflow: "research-report", Task: "compare SQLite WAL and rollback journals",
		Status: client.TeamRunning, State: "research", Phase: "gather", Turns: 3, MaxTurns: 60, Waiting: "a-7",
		Agents: map[string]string{"researcher": "a-7"}, Vars: map[string]string{"task": "compare SQLite WAL and rollback journals"},
		CreatedAt: fixedTime, UpdatedAt: fixedTime}
	return []client.TeamRun{waiting, *done}
}

// findTeam is a canned team run by id.
func findTeam(id string) (*client.TeamRun, error) {
	switch id {
	case "t-1", "t-3":
		t := cannedTeam()
		t.ID = id
		return t, nil
	case "t-2":
		t := cannedTeams()[0]
		return &t, nil
	}
	return nil, client.Errorf(client.ErrNotFound, "no team run %q: see `agentctl team ls`", id)
}

// teamRoutes sets the team routes of the fake daemon's api.
func (f *fakeDaemon) teamRoutes() {
	fk := &f.api
	clienttest.Handle(fk, client.TeamsRoute, func(context.Context, string, client.None) ([]client.TeamRun, error) {
		return cannedTeams(), nil
	})
	clienttest.Handle(fk, client.StartTeamRoute, func(_ context.Context, _ string, req client.TeamRunRequest) (*client.TeamRun, error) {
		if strings.Contains(req.Workflow, "reflekt") {
			return nil, client.Errorf(client.ErrBadRequest, "%s", req.File+`:24: unknown key "phases.language.reflekt"`+"\n"+req.File+`:31: phase code: assistant "cfo" is not a role`)
		}
		return &client.TeamRun{ID: "t-3", Workflow: "software-company", File: req.File, Task: req.Task, Status: client.TeamRunning,
			State: "design", MaxTurns: 80, Vars: map[string]string{"task": req.Task}, CreatedAt: fixedTime, UpdatedAt: fixedTime}, nil
	})
	clienttest.Handle(fk, client.PlanTeamRoute, func(_ context.Context, _ string, req client.TeamPlanRequest) (*client.TeamPlan, error) {
		return &client.TeamPlan{Revised: true, Problems: []string{"no summarizing role: add one (e.g. summarizer) that concludes the last step with the final answer"},
			Workflow: "# Planned by agentd for the task: " + req.Task + "\nname = \"planned\"\nroot = \"work\"\n"}, nil
	})
	clienttest.Handle(fk, client.TeamRoute, func(_ context.Context, id string, _ client.None) (*client.TeamRun, error) {
		return findTeam(id)
	})
	clienttest.Handle(fk, client.StopTeamRoute, func(_ context.Context, id string, _ client.None) (*client.TeamRun, error) {
		t, err := findTeam(id)
		if err != nil {
			return nil, err
		}
		if t.Status != client.TeamRunning {
			return nil, client.Errorf(client.ErrConflict, "team run %s has ended already (%s)", t.ID, t.Status)
		}
		t.Status, t.Reason, t.Waiting = client.TeamStopped, "stopped by a person", ""
		return t, nil
	})
}

func (f *fakeDaemon) teamEventStream(w http.ResponseWriter, r *http.Request) {
	var t *client.TeamRun
	switch id := r.PathValue("ref"); id {
	case "t-1", "t-3":
		t = cannedTeam()
		t.ID = id
	default:
		w.WriteHeader(http.StatusNotFound)
		json.NewEncoder(w).Encode(client.ErrorResponse{Error: fmt.Sprintf("no team run %q: see `agentctl team ls`", id)})
		return
	}
	since, _ := strconv.Atoi(r.URL.Query().Get("since"))
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	ew := &eventWriter{w: w, r: r}
	for i := range t.Transcript {
		if turn := t.Transcript[i]; turn.Seq > since {
			ew.send(client.Event{Type: client.EventTeam, AgentID: t.ID, Team: &client.TeamEvent{TeamID: t.ID, Status: t.Status, Turn: &turn}})
		}
	}
}
