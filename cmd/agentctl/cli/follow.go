package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/daemon/client"
)

var followCmd = &command{
	name:  "follow",
	args:  "AGENT [--stay]",
	short: "watch an agent live and decide on its proposals",
	long: `Follow shows the agent's current state, then each step as it happens: what it thinks,
the command it proposes, who decided, the result, and its questions.

When a proposal waits, type your decision and press Enter:
` + client.DecisionHelp + `
When the agent asks a question, the line you type is the answer ("?" alone shows how
to answer instead).

Follow ends when the run finishes (exit 0) or the agent fails (exit 1); with --stay it
keeps following, e.g. through follow-up tasks. Ctrl-C stops following, never the agent.
If the connection to agentd drops, follow reconnects and catches up on what it missed.
With --json it prints each event as one line of JSON.`,
	run: (*app).runFollow,
}

func (a *app) runFollow(ctx context.Context, args []string) error {
	fs := a.newFlagSet()
	stay := fs.Bool("stay", false, "keep following after the run finishes or fails")
	ref, err := a.parseAgent(fs, args)
	if err != nil {
		return err
	}
	return a.follow(ctx, ref, *stay)
}

// Reconnect backoff after the event stream drops.
const (
	minBackoff = 500 * time.Millisecond
	maxBackoff = 5 * time.Second
)

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

	mu         sync.Mutex
	name       string
	state      client.AgentState
	reason     string
	exhausted  *client.BudgetExhausted // the budget that stopped the agent, from the last state event
	lastState  string                  // the last state line printed
	pending    *client.Proposal        // the proposal a line from stdin decides on
	question   *client.Question        // the question a line from stdin answers
	shown      map[string]bool         // proposals rendered
	closed     map[string]bool         // proposals decided or done
	asked      map[string]bool         // questions rendered
	lastSeq    int64
	stdinOpen  bool
	promptOpen bool
	ended      bool
	spin       *spinner // nil unless stderr is a terminal
}

// follow follows agent ref until its run finishes (unless stay), it fails or ctx ends.
func (a *app) follow(ctx context.Context, ref string, stay bool) error {
	ag, err := a.api().Agent(ctx, ref)
	if err != nil {
		return agentErr(ref, err)
	}
	f := &follower{
		a: a, id: ag.ID, stay: stay, name: ag.Name,
		shown: map[string]bool{}, closed: map[string]bool{}, asked: map[string]bool{},
		stdinOpen: a.stdin != nil,
	}
	if !a.json && isTerminal(a.stderr) {
		f.spin = &spinner{w: a.stderr, mu: &f.mu}
	}
	if st, err := a.api().Status(ctx); err == nil {
		f.started = st.Started
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	f.mu.Lock()
	err = f.intro(ag)
	f.mu.Unlock()
	if err == nil {
		if a.stdin != nil {
			go f.readInput(ctx)
		}
		err = f.stream(ctx)
	}
	f.mu.Lock()
	f.spin.stop()
	f.closePrompt()
	f.ended = true // nothing writes after follow returns
	f.mu.Unlock()
	return err
}

// intro shows where the agent is now. Call with mu held.
func (f *follower) intro(ag *client.Agent) error {
	f.printf("following %s (%s)\n", refOf(ag), ag.ID)
	if ag.Task != "" && ag.Task != client.GoalsTask {
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
	switch {
	case ag.State == client.StateFailed && !f.stay:
		return fmt.Errorf("agent %s failed: %s; after fixing the cause, run: agentctl resume %s", refOf(ag), ag.StateReason, refOf(ag))
	case ag.State == client.StateIdle:
		f.notef("agent %s is idle: waiting for a task (agentctl task %s \"TASK\")", refOf(ag), refOf(ag))
	}
	return nil
}

// stream follows the agent's events, reconnecting with backoff when the stream drops.
func (f *follower) stream(ctx context.Context) error {
	backoff := minBackoff
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
		err := f.a.api().EventsOpened(ctx, f.id, since, opened, func(ev client.Event) error {
			backoff = minBackoff
			return f.handle(ev)
		})
		var end *endFollow
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.As(err, &end):
			return end.err
		case errors.Is(err, client.ErrNotFound):
			return fmt.Errorf("agent %s is gone: it was removed", f.ref())
		}
		msg := "the daemon closed it"
		var dnr *client.DaemonNotRunningError
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
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
		if err := f.resync(ctx); err != nil {
			if errors.Is(err, client.ErrNotFound) {
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
	st, err := f.a.api().Status(ctx)
	if err != nil {
		return err
	}
	restarted := !f.started.IsZero() && !st.Started.Equal(f.started)
	f.started = st.Started
	ag, err := f.a.api().Agent(ctx, f.id)
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
	if f.name != "" {
		return f.name
	}
	return f.id
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
		f.handleLine(ctx, sc.Text())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stdinOpen = false
	if !f.ended && ctx.Err() == nil {
		f.closePrompt()
		f.notef("(input closed: following read-only; decide with agentctl approve, deny or feedback)")
	}
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
	q, p := f.question, f.pending
	switch {
	case text == "":
	case q != nil && client.IsAnswerHelp(text):
		f.notef("%s", client.AnswerHelp)
	case q != nil:
		req := client.AnswerRequest{ProposalID: q.ProposalID, Text: text, By: user()}
		err := f.unlocked(func() error { return f.a.api().Answer(ctx, f.id, req) })
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
		req, err := client.ParseDecision(text)
		if err != nil { // ErrHelp among them: the help is shown and the proposal waits
			f.notef("%v", err)
			return
		}
		req.ProposalID, req.Source, req.By = p.ID, "agentctl", user()
		err = f.unlocked(func() error { _, err := f.a.api().Decide(ctx, f.id, req); return err })
		if err == nil || f.refused(ctx, err) {
			f.closed[p.ID] = true
			if f.pending != nil && f.pending.ID == p.ID {
				f.pending = nil
			}
		}
	default:
		f.notef("(nothing to decide right now; that line was not sent)")
	}
}

// unlocked runs fn (a call to the daemon) without holding mu, so events keep flowing.
func (f *follower) unlocked(fn func() error) error {
	f.mu.Unlock()
	defer f.mu.Lock()
	return fn()
}

// refused reports a failed decision or answer as a note, never ending follow, and says
// whether the daemon refused it because it no longer applies (409: superseded, already
// decided) or is not allowed. Call with mu held.
func (f *follower) refused(ctx context.Context, err error) bool {
	switch {
	case err == nil || ctx.Err() != nil:
		return false
	case errors.Is(err, client.ErrConflict):
		f.notef("note: %s", f.a.explain(err))
		return true
	case errors.Is(err, client.ErrForbidden):
		f.notef("not allowed: %s", f.a.explain(err))
		return true
	}
	f.notef("agentctl: %s", f.a.explain(err))
	return false
}
