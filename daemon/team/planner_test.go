package team

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/testutil"
)

func goodPlan() Plan {
	return Plan{
		Roles: []PlanRole{
			{Name: "researcher", Description: "finds facts", Commands: []string{"read_file"}},
			{Name: "writer", Description: "writes the text", Prompt: "Short sentences.", Commands: []string{}},
			{Name: "summarizer", Description: "summarizes the results", Commands: []string{}},
		},
		Steps: []PlanStep{
			{Step: "Collect the facts ({{not a variable}}).", Instructor: "writer", Assistant: "researcher", Output: "facts"},
			{Step: "Summarize them.", Instructor: "writer", Assistant: "summarizer", Output: "summary"},
		},
	}
}

func TestObserve(t *testing.T) {
	offered := []string{"read_file", "write_file"}
	cases := []struct {
		name   string
		change func(*Plan)
		want   string
	}{
		{"good", func(*Plan) {}, ""},
		{"no_summarizer", func(p *Plan) {
			p.Roles[2].Name, p.Roles[2].Description, p.Steps[1].Assistant = "editor", "edits", "editor"
		}, "no summarizing role"},
		{"unknown_role", func(p *Plan) { p.Steps[0].Assistant = "analyst" }, `step 1 names role "analyst"`},
		{"unknown_command", func(p *Plan) { p.Roles[0].Commands = []string{"rm_rf"} }, `uses "rm_rf", which is not a command`},
		{"same_roles", func(p *Plan) { p.Steps[0].Instructor = "researcher" }, "instructor and assistant are both"},
		{"duplicate_output", func(p *Plan) { p.Steps[1].Output = "facts" }, "output facts is used by an earlier step"},
		{"bad_name", func(p *Plan) { p.Roles[1].Name = "Writer Bot" }, `name "Writer Bot" must be lowercase`},
		{"summarizer_not_last", func(p *Plan) { p.Steps[0], p.Steps[1] = p.Steps[1], p.Steps[0] }, "the last step must involve the summarizing role"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := goodPlan()
			c.change(&p)
			probs := strings.Join(Observe(p, offered), "\n")
			if c.want == "" && probs != "" || !strings.Contains(probs, c.want) {
				t.Errorf("problems:\n%s\nwant %q", probs, c.want)
			}
		})
	}
}

// The planner's first plan lacks a summarizer; the observer says so, the model revises
// once, and the workflow it becomes parses and runs.
func TestPlanTeamRevisesOnceAndRuns(t *testing.T) {
	e := newEnv(t)
	first := goodPlan()
	first.Roles = first.Roles[:2]
	first.Steps = first.Steps[:1]
	b1, _ := json.Marshal(first)
	b2, _ := json.Marshal(goodPlan())
	e.say("planner", string(b1), string(b2))
	p, err := e.eng.Plan(context.Background(), "a note on SQLite's WAL")
	if err != nil {
		t.Fatal(err)
	}
	if !p.Revised || len(p.Problems) == 0 || !strings.Contains(p.Problems[0], "no summarizing role") {
		t.Errorf("planned: revised %v, problems %v", p.Revised, p.Problems)
	}
	reqs := e.fake.Requests()
	last := reqs[len(reqs)-1].Messages
	if !strings.Contains(last[len(last)-1].Content, "no summarizing role") {
		t.Errorf("the revision request does not feed the problems back: %q", last[len(last)-1].Content)
	}
	// Commands in the schema are what the daemon offers, less finish and ask_user.
	if f := string(reqs[0].Format); !strings.Contains(f, `"enum":["read_file","write_file",`) || strings.Contains(f, `"finish"`) || strings.Contains(f, `"ask_user"`) {
		t.Errorf("plan schema's commands: %s", f)
	}
	w, err := Parse("planned.toml", []byte(p.Workflow))
	if err != nil {
		t.Fatalf("%v\n%s", err, p.Workflow)
	}
	if len(w.Phases) != 2 || w.Phases["step2"].Assistant != "summarizer" || w.Phases["step2"].Store != "summary" || len(w.Roles["researcher"].Commands) != 1 {
		t.Errorf("workflow:\n%s", p.Workflow)
	}
	e.say("writer", "Instruction: collect the facts.", "Instruction: summarize.")
	e.say("researcher", "<INFO> WAL appends to a log.")
	// The researcher has a command, so it answers as an agent: finish is its reply.
	e.say("agent", proposal("finish", map[string]string{"reason": "<INFO> WAL appends to a log."}))
	e.say("summarizer", "<INFO> WAL mode logs writes first.")
	r := e.ended(e.run(p.Workflow, "a note on SQLite's WAL").ID)
	if r.Status != api.TeamFinished || r.Vars["summary"] != "WAL mode logs writes first." || r.Vars["facts"] != "WAL appends to a log." {
		t.Errorf("run: %s", dump(r))
	}
}

func TestPlanTeamGivesUpAfterOneRevision(t *testing.T) {
	e := newEnv(t)
	bad := goodPlan()
	bad.Steps[0].Assistant = "ghost"
	b, _ := json.Marshal(bad)
	e.say("planner", string(b), string(b))
	_, err := e.eng.Plan(context.Background(), "x")
	if !errors.Is(err, api.ErrConflict) || !strings.Contains(err.Error(), `step 1 names role "ghost"`) {
		t.Errorf("err = %v", err)
	}
}

func TestPlanWorkflowText(t *testing.T) {
	got := planWorkflow("a note on \"WAL\"\nand journals", goodPlan())
	testutil.Golden(t, "testdata/planned.toml", []byte(got))
}
