package cli

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/backoff"
)

var followCmd = &command{
	name:  "follow",
	args:  "AGENT [--stay]",
	short: "watch an agent live and decide on its proposals",
	long: `Follow shows the agent's current state, then each step as it happens: what it thinks,
the command it proposes, who decided, the result, and its questions.

When a proposal waits, type your decision and press Enter:
` + api.DecisionHelp + `
After y!, n! or y -N, follow says what was stored and the command that undoes it.
When the agent asks a question, the line you type is the answer ("?" alone shows how
to answer instead). Lines piped in (echo y | agentctl run --follow TASK) each decide
the next proposal or answer the next question; once the input is closed and used up,
follow ends (exit 0) when the agent waits for one more, saying how to decide it.
With no input at all (</dev/null), --stay or --json it follows on, read-only.

Follow ends when the run finishes (exit 0) or the agent fails (exit 1); with --stay it
keeps following, e.g. through follow-up tasks. Ctrl-C stops following, never the agent.
If the connection to agentd drops, follow reconnects and catches up on what it missed.
With --json it prints each event as one line of JSON.`,
	run: verb(decisionVerbs.runFollow),
}

func (a decisionVerbs) runFollow(ctx context.Context, args []string) error {
	fs := a.newFlagSet()
	stay := fs.Bool("stay", false, "keep following after the run finishes or fails")
	ref, err := a.parseAgent(fs, args)
	if err != nil {
		return err
	}
	return a.follow(ctx, ref, *stay, "")
}

// streamBackoff spaces reconnects after an event stream (an agent's, a team run's) drops:
// 500ms doubling to 5s.
var streamBackoff = backoff.Policy{Base: 500 * time.Millisecond, Max: 5 * time.Second}

// endFollow, returned from an event handler, ends follow with err (nil: success).
type endFollow struct{ err error }

func (e *endFollow) Error() string {
	if e.err == nil {
		return "follow ended"
	}
	return e.err.Error()
}

// follower follows one agent: it renders its events and turns lines from stdin into
// decisions and answers. The stream and stdin run concurrently; mu guards the state and
// every write to stdout and stderr so their output never interleaves mid-line.
type follower struct {
	a    *app
	id   string
	stay bool

	// Only the streaming goroutine touches these.
	started time.Time // the daemon's start time; a change means seqs restarted

	mu          sync.Mutex
	name        string
	state       api.AgentState
	stateSince  time.Time // when the agent entered state, as the daemon says; zero: unknown
	reason      string
	exhausted   *api.BudgetExhausted // the budget that stopped the agent, from the last state event
	lastState   string               // the last state line printed
	pending     *api.Proposal        // the proposal a line from stdin decides on
	question    *api.Question        // the question a line from stdin answers
	shown       map[string]bool      // proposals rendered, by shownKey
	closed      map[string]bool      // proposals decided or done
	asked       map[string]bool      // questions rendered
	lastSeq     int64
	stdinOpen   bool
	promptOpen  bool
	promptFor   string // the prompt open: answerPrompt or decisionPrompt
	ended       bool
	legendShown bool              // the decision legend is shown once, before the first prompt
	spin        *spinner          // nil unless stderr is a terminal
	calls       map[string]string // each shown proposal's call, for the note a y! or n! gets

	// sending is true while a decision or answer typed here is on its way: the events
	// it causes must not prompt again for what is being answered (the stray "Answer:").
	sending bool
	// typedAhead holds lines piped in before anything waited for them (echo n | agentctl
	// run --follow): they decide the next proposal. A terminal's early lines are dropped
	// with a note instead, so nobody approves a proposal they have not seen.
	typedAhead []string
	piped      bool
	linesRead  int           // lines read from stdin; none (</dev/null) follows read-only
	run        string        // the run agentctl run or task started and follows; "" for agentctl follow
	ready      chan struct{} // wakes applyTypedAhead: something waits and lines are held
	// stop ends follow from the input side: stdin closed while something waits for it.
	stop func(error)
}

// follow follows agent ref until its run finishes (unless stay), it fails or ctx ends.
// It subscribes from the daemon's event seq read before its snapshot of the agent, so
// nothing that happens in between is lost. run, when set, is the run agentctl run or
// task just started: if the snapshot shows it over already, follow says so and ends
// (a run that finished before follow looked once left follow waiting forever).
func (a decisionVerbs) follow(ctx context.Context, ref string, stay bool, run string) error {
	st, stErr := api.StatusRoute.Do(ctx, a.api(), "", api.None{})
	ag, err := api.AgentRoute.Do(ctx, a.api(), ref, api.None{})
	if err != nil {
		return agentErr(ref, err)
	}
	f := &follower{
		a: a.app, id: ag.ID, stay: stay, name: ag.Name,
		shown: map[string]bool{}, closed: map[string]bool{}, asked: map[string]bool{},
		calls: map[string]string{}, stdinOpen: a.stdin != nil, piped: !isTerminalReader(a.stdin),
		ready: make(chan struct{}, 1),
	}
	if !a.json && isTerminal(a.stderr) {
		f.spin = &spinner{w: a.stderr, mu: &f.mu}
	}
	if stErr == nil {
		f.started = st.Started
		f.lastSeq = st.EventSeq
	}
	f.run = run
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	f.stop = func(err error) { cancel(&endFollow{err}) }

	f.mu.Lock()
	err = f.intro(ag)
	f.mu.Unlock()
	if err == nil {
		if a.stdin != nil {
			go f.readInput(ctx)
			go f.applyTypedAhead(ctx)
		}
		err = f.stream(ctx)
	}
	var end *endFollow
	if errors.As(err, &end) || errors.As(context.Cause(ctx), &end) {
		err = end.err
	}
	f.mu.Lock()
	f.spin.stop()
	f.closePrompt()
	f.ended = true // nothing writes after follow returns
	f.mu.Unlock()
	return err
}

// intro shows where the agent is now. Call with mu held.
func (f *follower) intro(ag *api.Agent) error {
	f.printf("following %s (%s)\n", refOf(ag), ag.ID)
	if ag.Task != "" && ag.Task != api.GoalsTask {
		f.printf("task: %s\n", truncate(ag.Task, 200))
	}
	// An agent made with create works on its goals: show them, not the stand-in task.
	if len(ag.Goals) > 0 {
		f.printf("goals:\n")
		for i, g := range ag.Goals {
			f.printf("  %d. %s\n", i+1, truncate(g, 200))
		}
	}
	f.sync(ag, time.Time{})
	defer f.settle()
	if f.run != "" && !f.stay && ag.State == api.StateIdle && ag.RunID == f.run {
		f.printf("finished: %s\n", line(cmp.Or(strings.TrimPrefix(ag.StateReason, "finished: "), "the run ended")))
		return &endFollow{}
	}
	switch {
	case ag.State == api.StateFailed && !f.stay:
		return fmt.Errorf("agent %s failed: %s; after fixing the cause, run: agentctl resume %s", refOf(ag), line(ag.StateReason), refOf(ag))
	case ag.State == api.StateIdle:
		f.notef("agent %s is idle: waiting for a task (agentctl task %s \"TASK\")", refOf(ag), refOf(ag))
	}
	return nil
}

// stream follows the agent's events, reconnecting with backoff when the stream drops.
func (f *follower) stream(ctx context.Context) error {
	attempt := 1
	lastMsg := ""
	for {
		since := f.seq()
		// With no event seen yet, nothing is replayed: read the agent again once subscribed,
		// or a proposal made since intro read it is never shown (the agent looks stuck
		// thinking while it waits on a person, most often on a busy machine).
		opened := func() error {
			if since > 0 {
				return nil
			}
			return f.resync(ctx)
		}
		err := f.a.api().EventsOpened(ctx, f.id, since, opened, func(ev api.Event) error {
			attempt = 1
			return f.handle(ev)
		})
		var end *endFollow
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.As(err, &end):
			return end.err
		case errors.Is(err, api.ErrNotFound):
			return fmt.Errorf("agent %s is gone: it was removed", f.ref())
		}
		msg := "the daemon closed it"
		var dnr *api.DaemonNotRunningError
		switch {
		case errors.As(err, &dnr):
			// Most often a restart: the short form, not where else agentd might be.
			msg = "nothing answers at " + dnr.Socket + " (agentd stopped or is restarting)"
		case err != nil:
			msg = f.a.explain(err)
		}
		if msg != lastMsg {
			f.locked(func() { f.notef("lost the event stream: %s; reconnecting…", msg) })
			lastMsg = msg
		}
		if !backoff.Sleep(ctx, streamBackoff.Next(attempt)) {
			return nil
		}
		attempt++
		if err := f.resync(ctx); err != nil {
			if errors.Is(err, api.ErrNotFound) {
				return fmt.Errorf("agent %s is gone: it was removed", f.ref())
			}
			continue // still down; the next Events call reports it
		}
		if lastMsg != "" {
			f.locked(func() { f.notef("reconnected") })
			lastMsg = ""
		}
	}
}

// resync reads the agent again after the stream dropped, in case events were lost: the
// daemon keeps a bounded backlog, and a restarted daemon numbers events from 1 again.
func (f *follower) resync(ctx context.Context) error {
	st, err := api.StatusRoute.Do(ctx, f.a.api(), "", api.None{})
	if err != nil {
		return err
	}
	restarted := !f.started.IsZero() && !st.Started.Equal(f.started)
	f.started = st.Started
	ag, err := api.AgentRoute.Do(ctx, f.a.api(), f.id, api.None{})
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if restarted {
		f.notef("agentd restarted; catching up")
		f.lastSeq = 0
	}
	f.sync(ag, time.Time{})
	f.settle()
	return nil
}

func (f *follower) seq() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lastSeq
}

func (f *follower) ref() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return cmp.Or(f.name, f.id)
}

func (f *follower) locked(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn()
}

// readInput turns each line typed while following into a decision or an answer.
func (f *follower) readInput(ctx context.Context) {
	sc := bufio.NewScanner(f.a.stdin)
	for sc.Scan() && ctx.Err() == nil {
		f.locked(func() { f.linesRead++ })
		f.handleLine(ctx, sc.Text())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stdinOpen = false
	if !f.ended && ctx.Err() == nil {
		f.closePrompt()
		if len(f.typedAhead) == 0 && f.readOnly() {
			f.notef("(input closed: following read-only; decide with agentctl approve, deny or feedback)")
		}
		f.endIfStuck()
	}
}

// readOnly reports whether follow goes on after its input closed, however long the agent
// waits: when nothing was ever typed or piped (</dev/null: people decide elsewhere), with
// --stay, and with --json (an event feed).
func (f *follower) readOnly() bool { return f.linesRead == 0 || f.stay || f.a.json }

// endIfStuck ends follow once its input closed, every line piped in is used, and the
// agent waits for a decision or an answer that nothing typed here can give any more (a
// piped "n" once left follow waiting ten minutes). Call with mu held.
func (f *follower) endIfStuck() {
	if f.stdinOpen || f.readOnly() || f.sending || len(f.typedAhead) > 0 || f.ended || (f.pending == nil && f.question == nil) {
		return
	}
	what := "a decision on its proposal"
	if f.pending == nil {
		what = "an answer to its question"
	}
	ref := cmp.Or(f.name, f.id)
	if f.pending != nil {
		f.notef("(input closed while agent %s waits for %s; it keeps waiting: decide with agentctl approve|deny|feedback %s)", ref, what, ref)
	} else {
		f.notef("(input closed while agent %s waits for %s; it keeps waiting: answer with agentctl answer %s TEXT)", ref, what, ref)
	}
	f.ended = true // the stream may still deliver events before it stops: show none
	f.stop(nil)
}

func (f *follower) handleLine(ctx context.Context, line string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ended {
		return
	}
	f.promptOpen = false // Enter ended the prompt's line
	defer f.settle()
	text := strings.TrimSpace(line)
	if f.piped && text != "" && (f.sending || len(f.typedAhead) > 0 || (f.pending == nil && f.question == nil)) {
		f.typedAhead = append(f.typedAhead, text)
		return
	}
	f.apply(ctx, text)
}

// apply sends one line as the answer or decision for what waits now. Call with mu held.
func (f *follower) apply(ctx context.Context, text string) {
	q, p := f.question, f.pending
	switch {
	case text == "":
	case q != nil && api.IsAnswerHelp(text):
		f.notef("%s", api.AnswerHelp)
	case q != nil:
		req := api.AnswerRequest{ProposalID: q.ProposalID, Text: text, By: user()}
		err := f.send(func() error { return api.AnswerRoute.Send(ctx, f.a.api(), f.id, req) })
		if err == nil {
			f.notef("(answer sent)")
		}
		if err == nil || f.refused(ctx, err) {
			f.closed[questionKey(q)] = true
			if f.question != nil && questionKey(f.question) == questionKey(q) {
				f.question = nil
			}
		}
	case p != nil:
		req, err := api.ParseDecision(text)
		if err != nil { // ErrHelp among them: the help is shown and the proposal waits
			f.notef("%v", err)
			return
		}
		req.ProposalID, req.Source, req.By, req.Hash = p.ID, "agentctl", user(), p.Ref() // the proposal as shown
		err = f.send(func() error { _, err := api.DecideRoute.Do(ctx, f.a.api(), f.id, req); return err })
		if (err == nil || f.refused(ctx, err)) && (f.pending == nil || shownKey(f.pending) == shownKey(p)) {
			f.close(p.ID) // unless it was asked again meanwhile, with its preview run again
		}
	default:
		f.notef("(nothing to decide right now; that line was not sent)")
	}
}

// send runs fn (a call to the daemon) without holding mu, so events keep flowing; while
// it runs, nothing prompts for the proposal or question it answers.
func (f *follower) send(fn func() error) error {
	f.sending = true
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.sending = false
	}()
	return fn()
}

// applyTypedAhead decides with the lines piped in ahead, each when something waits for
// it (settle wakes it), on its own goroutine: the event stream never waits on a call.
func (f *follower) applyTypedAhead(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.ready:
		}
		f.mu.Lock()
		for len(f.typedAhead) > 0 && !f.sending && !f.ended && (f.pending != nil || f.question != nil) {
			text := f.typedAhead[0]
			f.typedAhead = f.typedAhead[1:]
			f.promptOpen = false
			f.notef("(from input: %s)", text)
			f.apply(ctx, text)
		}
		f.settle()
		f.mu.Unlock()
	}
}

// refused reports a failed decision or answer as a note, never ending follow, and says
// whether the daemon refused it because it no longer applies (409: superseded, already
// decided) or is not allowed. Call with mu held.
func (f *follower) refused(ctx context.Context, err error) bool {
	switch {
	case err == nil || ctx.Err() != nil:
		return false
	case errors.Is(err, api.ErrConflict):
		f.notef("note: %s", f.a.explain(err))
		return true
	case errors.Is(err, api.ErrForbidden):
		f.notef("not allowed: %s", f.a.explain(err))
		return true
	}
	f.notef("agentctl: %s", f.a.explain(err))
	return false
}
