package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/display"
)

// Every string a model, a command or a workspace made goes through text or line before
// a template sees it: control, bidi and zero-width characters become visible marks, and
// html/template then escapes what HTML would read.
func text(s string) string { return display.Escape(s, display.Text) }
func line(s string) string { return display.Escape(s, display.Line) }

// agentRow is one agent on the agents page.
type agentRow struct {
	ID    string
	Name  string
	State string
	// Reason says why it is in that state (failed, paused).
	Reason string
	// Waiting is what waits for a person: the proposal's command, or the question.
	Waiting string
	// Budget is what the agent used, against its budget where it has one.
	Budget string
	// Last is the last activity, formatted here: a template func call per row costs a
	// reflect call, which 1,000 rows feel.
	Last string
}

func rowOf(a *api.Agent) agentRow {
	r := agentRow{ID: a.ID, Name: line(a.Name), State: string(a.State), Reason: line(a.ShownReason()), Last: ago(a.UpdatedAt), Budget: budgetOf(a)}
	switch {
	case a.Question != nil:
		r.Waiting = "answer: " + line(display.Cut(a.Question.Text, 80, display.Ellipsis))
	case a.Pending != nil:
		r.Waiting = "decide: " + line(a.Pending.Command)
	}
	return r
}

// budgetOf is "steps 3/50 · tokens 1200 · busy 2s": what the agent used over its runs,
// out of its budget where one bounds it.
func budgetOf(a *api.Agent) string {
	var b api.Budget
	if a.Budget != nil {
		b = *a.Budget
	}
	of := func(used string, limit string) string {
		if limit == "" || limit == "0" {
			return used
		}
		return used + "/" + limit
	}
	busy := (time.Duration(a.BusyMS) * time.Millisecond).Round(time.Second)
	return fmt.Sprintf("steps %s · tokens %s · busy %s",
		of(fmt.Sprint(a.StepsTotal), fmt.Sprint(b.MaxSteps)),
		of(fmt.Sprint(a.PromptTokens+a.EvalTokens), fmt.Sprint(b.MaxTokens)),
		of(busy.String(), b.MaxTime))
}

// field is one labelled piece of model text.
type field struct{ Name, Text string }

// diffLine is one line of a preview's diff, with the class that colours it.
type diffLine struct{ Class, Text string }

// proposalView is a proposal as the person judges it: every thought, the command and
// its args, the preview of what it would do, and its result once it ran.
type proposalView struct {
	AgentID   string
	ID        string
	Hash      string
	Step      int
	Command   string
	Status    string
	Thoughts  []field
	Args      string
	Preview   []string
	Diff      []diffLine
	Result    string
	Decidable bool
}

func proposalOf(p *api.Proposal) *proposalView {
	if p == nil {
		return nil
	}
	t := p.Thoughts
	v := &proposalView{AgentID: p.AgentID, ID: p.ID, Hash: p.Ref(), Step: p.Step, Command: line(p.Command), Status: string(p.Status),
		Args: text(indent(p.Args)), Result: text(p.Result), Decidable: p.Status.Decidable()}
	for _, f := range []field{{"Observations", t.Observations}, {"Thought", t.Text}, {"Reasoning", t.Reasoning},
		{"Self-criticism", t.SelfCriticism}, {"Plan", t.Plan}, {"Says", t.Speak}} {
		if f.Text != "" {
			v.Thoughts = append(v.Thoughts, field{f.Name, text(f.Text)})
		}
	}
	lines, diff := p.Preview.Render() // already escaped for display
	v.Preview = lines
	if diff != "" {
		for _, l := range strings.Split(diff, "\n") {
			v.Diff = append(v.Diff, diffLine{Class: diffClass(l), Text: l})
		}
	}
	return v
}

func diffClass(l string) string {
	switch {
	case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
		return "file"
	case strings.HasPrefix(l, "+"):
		return "add"
	case strings.HasPrefix(l, "-"):
		return "del"
	case strings.HasPrefix(l, "@@"):
		return "hunk"
	}
	return ""
}

// indent pretty-prints JSON args; args that are not JSON are shown as they are.
func indent(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return b.String()
}

// episodeView is one finished step in an agent's history.
type episodeView struct {
	Step      int
	Command   string
	Args      string
	Outcome   string
	Reasoning string
	Result    string
	Feedback  string
	By        string
	At        time.Time
}

func episodeOf(e *api.Episode) *episodeView {
	v := &episodeView{Step: e.Step, Command: line(e.Command), Args: text(indent(e.Args)), Outcome: e.Outcome,
		Reasoning: text(e.Reasoning), Result: text(e.Result), Feedback: text(e.Feedback), At: e.At}
	if d := e.Decision; d != nil {
		v.By = line(d.By + " (" + d.Source + ")")
		if p := api.ProfileText(d.Profile); p != "" {
			v.By += ", " + p
		}
	}
	return v
}

// questionView is an ask_user question waiting for an answer.
type questionView struct {
	AgentID    string
	ProposalID string
	Text       string
}

// waitingView is what waits for a person on an agent's page, with the controls to
// decide it; the stream replaces it when the agent moves on.
type waitingView struct {
	AgentID  string
	CSRF     string
	Pending  *proposalView
	Question *questionView
	// Key identifies what is shown; the page keeps what a person is typing into a form
	// until the key changes.
	Key string
}

func waitingOf(a *api.Agent, csrf string) waitingView {
	v := waitingView{AgentID: a.ID, CSRF: csrf, Key: "none"}
	if a.Question != nil {
		v.Question = &questionView{AgentID: a.ID, ProposalID: a.Question.ProposalID, Text: text(a.Question.Text)}
		v.Key = "q-" + a.Question.ProposalID
	} else if a.Pending != nil && a.Pending.Status.Decidable() {
		v.Pending = proposalOf(a.Pending)
		v.Key = "p-" + a.Pending.ID + "-" + string(a.Pending.Status)
	}
	return v
}

// eventView is one entry of an agent's live stream.
type eventView struct {
	Seq      int64
	Type     string
	Time     time.Time
	Proposal *proposalView
	Episode  *episodeView
	Decision string
	Question string
	Message  string
	State    string
}

func eventOf(ev api.Event) eventView {
	v := eventView{Seq: ev.Seq, Type: string(ev.Type), Time: ev.Time, Message: text(ev.Message)}
	if ev.Proposal != nil {
		v.Proposal = proposalOf(ev.Proposal)
	}
	if ev.Episode != nil {
		v.Episode = episodeOf(ev.Episode)
	}
	if d := ev.Decision; d != nil {
		v.Decision = line(fmt.Sprintf("%s by %s (%s)", d.Kind, d.By, d.Source))
		if d.Count > 1 {
			v.Decision += fmt.Sprintf(" ×%d", d.Count)
		}
		if p := api.ProfileText(d.Profile); p != "" {
			v.Decision += ", " + p
		}
		if d.Feedback != "" {
			v.Decision += ": " + text(d.Feedback)
		}
	}
	if ev.Question != nil {
		v.Question = text(ev.Question.Text)
	}
	if ev.Agent != nil {
		v.State = string(ev.Agent.State)
		if why := ev.Agent.ShownReason(); why != "" {
			v.State += ": " + line(why)
		}
	}
	return v
}
