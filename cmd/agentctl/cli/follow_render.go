package cli

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agentd/agentd/api"
)

// What follow prints at each prompt.
const (
	decisionPrompt = "Approve? [y / y -N / y! / n / n! / feedback / ?]: "
	answerPrompt   = "Answer: "
	// decisionLegend comes before the first decision prompt: the short answers that
	// store a rule are the ones a newcomer cannot guess.
	decisionLegend = "(y runs it once; y -N this and the next N-1; y! runs it and from now on this exact command unasked;\n" +
		" n stops the run; n! also refuses this exact command from now on; other text is feedback; ? shows more)\n"
)

// What the spinner says the agent waits on (the daemon reports no tokens until the
// reply is whole, so the time waited is what it can show).
const (
	spinThinking = "thinking: waiting for the model"
	spinNoModel  = "waiting for the model to answer again (Ollama down or busy)"
)

// argLinesInFollow bounds how much of a long argument (a file's content) follow shows.
const argLinesInFollow = 20

// handle renders one event and updates what stdin decides on. It returns *endFollow when
// following should stop.
func (f *follower) handle(ev api.Event) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ev.Seq > f.lastSeq {
		f.lastSeq = ev.Seq
	}
	if f.a.json {
		f.beforeWrite()
		b, _ := json.Marshal(ev)
		f.a.writeJSON(b)
	}
	defer f.settle()
	if ev.Type != api.EventState {
		f.lastState = "" // something happened: the next state line is news again
	}
	switch ev.Type {
	case api.EventState:
		f.exhausted = ev.Exhausted
		f.sync(ev.Agent, ev.Time)
		if f.state == api.StateFailed && !f.stay {
			return &endFollow{fmt.Errorf("agent %s failed: %s", f.name, f.reason)}
		}
	case api.EventProposal:
		if p := ev.Proposal; p != nil && !f.shown[shownKey(p)] {
			f.showProposal(p, ev.Time)
		}
		f.sync(beforeDecision(ev.Agent), ev.Time)
	case api.EventDecision:
		if d := ev.Decision; d != nil {
			if f.pending != nil && f.pending.ID == d.ProposalID {
				f.withdrawPrompt(decisionPrompt, "decided elsewhere")
			}
			f.printf("%sdecision: %s\n", stamp(ev.Time), decisionString(d))
			if note := f.grantNote(d); note != "" {
				f.printf("  %s\n", note)
			}
			f.close(d.ProposalID)
		}
	case api.EventResult:
		if ep := ev.Episode; ep != nil {
			if f.question != nil && f.question.ProposalID == ep.ProposalID {
				f.withdrawPrompt(answerPrompt, "answered elsewhere")
			}
			f.printf("%sresult: %s %s\n", stamp(ev.Time), ep.Outcome, formatCall(ep.Command, ep.Args))
			writeResult(f.out(), ep, "", "  ")
			f.close(ep.ProposalID)
		}
	case api.EventQuestion:
		if q := ev.Question; q != nil {
			f.ask(q, ev.Time)
		}
	case api.EventFinish:
		f.printf("%sfinished: %s\n", stamp(ev.Time), line(cmp.Or(ev.Message, "the run ended")))
		f.pending, f.question = nil, nil
		if ev.Agent != nil {
			f.state, f.reason = ev.Agent.State, ev.Agent.StateReason // "finished" says it
		}
		if !f.stay {
			return &endFollow{}
		}
	case api.EventError:
		f.printf("%serror: %s\n", stamp(ev.Time), line(ev.Message))
	case api.EventRemoved:
		f.printf("%sremoved\n", stamp(ev.Time))
		return &endFollow{fmt.Errorf("agent %s was removed", f.name)}
	}
	return nil
}

// beforeDecision is the agent of a proposal event as it stood before the decision: a
// proposal a rule approves arrives with the agent already executing, and its decision
// event comes next, so "executing" waits for the state event after the decision line.
func beforeDecision(ag *api.Agent) *api.Agent {
	if ag == nil || ag.State != api.StateExecuting || ag.Pending != nil {
		return ag
	}
	cp := *ag
	cp.State, cp.StateReason = api.StateThinking, ""
	return &cp
}

// grantNote confirms what a person's decision stored beyond this proposal, and how to
// undo it: y! (an exact grant), n! (a deny pattern) and y -N (a count grant).
func (f *follower) grantNote(d *api.Decision) string {
	ref, call := cmp.Or(f.name, f.id), cmp.Or(f.calls[d.ProposalID], "this command")
	switch {
	case d.Source == "grant" || d.Source == "policy":
		return "" // an automatic approval names its grant or rule on the decision line
	case d.Kind == api.DecisionApprove && d.Scope == api.ScopeAgent && d.Grant != "":
		return fmt.Sprintf("(y! stored grant %s: from now on %s runs without asking, with exactly these args; revoke it with: agentctl policy %s revoke %s)",
			line(d.Grant), call, ref, line(d.Grant))
	case d.Kind == api.DecisionApprove && d.Count > 1 && d.Grant != "":
		count, left := d.GrantCount, d.GrantLeft
		if count == 0 { // a daemon that sends no count: y -N grants the next N-1
			count, left = d.Count-1, d.Count-1
		}
		next := fmt.Sprintf("the next %d proposals of this run go", count)
		if count == 1 {
			next = "the next proposal of this run goes"
		}
		return fmt.Sprintf("(%s ahead without asking: %s; stop early with: agentctl policy %s revoke %s)",
			next, api.LeftOf(left, count), ref, line(d.Grant))
	case d.Kind == api.DecisionDeny && d.Scope == api.ScopeDeny && d.Pattern != "":
		return fmt.Sprintf("(n! stored the deny pattern %s: agent %s is refused it from now on; remove it with: agentctl policy %s rm deny '%s')",
			line(d.Pattern), ref, ref, line(d.Pattern))
	}
	return ""
}

// sync takes the agent's state, pending proposal and question from a snapshot, rendering
// whatever was not shown yet (a snapshot may carry a proposal whose event was missed).
func (f *follower) sync(ag *api.Agent, t time.Time) {
	if ag == nil {
		return
	}
	if ag.Name != "" {
		f.name = ag.Name
	}
	f.pending = nil
	if p := ag.Pending; p != nil && p.Status.Decidable() {
		if !f.shown[shownKey(p)] {
			f.showProposal(p, p.CreatedAt)
		}
		if !f.closed[p.ID] {
			f.pending = p
		}
	}
	if f.question != nil && (ag.Question == nil || questionKey(ag.Question) != questionKey(f.question)) {
		f.withdrawPrompt(answerPrompt, "answered elsewhere")
	}
	f.question = nil
	if q := ag.Question; q != nil {
		f.ask(q, q.AskedAt)
	}
	if !ag.StateSince.IsZero() {
		f.stateSince = ag.StateSince
	}
	if ag.State == f.state && ag.ShownReason() == f.reason {
		return
	}
	retry := f.state == api.StateWaitingForModel && ag.State == api.StateThinking
	f.state, f.reason = ag.State, ag.ShownReason()
	line := stateString(ag)
	switch {
	case ag.State == api.StateAwaitingDecision && ag.StateReason == "" && (f.pending != nil || f.question != nil):
		return // the proposal or question just shown says so
	case retry, line == f.lastState:
		return // the agent retrying the model: one line for the whole outage
	}
	f.lastState = line
	f.printf("%sstate: %s\n", stamp(t), line)
	if ag.State == api.StatePaused {
		if ex := f.exhausted; ex != nil && ex.Scope == api.BudgetScopeAgent {
			// resume refuses an agent over its budget: raising the budget resumes it.
			f.notef("(over its %s budget: raise it with agentctl budget %s %s, and it goes on)", strings.TrimSuffix(ex.Kind, "s"), refOf(ag), budgetFlag(ex.Kind))
		} else {
			f.notef("(resume it with: agentctl resume %s)", refOf(ag))
		}
	}
}

// budgetFlag names a budget kind (steps, tokens, time) as the agentctl budget flag that
// raises it.
func budgetFlag(kind string) string {
	switch kind {
	case "steps":
		return "--max-steps N"
	case "tokens":
		return "--max-tokens N"
	case "time":
		return "--max-time D"
	}
	return "--max-steps N | --max-tokens N | --max-time D"
}

func (f *follower) showProposal(p *api.Proposal, t time.Time) {
	f.shown[shownKey(p)] = true
	f.calls[p.ID] = formatCall(p.Command, p.Args)
	f.printf("%sproposal (step %d):\n", stamp(t), p.Step)
	writeProposal(f.out(), p, argLinesInFollow, diffLinesInFollow)
	switch {
	case p.Status.Decidable():
		delete(f.closed, p.ID) // asked again (its preview run again): stdin decides on it as shown now
		f.pending = p
	case p.Status == api.ProposalApproved:
		f.printf("  (runs without asking: its decision line names the rule or grant)\n")
	}
}

// ask shows a question once and makes it the one stdin answers, unless it was answered.
func (f *follower) ask(q *api.Question, t time.Time) {
	key := questionKey(q)
	if f.closed[key] {
		return
	}
	if !f.asked[key] {
		f.asked[key] = true
		f.printf("%s? %s\n", stamp(t), oneParagraph(q.Text))
	}
	f.question = q
}

// shownKey is what follow has shown of p: the proposal as its Ref names it, so one asked
// again with another preview is shown again.
func shownKey(p *api.Proposal) string { return p.ID + " " + p.Ref() }

// close marks a proposal decided or done: stdin no longer decides on it.
func (f *follower) close(id string) {
	f.closed[id] = true
	if f.pending != nil && f.pending.ID == id {
		f.pending = nil
	}
}

// settle runs after every change: the spinner shows while the model works, and a prompt
// shows while something waits for the person at this terminal.
func (f *follower) settle() {
	if f.ended {
		return
	}
	switch f.state {
	case api.StateThinking:
		f.spin.start(spinThinking, f.stateSince)
	case api.StateWaitingForModel:
		f.spin.start(spinNoModel, f.stateSince)
	default:
		f.spin.stop()
	}
	if len(f.typedAhead) > 0 && !f.sending && (f.pending != nil || f.question != nil) {
		select {
		case f.ready <- struct{}{}:
		default:
		}
		return
	}
	f.endIfStuck()
	if !f.stdinOpen || f.promptOpen || f.sending {
		return
	}
	switch {
	case f.question != nil:
		f.prompt(answerPrompt)
	case f.pending != nil:
		if !f.legendShown {
			f.legendShown = true
			io.WriteString(f.a.stderr, decisionLegend)
		}
		f.prompt(decisionPrompt)
	}
}

func (f *follower) prompt(s string) {
	f.spin.stop()
	io.WriteString(f.a.stderr, s)
	f.promptOpen, f.promptFor = true, s
}

// withdrawPrompt ends an open prompt for what was settled elsewhere (another terminal,
// a chat thread, the web console): "Answer: (answered elsewhere)", so no prompt is left
// waiting on the screen for what nobody waits for. A line typed here is on its way
// (sending) is this terminal's own: its prompt is not withdrawn.
func (f *follower) withdrawPrompt(prompt, why string) {
	if f.promptOpen && f.promptFor == prompt && !f.sending {
		f.spin.clear()
		io.WriteString(f.a.stderr, "("+why+")\n")
		f.promptOpen = false
	}
}

// closePrompt ends an open prompt's line before other output.
func (f *follower) closePrompt() {
	if f.promptOpen {
		io.WriteString(f.a.stderr, "\n")
		f.promptOpen = false
	}
}

func (f *follower) beforeWrite() {
	f.spin.clear()
	f.closePrompt()
}

// out is where the human rendering goes: stdout, or nowhere with --json.
func (f *follower) out() io.Writer {
	if f.a.json || f.ended {
		return io.Discard
	}
	f.beforeWrite()
	return f.a.stdout
}

func (f *follower) printf(format string, args ...any) {
	fmt.Fprintf(f.out(), format, args...)
}

func (f *follower) notef(format string, args ...any) {
	if f.ended {
		return
	}
	f.beforeWrite()
	f.a.note(format, args...)
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Local().Format("15:04:05 ")
}

// questionKey names a question in follower's sets; it cannot collide with a proposal id.
func questionKey(q *api.Question) string { return "?" + q.ProposalID + "\x00" + q.Text }
