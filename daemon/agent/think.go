package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/agent/cycle"
	"github.com/agentd/agentd/daemon/agent/policy/bind"
	"github.com/agentd/agentd/daemon/agent/watchdog"
	"github.com/agentd/agentd/daemon/llm"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/backoff"
	"github.com/agentd/agentd/internal/display"
	"github.com/agentd/agentd/internal/randid"
)

// replyReserve is the part of the context kept free for the model's reply: a quarter,
// and at least 640 tokens (a reply's thoughts and command take 150–400), so that at
// num_ctx 2048 the prompt keeps room for the memories that hold the evidence.
func replyReserve(numCtx int) int { return max(640, numCtx/4) }

// pausable is ctx for a model call that a pause, a stop or the agent's time budget
// cancels through *cancel (the runner's cancelStep, set under mu); a time budget that ran
// out before the call began (cut, set under mu) cuts it at once. done ends it.
func pausable(ctx context.Context, mu *sync.Mutex, cancel *context.CancelFunc, cut *atomic.Bool) (context.Context, func()) {
	stepCtx, stop := context.WithCancel(ctx)
	mu.Lock()
	*cancel = stop
	if cut.Load() {
		stop()
	}
	mu.Unlock()
	return stepCtx, func() {
		mu.Lock()
		*cancel = nil
		mu.Unlock()
		stop()
	}
}

// think asks the model for the next proposal and persists it.
func (r *runner) think(ctx context.Context, l *live) {
	began := time.Now() // the step's model time counts toward the agent's busy time
	a, last, err := readStep(ctx, r.s.st, r.id)
	if err != nil {
		r.s.log.Error("think: reading state", "agent", r.id, "err", err)
		r.sleep(ctx, 1e9)
		return
	}
	if a.State != api.StateThinking {
		_ = r.setState(ctx, nil, cycle.Think) // the model call below tells what is wrong
	}
	stepCtx, done := pausable(ctx, &r.mu, &r.cancelStep, &r.busyCut)
	defer done()

	if a.Description == "" {
		if err := r.generateProfile(stepCtx, l, a); err != nil {
			r.modelError(ctx, l.Model, err)
			return
		}
	}
	if r.s.model.info() == nil {
		// No probe has answered yet: learn the context length before the first prompt.
		info, err := r.s.opt.LLM.Probe(stepCtx, l.Model)
		if err != nil {
			r.modelError(ctx, l.Model, err)
			return
		}
		r.s.model.probedOK(l.Model, info)
	}
	model := l.Model
	var notes []string
	if r.smartNext && l.SmartModel != "" {
		model = l.SmartModel
		notes = append(notes, r.smartNote) // the loop the watchdog saw
	}
	// The model's one num_ctx, which every call to it uses (a change reloads the model).
	ld, err := r.s.opt.LLM.LoadFor(stepCtx, model)
	if err != nil {
		r.modelError(ctx, model, err)
		return
	}
	numCtx := ld.NumCtx
	step := r.s.stepOf(a)
	pl := l.pipelineFor(a.Name)
	r.summarize(ctx, l, a)
	in, msgs := r.s.prompt(stepCtx, l, a, step, model, numCtx, notes)
	// The reply may use all the context the prompt leaves: a cut-off reply is an invalid one.
	numPredict := max(512, numCtx-int(float64(PromptChars(msgs))/r.s.model.charsPerToken(model))-64)
	req := llm.ChatRequest{Model: model, Messages: msgs, NumCtx: numCtx, NumPredict: numPredict, KeepAlive: ld.KeepAlive}
	res, err := llm.Propose(stepCtx, r.s.opt.LLM, req, in.Commands)
	if err != nil {
		var inv *llm.InvalidReplyError
		if errors.As(err, &inv) {
			r.strike(ctx, l, inv, time.Since(began))
		} else {
			r.modelError(ctx, model, err)
		}
		return
	}
	pl.AfterParse(stepCtx, step, res.Reply, func(rep *commands.Reply) error {
		data, err := json.Marshal(rep)
		if err == nil {
			_, err = commands.ParseReply(in.Commands, data)
		}
		return err
	})
	r.waitAttempt = 0
	if res.PromptTokens < numCtx { // a count capped at num_ctx says nothing about chars per token
		r.s.model.calibrate(model, PromptChars(msgs), res.PromptTokens)
	}
	r.propose(ctx, l, a, last, model, res, in.Commands, time.Since(began))
}

// readStep reads what a step starts from: agent id, and the last proposal of its run
// (nil for none), which the watchdog compares the next one with.
func readStep(ctx context.Context, st *store.Store, id string) (a *store.Agent, last *api.Proposal, err error) {
	err = st.View(ctx, func(tx *store.Tx) (err error) {
		if a, err = tx.Agent(id); err != nil {
			return err
		}
		last, err = orNone(tx.LastProposal(id, a.RunID))
		return err
	})
	return a, last, err
}

// fitTask cuts a task too long for the context, keeping its start, so that the prompt
// without history still leaves room for the reply. History is fitted after this.
func (m *modelState) fitTask(in PromptInput, model string, numCtx int) string {
	budget := int(float64(numCtx-replyReserve(numCtx)) * m.charsPerToken(model))
	over := PromptChars(BuildPrompt(in)) - budget
	if over <= 0 {
		return in.Task
	}
	const note = " …[cut to fit the model's context]"
	keep := max(200, len(in.Task)-over-len(note)-8) // 8: cut adds an ellipsis
	if keep >= len(in.Task) {
		return in.Task
	}
	return display.Cut(strings.TrimSpace(in.Task), keep, display.Ellipsis) + note
}

// prompt builds a step's prompt through the agent's components: directives, commands,
// then the messages, the budgeted ones (open files, history) filling what the rest leaves.
func (s *Supervisor) prompt(ctx context.Context, l *live, a *store.Agent, step *commands.Step, model string, numCtx int, notes []string) (PromptInput, []llm.Message) {
	pl := l.pipelineFor(a.Name)
	in := PromptInput{
		Name: a.Name, Description: a.Description, Task: a.Task, Goals: a.Goals,
		Directives: pl.Directives(ctx, step),
		Commands:   s.commandsFor(ctx, l, a, step),
		Notes:      notes,
	}
	in.Task = s.model.fitTask(in, model, numCtx)
	step.ContextTokens = numCtx
	in.Messages = pl.Messages(ctx, step, s.model.messageBudget(in, model, numCtx))
	return in, BuildPrompt(in)
}

// messageBudget is how many characters the components' messages may use: what the
// context holds before the reply reserve, minus the rest of the prompt.
func (m *modelState) messageBudget(in PromptInput, model string, numCtx int) int {
	budget := int(float64(numCtx-replyReserve(numCtx))*m.charsPerToken(model)) - PromptChars(BuildPrompt(in)) - 64
	return max(0, budget)
}

// propose persists the model's proposal before anything else happens, and has the
// watchdog look for a loop (watch). busy is the time the step took to think.
func (r *runner) propose(ctx context.Context, l *live, a *store.Agent, last *api.Proposal, model string, res *llm.Proposal, cmds commands.Set, busy time.Duration) {
	p := newProposal(ctx, a, model, res, cmds)
	r.runAhead(ctx, l, a, p, last, cmds) // before the proposal is stored: it is shown with it
	var w watched
	var shown api.Proposal // p as proposed: the policy may start it in the same transaction
	var st *started        // set when the policy approved p and it started in the same transaction
	r.mu.Lock()
	r.s.checkpointAhead(ctx, l, p) // the policy may start p in the transaction that stores it
	err := r.s.st.Tx(ctx, func(tx *store.Tx) error {
		st = nil // a retried transaction starts over
		cur, err := tx.Agent(a.ID)
		if err != nil {
			return err
		}
		on := cur
		if cur.RunID != a.RunID {
			on = nil // stopped and given a new task meanwhile: keep it for the record only
		}
		stepTaken(cur, p, res, busy)
		r.s.episodeHistory.storeWith(tx, cur)
		if w, err = watch(tx, l, on, last, p, cmds, &r.observed, r.smartNext, r.s.metrics); err != nil {
			return err
		}
		// Inserts p, pending or superseded; the applier shows it, as shown, once this commits.
		proposed := &change{a: on, p: p, ev: w.ev, pub: r.s.events.Publish, shownProposal: &shown}
		if _, err := apply(tx, proposed); err != nil {
			return err
		}
		var stopped *change
		if w.stop { // a schedule's run: nobody to ask
			why := fmt.Sprintf("stopped by the watchdog: it caught a loop (%s): %s", w.verdict.Kind, w.verdict)
			stopped = &change{a: on, p: p, ev: cycle.Event{Kind: cycle.Stop, Reason: why, Detail: why}, cancel: r.cancel, pub: r.s.events.Publish}
			if _, err := apply(tx, stopped); err != nil {
				return err
			}
		}
		shown = *p
		if err := tx.Audit(a.ID, "proposal", map[string]any{"proposal": p.ID, "command": p.Command, "hash": p.Hash, "model": model}); err != nil {
			return err
		}
		if p.Status == api.ProposalPending && w.ev.Kind == cycle.Proposed {
			if st, err = startProposed(r.s, l, tx, cur, p, last, cmds, &shown); err != nil {
				return err
			}
		}
		var pending *api.Proposal // think runs only when no proposal is open
		if p.Status == api.ProposalPending {
			pending = &shown
			if err := askedBounded(tx, on, p, &shown); err != nil { // left to a person
				return err
			}
		}
		if err := tx.UpdateAgent(cur); err != nil {
			return err
		}
		proposed.shown = known(cur, pending, nil)
		if stopped != nil {
			stopped.shown = proposed.shown
		}
		return nil
	})
	if err == nil && st != nil {
		r.armExec(ctx, st)
	}
	r.mu.Unlock()
	if err != nil {
		r.s.log.Error("persisting proposal", "agent", a.ID, "err", err)
		return
	}
	r.smartNext, r.smartNote = w.ev.Kind == cycle.ProposedRethink, w.note
	if w.stop {
		r.s.runs.runEnded(a.RunID)
	}
	if st != nil {
		r.run(ctx, l, p, st)
	} // one left to a person after it ran ahead bounded runs ahead again next round (cycle.RunAhead)
}

// newProposal is the model's reply res as a proposal of a's, not yet stored.
func newProposal(ctx context.Context, a *store.Agent, model string, res *llm.Proposal, cmds commands.Set) *api.Proposal {
	canon, err := commands.CanonicalArgs(res.Reply.Command.Args)
	if err != nil {
		canon = res.Reply.Command.Args
	}
	p := &api.Proposal{
		ID: randid.ID("p-"), AgentID: a.ID, RunID: a.RunID, Thoughts: api.Thoughts(res.Reply.Thoughts),
		Command: res.Reply.Command.Name, Args: canon, Hash: Hash(res.Reply.Command.Name, canon),
		Model: model, PromptTokens: res.PromptTokens, EvalTokens: res.EvalTokens,
	}
	if c, ok := cmds.Get(p.Command); ok {
		// Before the proposal is stored or shown: what the person judges is the state now.
		p.Preview = commands.Preview(ctx, c, commands.Env{Workspace: a.Workspace, AgentID: a.ID}, canon)
	}
	return p
}

// stepTaken counts the step that proposed p on a: its number, its model time busy and
// its tokens; a valid reply ends a run of invalid ones.
func stepTaken(a *store.Agent, p *api.Proposal, res *llm.Proposal, busy time.Duration) {
	a.Step++
	a.StepsTotal++
	a.BusyMS += busy.Milliseconds()
	p.Step = a.Step
	a.Strikes = 0
	a.PromptTokens += int64(res.PromptTokens)
	a.EvalTokens += int64(res.EvalTokens)
}

// startProposed weighs the new pending proposal p in the transaction that stores it:
// when the policy approves it, the approval and the start commit with the proposal, one
// durable write instead of three before the command runs. It returns what started, or
// nil when a person decides (then shown carries a note of a y! that does not hold).
func startProposed(s *Supervisor, l *live, tx *store.Tx, a *store.Agent, p, last *api.Proposal, cmds commands.Set, shown *api.Proposal) (*started, error) {
	st := &started{cmds: cmds}
	var spec *commands.Spec
	if c, ok := cmds.Get(p.Command); ok {
		sp := c.Spec()
		spec = &sp
	}
	err := startTx(s, l, tx, a, p, last, spec, st)
	if !errors.Is(err, errNotApproved) {
		return st, err
	}
	if st.unbound != "" {
		if err := bind.NoteUnbound(tx, p, st.unbound); err != nil {
			return nil, err
		}
		shown.Preview = p.Preview
	}
	return nil, nil
}

// strike counts an invalid reply; after MaxInvalidReplies in a row the agent pauses.
// busy is the time the model took. The error is published once the count commits, and
// the applier publishes the pause after it.
func (r *runner) strike(ctx context.Context, l *live, inv *llm.InvalidReplyError, busy time.Duration) {
	err := r.update(ctx, func(tx *store.Tx, a *store.Agent) (err error) {
		a.Strikes++
		a.BusyMS += busy.Milliseconds()
		if err := tx.Audit(a.ID, "invalid_reply", map[string]any{"problems": inv.Problems, "strikes": a.Strikes}); err != nil {
			return err
		}
		if _, err := apply(tx, &change{a: a, ev: cycle.Event{Kind: cycle.InvalidReply, Detail: "invalid model reply: " + strings.Join(inv.Problems, "; ")}, pub: r.s.events.Publish}); err != nil {
			return err
		}
		if a.Strikes < l.MaxInvalidReplies || !active(a.State) {
			return tx.UpdateAgent(a)
		}
		ev := cycle.Event{Kind: cycle.InvalidReplies, Reason: fmt.Sprintf("the model gave %d invalid replies in a row (last: %s): try a stronger model, then `agentctl resume %s`",
			a.Strikes, strings.Join(inv.Problems, "; "), a.Name)}
		tx.AfterCommit(func() { r.s.metrics.Loop(string(watchdog.InvalidReplies), "pause") })
		_, err = applyShown(tx, &change{a: a, ev: ev, pub: r.s.events.Publish})
		return err
	})
	if err != nil {
		r.s.log.Error("recording invalid reply", "agent", r.id, "err", err)
	}
}

// modelError handles a failed call for model: the agent waits for it with backoff, or
// until the pool finds a host that serves it back. A call cancelled by a pause or a stop
// is no failure.
func (r *runner) modelError(ctx context.Context, model string, err error) {
	if ctx.Err() != nil || errors.Is(err, context.Canceled) {
		return // ending, or the step was paused or stopped while it thought
	}
	// Before anything else: a host that comes back while the state is written still wakes it.
	back, stop := r.s.opt.LLM.Servable(model)
	defer stop()
	r.waitAttempt++
	reason := "the model server is unavailable: " + err.Error()
	var nf *llm.ModelNotFoundError
	if errors.As(err, &nf) {
		reason = err.Error()
	}
	r.s.model.failed(err)
	r.s.log.Warn("model call failed", "agent", r.id, "attempt", r.waitAttempt, "err", err)
	_ = r.setState(ctx, nil, cycle.ModelDown, reason) // the wait below goes on regardless
	backoff.SleepOr(ctx, r.s.opt.Backoff(r.waitAttempt), r.wake, back)
	select {
	case <-back: // its host is back: a new outage starts its backoff over
		r.waitAttempt = 0
	default:
	}
}

// profile is what the model writes about an agent created from a bare task.
type profile struct {
	Name          string   `json:"name" desc:"a short role-based name, lowercase-with-dashes" max:"30"`
	Description   string   `json:"description" desc:"what the agent is and does, one sentence" max:"160"`
	BestPractices []string `json:"best_practices" desc:"1-5 short best practices for this task" max:"5"`
	Constraints   []string `json:"constraints" desc:"1-5 short constraints for this task" max:"5"`
}

var profileSchema = func() *commands.Schema {
	s := commands.FromStruct(profile{})
	for _, n := range []string{"best_practices", "constraints"} {
		p := s.Properties.Get(n)
		p.MinItems = commands.Ptr(1)
		p.Items.MaxLength = commands.Ptr(120)
	}
	return s
}()

const profilePrompt = `You create autonomous agents. Given a task, write the agent's profile: a short role-based name ` +
	`(lowercase words joined by dashes), a one-sentence description of its role, 1-5 best practices and 1-5 constraints ` +
	`that help it do this task well. Reply with one JSON object.`

// generateProfile asks the model for a profile for an agent created from a task
// (AutoGPT's create_agent) and stores it.
func (r *runner) generateProfile(ctx context.Context, l *live, a *store.Agent) error {
	var pr profile
	ld, err := r.s.opt.LLM.LoadFor(ctx, l.Model)
	if err != nil {
		return err
	}
	// The model's own num_ctx (asking for another would reload it): the task is cut to fit.
	numPredict := min(512, max(128, ld.NumCtx/3))
	room := int(float64(ld.NumCtx-numPredict-len(profilePrompt)/2-64) * r.s.model.charsPerToken(l.Model))
	task := a.Task
	if ld.NumCtx > 0 && len(task) > max(200, room) {
		task = display.Cut(task, max(200, room), display.Ellipsis)
	}
	req := llm.ChatRequest{
		Model: l.Model, NumCtx: ld.NumCtx, NumPredict: numPredict, KeepAlive: ld.KeepAlive,
		Messages: []llm.Message{{Role: "system", Content: profilePrompt}, {Role: "user", Content: "Task: " + task}},
	}
	res, err := llm.Generate(ctx, r.s.opt.LLM, req, profileSchema, &pr)
	if err != nil {
		var inv *llm.InvalidReplyError
		if !errors.As(err, &inv) {
			return err
		}
		pr = profile{} // an unusable profile: fall back to a plain one
	}
	return r.update(ctx, func(tx *store.Tx, cur *store.Agent) (err error) {
		name := slug(pr.Name)
		if name != "" && cur.Name == tempName(cur.ID) {
			if taken, _ := tx.NameTaken(name); !taken {
				cur.Name = name
			}
		}
		cur.Description = strings.TrimSpace(pr.Description)
		if cur.Description == "" {
			cur.Description = "an autonomous assistant"
		}
		cur.Directives.BestPractices = cleanList(pr.BestPractices)
		cur.Directives.Constraints = cleanList(pr.Constraints)
		if res != nil {
			cur.PromptTokens += int64(res.PromptTokens)
			cur.EvalTokens += int64(res.EvalTokens)
		}
		if err := tx.Audit(a.ID, "profile", map[string]any{"name": cur.Name, "description": cur.Description}); err != nil {
			return err
		}
		*a = *cur
		_, err = applyShown(tx, &change{a: cur, ev: cycle.Event{Kind: cycle.ProfileWritten, Detail: "profile written"}, pub: r.s.events.Publish})
		return err
	})
}

// slug turns a model-written name into a valid agent name, or "".
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(strings.TrimSpace(s)) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			b.WriteRune(c)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= 30 {
			break
		}
	}
	out := strings.Trim(b.String(), "-")
	if len(out) < 3 || !nameRE.MatchString(out) {
		return ""
	}
	return out
}

func cleanList(in []string) []string {
	var out []string
	for _, s := range in {
		if s = strings.TrimSpace(s); s != "" && len(out) < 5 {
			out = append(out, display.Cut(strings.TrimSpace(s), 120, display.Ellipsis))
		}
	}
	return out
}

// summarize starts making one-line summaries of older episodes that the prompt shows
// without one, when the agent's call budget allows: at most once every summaryEvery steps
// of its loop, one job at a time. The job runs beside the step, not in it, so a step never
// waits for a summary call (a person deciding, or the next step's model call, overlaps
// it). Its summaries and the call's tokens are stored with the agent's next change
// (storeWith: a proposal, a result, a decision, a run's end), not in a transaction of
// their own that a step under way would wait behind (agentd has one store connection);
// when no step is under way, at once. They show from the prompt after that. ctx is the
// loop's: pausing or stopping the agent, or the daemon shutting down, ends the job.
func (r *runner) summarize(ctx context.Context, l *live, a *store.Agent) {
	r.thinks++
	if r.thinks-r.summarizedAt < summaryEvery {
		return
	}
	r.summarizedAt = r.thinks // checked again summaryEvery steps from now, whatever comes of it
	if !r.summarizing.CompareAndSwap(false, true) {
		return
	}
	r.s.wg.Go(func() {
		defer r.summarizing.Store(false)
		r.s.episodeHistory.makeSummaries(ctx, l, a.ID)
		// Stored now unless a step of its is under way, whose proposal or result will.
		r.s.episodeHistory.storeSummaries(context.WithoutCancel(ctx), &r.mu, r.id)
	})
}

// runAhead adds to p, the model's proposal not yet stored, the effect preview of its
// command (withEffect), showing the agent previewing meanwhile.
func (r *runner) runAhead(ctx context.Context, l *live, a *store.Agent, p, last *api.Proposal, cmds commands.Set) {
	if c, ok := cmds.Get(p.Command); ok {
		previewing := func() { r.setState(ctx, nil, cycle.Previewing, previewingReason(p.Command)) } // through the applier, which publishes it
		withEffect(ctx, r.s.st, r.s.previews, r.s.budgets.previewRoom(a), l, a, p, last, c, previewing)
	}
}

// askOnPersonRerun is the loop's cycle.RunAhead: it runs f's proposal p, whose bounded
// run ahead askedBounded dropped, ahead again in a person's profile, the way a stale
// preview is (rerunPreview), and has the person asked on what that run gives
// (cycle.PreviewRerun): p's Ref changes with it, so a decision made on p as shown before
// is refused (look again). Nothing moves when p was decided, or its run ended, meanwhile.
// It runs in a step a pause cancels, and reports false when a pause cut it short: p
// still awaits it (awaitsRerun), the loop ends, and the resume's round runs it again.
func (r *runner) askOnPersonRerun(ctx context.Context, l *live, f *facts) bool {
	stepCtx, done := pausable(ctx, &r.mu, &r.cancelStep, &r.busyCut)
	defer done()
	a, p := f.a, f.p
	again := *p.Preview
	again.Effect, again.Diff, again.DiffCut = nil, "", false
	rerun := &again // no preview at all when its command is gone: approving runs it
	if c, ok := r.s.commandsFor(stepCtx, l, a, r.s.stepOf(a)).Get(p.Command); ok {
		rerun = rerunPreview(stepCtx, r.s.st, r.s.previews, r.s.budgets.previewRoom(a), l, a, p, c)
	}
	if stepCtx.Err() != nil {
		return ctx.Err() != nil // the daemon stops: the loop ends on its own
	}
	why := rerunReason(rerun)
	r.mu.Lock()
	err := r.s.st.Tx(ctx, func(tx *store.Tx) error {
		cur, err := tx.Agent(a.ID)
		if err != nil {
			return err
		}
		now, err := tx.Proposal(p.ID)
		if err != nil || !awaitsRerun(now) { // decided, or its run ended, meanwhile
			return err
		}
		asked := &change{a: cur, p: now, ev: cycle.Event{Kind: cycle.PreviewRerun, Reason: why}, rerun: rerun, pub: r.s.events.Publish}
		if _, err := apply(tx, asked); errors.As(err, new(*cycle.IllegalError)) {
			return nil // stopped or failed meanwhile: nobody to ask
		} else if err != nil {
			return err
		}
		asked.shown = known(cur, now, nil)
		return tx.UpdateAgent(cur)
	})
	r.mu.Unlock()
	if err == nil || errors.Is(err, store.ErrNotFound) || ctx.Err() != nil {
		return true
	}
	r.s.log.Error("asking on the preview run again", "agent", a.ID, "proposal", p.ID, "err", err)
	return r.sleep(ctx, time.Second)
}
