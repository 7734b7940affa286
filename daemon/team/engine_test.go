package team

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	ollama "github.com/ollama/ollama/api"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/ollamatest"
)

// The two phases of pair.toml: <INFO> ends each; language being set takes the rule
// transition to code; code's only next is the end.
func TestRuleTransitionAndInfo(t *testing.T) {
	e := newEnv(t)
	e.say("ceo", "Instruction: pick a language for a word counter.", "Instruction: write main.", "<INFO> main.go counts words")
	e.say("cto", "<INFO> Go", "Solution: package main // counts words")
	r := e.ended(e.run("pair.toml", "a word counter").ID)
	want := `message choose_language [ceo]
message choose_language [cto]
conclusion choose_language (language)
phase_end choose_language (info)
transition  (rule)
message write_code [ceo]
message write_code [cto]
message write_code [ceo]
conclusion write_code (code)
phase_end write_code (info)
end  (finished)
`
	if got := outline(r); got != want {
		t.Errorf("transcript:\n%s\nwant:\n%s", got, want)
	}
	if r.Status != api.TeamFinished || r.Vars["language"] != "Go" || r.Vars["code"] != "main.go counts words" || r.Vars["task"] != "a word counter" {
		t.Errorf("run: %s", dump(r))
	}
	if !strings.Contains(r.Reason, "state code led to the end") || r.Turns != 5 {
		t.Errorf("reason %q, turns %d", r.Reason, r.Turns)
	}
	if left := e.left(); len(left) > 0 {
		t.Errorf("replies left: %v", left)
	}
	// The second phase's prompt was rendered with the variable the first one stored.
	found := false
	for _, req := range e.fake.Requests() {
		if len(req.Messages) > 0 && strings.Contains(req.Messages[0].Content, "Write the code in Go.") {
			found = true
		}
	}
	if !found {
		t.Error("no prompt rendered {{language}} as Go")
	}
}

// A rule whose condition does not hold is skipped: no language → straight to the end.
func TestRuleSkipsUnheldCondition(t *testing.T) {
	e := newEnv(t)
	e.say("ceo", "Instruction: pick a language.", "Instruction: any language?")
	e.say("cto", "Solution: it depends on the platforms.", "Solution: we should ask the customer first.")
	e.say("reflect", `{"conclusion":""}`)
	r := e.ended(e.run("pair.toml", "x").ID)
	if r.Status != api.TeamFinished || !strings.Contains(r.Reason, "state design led to the end") {
		t.Errorf("run: %s", dump(r))
	}
	if strings.Contains(outline(r), "write_code") {
		t.Errorf("code ran though language is empty:\n%s", outline(r))
	}
}

const modelChoice = `
name = "routed"
root = "triage"
[roles.lead]
description = "the lead"
[roles.dev]
description = "a developer"
[phases.talk]
instructor = "lead"
assistant = "dev"
prompt = "Is it a bug or a feature?"
store = "kind"
max_turns = 2
[phases.fix]
instructor = "lead"
assistant = "dev"
prompt = "Fix the bug: {{kind}}."
max_turns = 2
[states.triage]
prompt = "Triage the request."
phases = ["talk"]
choose = "model"
next = ["bugfix", "feature", { state = "end", when = "kind == 'nothing'" }]
[states.bugfix]
prompt = "Fix a bug."
phases = ["fix"]
[states.feature]
prompt = "Build a feature."
phases = ["fix"]
`

// choose = "model": the model picks among the next states whose condition holds, with
// the choice constrained to their names by the schema.
func TestModelChoosesNextState(t *testing.T) {
	e := newEnv(t)
	e.say("lead", "Instruction: classify it.", "Instruction: fix it.")
	e.say("dev", "<INFO> bug", "<INFO> fixed")
	e.say("choose", `{"next":"bugfix","reason":"it is a bug"}`)
	r := e.ended(e.run(modelChoice, "the login fails").ID)
	if r.Status != api.TeamFinished {
		t.Fatalf("run: %s", dump(r))
	}
	var tr *api.TeamTurn
	for i := range r.Transcript {
		if r.Transcript[i].Kind == api.TurnTransition {
			tr = &r.Transcript[i]
		}
	}
	if tr == nil || tr.State != "bugfix" || tr.Mode != "model" || !strings.Contains(tr.Text, "it is a bug") {
		t.Fatalf("transition: %+v", tr)
	}
	if len(e.choices) != 1 {
		t.Fatalf("%d choice requests", len(e.choices))
	}
	var schema struct {
		Properties struct {
			Next struct {
				Enum []string `json:"enum"`
			} `json:"next"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(e.choices[0].Format, &schema); err != nil {
		t.Fatal(err)
	}
	// "end" is left out: its condition (kind == 'nothing') does not hold.
	if got := strings.Join(schema.Properties.Next.Enum, ","); got != "bugfix,feature" {
		t.Errorf("choice enum = %s, want bugfix,feature", got)
	}
}

// A phase without <INFO> ends at its turn limit; with reflect the model writes its
// conclusion from the transcript; the run's own max_turns ends the run.
func TestTurnLimitsAndReflection(t *testing.T) {
	e := newEnv(t)
	e.say("ceo", "Instruction: list options.", "Instruction: compare Go and Rust.")
	e.say("cto", "Solution: Go, Rust, Python.", "Solution: Go builds faster; Rust is stricter.")
	e.say("reflect", `{"conclusion":"Go"}`)
	e.say("ceo", "Instruction: write main.")
	src, _ := readTestdata("pair.toml")
	src = strings.Replace(src, "max_turns = 40", "max_turns = 5", 1)
	r := e.ended(e.run(src, "x").ID)
	want := `message choose_language [ceo]
message choose_language [cto]
message choose_language [ceo]
message choose_language [cto]
conclusion choose_language (language)
phase_end choose_language (turn_limit)
transition  (rule)
message write_code [ceo]
end write_code (turn_limit)
`
	if got := outline(r); got != want {
		t.Errorf("transcript:\n%s\nwant:\n%s", got, want)
	}
	if r.Status != api.TeamTurnLimit || r.Vars["language"] != "Go" || r.Turns != 5 || r.Reason != "the run used its 5 turns" {
		t.Errorf("run: %s", dump(r))
	}
}

const composed = `
name = "review-loop"
root = "review"
[vars]
comments = ""
[roles.reviewer]
description = "a code reviewer"
[roles.programmer]
description = "a programmer"
[phases.comment]
instructor = "programmer"
assistant = "reviewer"
prompt = "Review the code."
store = "comments"
max_turns = 2
[phases.modify]
instructor = "reviewer"
assistant = "programmer"
prompt = "Fix: {{comments}}"
max_turns = 2
[phases.review_loop]
phases = ["comment", "modify"]
cycles = 3
until = "comments contains 'finished'"
[states.review]
phases = ["review_loop"]
`

// A composed phase repeats its phases and stops once its break condition holds.
func TestComposedBreakCondition(t *testing.T) {
	e := newEnv(t)
	e.say("programmer", "Instruction: review main.go.", "Solution: fixed the loop.", "Instruction: review it again.")
	e.say("reviewer", "<INFO> the loop is off by one", "Instruction: fix the loop.", "<INFO> Finished.")
	r := e.ended(e.run(composed, "x").ID)
	want := `message comment#1 [programmer]
message comment#1 [reviewer]
conclusion comment#1 (comments)
phase_end comment#1 (info)
message modify#1 [reviewer]
message modify#1 [programmer]
phase_end modify#1 (turn_limit)
message comment#2 [programmer]
message comment#2 [reviewer]
conclusion comment#2 (comments)
phase_end comment#2 (info)
phase_end review_loop#2 (break)
end  (finished)
`
	if got := outline(r); got != want {
		t.Errorf("transcript:\n%s\nwant:\n%s", got, want)
	}
	if r.Vars["comments"] != "Finished." || !strings.Contains(r.Reason, "no next state") {
		t.Errorf("run: %s", dump(r))
	}
}

// Without the break condition holding, the composed phase runs its cycles and stops.
func TestComposedCycleLimit(t *testing.T) {
	e := newEnv(t)
	src := strings.Replace(composed, "cycles = 3", "cycles = 2", 1)
	for i := range 2 {
		_ = i
		e.say("programmer", "Instruction: review main.go number "+string(rune('a'+i)), "Solution: changed line "+string(rune('1'+i)))
		e.say("reviewer", "<INFO> rename x to count "+string(rune('a'+i)), "Instruction: rename variable "+string(rune('x'+i)))
	}
	r := e.ended(e.run(src, "x").ID)
	if !strings.Contains(outline(r), "phase_end review_loop#2 (cycle_limit)") || strings.Contains(outline(r), "#3") {
		t.Errorf("transcript:\n%s", outline(r))
	}
	if len(e.left()) > 0 {
		t.Errorf("replies left: %v", e.left())
	}
}

// Each CAMEL failure mode ends the phase with its mode, and the run goes on.
func TestFailureModesEndThePhase(t *testing.T) {
	cases := []struct {
		name     string
		ceo, cto []string
		mode     string
	}{
		{"role_flip", []string{"Instruction: pick a language."}, []string{"Instruction: first tell me the platforms."}, ModeRoleFlip},
		{"repeated_instruction", []string{"Instruction: pick a language for the tool."}, []string{"Pick a language for the tool."}, ModeRepeat},
		{"flake_reply", []string{"Instruction: pick a language."}, []string{"Sure, I will pick one."}, ModeFlake},
		{"thanks_loop", []string{"Instruction: pick a language.", "Thanks a lot, goodbye!"}, []string{"Solution: Go. Thank you!"}, ModeLoop},
		{"near_duplicate", []string{"Instruction: pick a language for the tool.", "Instruction: pick a language for the tool."}, []string{"Solution: Go fits."}, ModeLoop},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.say("ceo", c.ceo...)
			e.say("cto", c.cto...)
			e.say("reflect", `{"conclusion":""}`)
			r := e.ended(e.run("pair.toml", "x").ID)
			var end *api.TeamTurn
			for i := range r.Transcript {
				if r.Transcript[i].Kind == api.TurnPhaseEnd {
					end = &r.Transcript[i]
					break
				}
			}
			if end == nil || end.Mode != c.mode || end.Text == "" {
				t.Fatalf("phase end %+v, want mode %s\n%s", end, c.mode, outline(r))
			}
			if r.Status != api.TeamFinished {
				t.Errorf("run: %s", dump(r))
			}
			if len(e.left()) > 0 {
				t.Errorf("replies left (the phase went on): %v", e.left())
			}
		})
	}
}

func readTestdata(name string) (string, error) {
	b, err := readFile("testdata/" + name)
	return string(b), err
}

// Bad requests are refused with what was wrong, and nothing is stored.
func TestStartTeamRefusesBadInput(t *testing.T) {
	e := newEnv(t)
	good, _ := readTestdata("pair.toml")
	cases := []struct {
		name string
		req  api.TeamRunRequest
		want string
	}{
		{"empty_task", api.TeamRunRequest{Workflow: good, Task: "  "}, "empty task"},
		{"empty_workflow", api.TeamRunRequest{Task: "x"}, "empty workflow"},
		{"bad_file", api.TeamRunRequest{Workflow: strings.Replace(good, `root = "design"`, `root = "nowhere"`, 1), File: "pair.toml", Task: "x"},
			`pair.toml:4: root "nowhere" is not a state`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := e.eng.StartTeam(t.Context(), c.req)
			if !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want a bad request with %q", err, c.want)
			}
		})
	}
	if _, err := e.eng.Team(t.Context(), "t-nope"); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("Team(t-nope) = %v", err)
	}
	if runs, _ := e.eng.Teams(t.Context()); len(runs) != 0 {
		t.Errorf("runs stored: %v", runs)
	}
}

// A state's max_turns ends its running phase and skips its other phases.
func TestStateTurnLimit(t *testing.T) {
	e := newEnv(t)
	src, _ := readTestdata("pair.toml")
	src = strings.Replace(src, `prompt = "We design the product."`, "prompt = \"We design the product.\"\nmax_turns = 1", 1)
	e.say("ceo", "Instruction: pick a language.")
	r := e.ended(e.run(src, "x").ID)
	want := `message choose_language [ceo]
phase_end choose_language (state_turn_limit)
end  (finished)
`
	if got := outline(r); got != want {
		t.Errorf("transcript:\n%s\nwant:\n%s", got, want)
	}
}

// A model server that stays down fails the run after the configured attempts, with the
// reason; nothing loops forever.
func TestModelDownFailsTheRun(t *testing.T) {
	e := newEnv(t)
	e.fake.SetDown(true)
	r := e.ended(e.run("pair.toml", "x").ID)
	if r.Status != api.TeamFailed || !strings.Contains(r.Reason, "the model failed 3 times in a row") {
		t.Errorf("run: %s", dump(r))
	}
}

// A config reload that changes the model reaches the next turn: the engine reads the
// supervisor's live settings at each call.
func TestReloadedModelUsedNextTurn(t *testing.T) {
	e := newEnv(t)
	e.fake.SetModels(ollamatest.TinyModelName, "other")
	reloaded := false
	e.fake.OnChat(func(req *ollama.ChatRequest) (string, error) {
		out, err := e.reply(req)
		if !reloaded {
			reloaded = true
			set := e.sup.Settings()
			set.Model = "other"
			if err := e.sup.Reload(set); err != nil {
				t.Error(err)
			}
		}
		return out, err
	})
	e.say("ceo", "Instruction: pick a language.", "<INFO> main.go")
	e.say("cto", "<INFO> Go")
	r := e.ended(e.run("pair.toml", "a word counter").ID)
	if r.Status != api.TeamFinished || r.Vars["code"] != "main.go" {
		t.Fatalf("run: %s", dump(r))
	}
	var models []string
	for _, req := range e.fake.Requests() {
		models = append(models, req.Model)
	}
	want := ollamatest.TinyModelName + ",other,other"
	if got := strings.Join(models, ","); got != want {
		t.Errorf("models = %s, want %s", got, want)
	}
}

// A reflection that fails (the model errs, or its replies are not valid) ends the phase
// with a reason saying so, not with a silent lack of conclusion.
func TestReflectionFailureRecorded(t *testing.T) {
	for name, reflect := range map[string][]string{
		"model_error":   nil, // nothing queued: the fake answers with an error
		"invalid_reply": {"not json", "still not json"},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			e.say("ceo", "Instruction: pick a language.", "Instruction: any language?")
			e.say("cto", "Solution: it depends on the platforms.", "Solution: we should ask the customer first.")
			e.say("reflect", reflect...)
			r := e.ended(e.run("pair.toml", "x").ID)
			var end *api.TeamTurn
			for i, turn := range r.Transcript {
				if turn.Kind == api.TurnPhaseEnd && turn.Phase == "choose_language" {
					end = &r.Transcript[i]
				}
			}
			if end == nil || end.Mode != "turn_limit" || !strings.Contains(end.Text, "reflection failed, so no conclusion") {
				t.Fatalf("phase end: %+v\n%s", end, outline(r))
			}
			if r.Vars["language"] != "" {
				t.Errorf("language = %q", r.Vars["language"])
			}
		})
	}
}

func TestDetect(t *testing.T) {
	ins := func(s string) Msg { return Msg{Role: "ceo", Text: s} }
	asst := func(s string) Msg { return Msg{Role: "cto", Assistant: true, Text: s} }
	cases := []struct {
		name string
		tr   []Msg
		want string // mode, "" for none
	}{
		{"healthy", []Msg{ins("Instruction: pick a language for a CLI tool."), asst("Solution: Go, because it builds one static binary.")}, ""},
		{"role_flip", []Msg{ins("Instruction: pick a language."), asst("Instruction: tell me which platforms matter first.")}, ModeRoleFlip},
		{"role_flip_task", []Msg{ins("Pick a language."), asst("Good question.\nYour task is to list the platforms.")}, ModeRoleFlip},
		{"repeated_instruction", []Msg{ins("Instruction: pick a language for the command line tool."), asst("Pick a language for the command line tool.")}, ModeRepeat},
		{"flake", []Msg{ins("Instruction: write the parser."), asst("Sure, I will write the parser now.")}, ModeFlake},
		{"flake_lets", []Msg{ins("Instruction: write the parser."), asst("Let me think about the parser.")}, ModeFlake},
		{"not_flake_with_code", []Msg{ins("Instruction: write the parser."), asst("I will write it:\n```go\nfunc parse() {}\n```")}, ""},
		{"thanks_loop", []Msg{ins("Instruction: x."), asst("Thank you, great working with you!"), ins("Thanks, goodbye!")}, ModeLoop},
		{"one_thanks_is_fine", []Msg{ins("Instruction: write tests."), asst("Thanks! Solution: three table tests cover it.")}, ""},
		{"near_duplicate", []Msg{
			ins("Instruction: add error handling to the parser."),
			asst("Solution: the parser returns an error naming the line."),
			ins("Instruction: add error handling to the parser."),
		}, ModeLoop},
		{"instructor_flake_not_checked", []Msg{ins("I will think about it.")}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := Detect(c.tr)
			got := ""
			if f != nil {
				got = f.Mode
				if f.Reason == "" {
					t.Error("failure without a reason")
				}
			}
			if got != c.want {
				t.Errorf("Detect = %+v, want mode %q", f, c.want)
			}
		})
	}
}

// Info takes the conclusion from the first <INFO> line: the rest of that line and the
// lines after it, trimmed, whichever of the two there is.
func TestInfoTakesTheLineAndWhatFollows(t *testing.T) {
	tests := []struct {
		name, text, want string
		ok               bool
	}{
		{"rest_of_line", "Solution: done.\n<INFO> Go", "Go", true},
		{"lines_after", "  <INFO>\n  first\nsecond  \n", "first\nsecond", true},
		{"both", "<INFO> summary\nmore detail", "summary\nmore detail", true},
		{"empty", "<INFO>   \n  ", "", true},
		{"first_of_two", "<INFO> a\n<INFO> b", "a\n<INFO> b", true},
		{"none", "Instruction: no info here", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got, ok := Info(tc.text); got != tc.want || ok != tc.ok {
				t.Errorf("Info(%q) = %q, %v; want %q, %v", tc.text, got, ok, tc.want, tc.ok)
			}
		})
	}
}
