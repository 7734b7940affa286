package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/agent/cycle"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/display"
)

// errStaged marks a failed staged write in a result transaction.
var errStaged = errors.New("a component's staged write failed")

// stepEnd is how a command's run ends its step: the cycle's event, the episode to record,
// and whether it finished the run.
type stepEnd struct {
	ev       cycle.Event
	ep       *api.Episode
	out      string // the command's output
	finished bool
	disk     int64        // the agent's workspace measured after the command; -1 when it was not
	rerun    *api.Preview // a stale effect preview run again (staleEnd)
}

// endOf is the end of p's step, whose command gave out and runErr.
func endOf(p *api.Proposal, out string, runErr error) stepEnd {
	kind, outcome, result := cycle.Succeed, "succeeded", out
	if runErr != nil {
		kind, outcome = cycle.Fail, "failed"
		result = "Error: " + runErr.Error()
		if out != "" {
			result += "\n" + out
		}
	}
	e := stepEnd{ep: episodeOf(p, outcome, result, ""), out: out, finished: p.Command == commands.Finish && runErr == nil, disk: -1}
	e.ev = cycle.Event{Kind: kind, Result: result, Detail: out}
	if e.finished {
		// Only the run's end says "finished": a step's result on the thinking agent's
		// state read "thinking: finished: (empty folder)" in follow.
		e.ev.Kind = cycle.Finish
		e.ev.Reason = "finished: " + display.Cut(strings.TrimSpace(out), 200, display.Ellipsis)
	}
	return e
}

// finishExecution records the end of p's step in one transaction, with the components'
// staged writes (a written file's memories) and the history summaries made meanwhile;
// busy is how long the command ran, added to the agent's busy time.
func (r *runner) finishExecution(ctx context.Context, p *api.Proposal, end stepEnd, busy time.Duration, staged ...func(*store.Tx) error) {
	var ended bool // the applier ended p's run
	r.mu.Lock()
	r.cancelExec = nil
	r.s.checkpoints.ahead(ctx, r.s.st, p, nil) // the walk holds no store writer
	r.mu.Unlock()
	// The command ran: its result must land. Retry while the store refuses (busy, disk
	// full); if the daemon stops first, the restart shows it as interrupted.
	for attempt := 1; ; attempt++ {
		r.mu.Lock()
		err := r.s.st.Tx(ctx, func(tx *store.Tx) (err error) {
			ended, err = resultTx(r.s, tx, r.id, p, end, busy, staged)
			return err
		})
		r.mu.Unlock()
		if errors.Is(err, store.ErrNotFound) {
			return // the agent was deleted
		}
		if err == nil {
			break
		}
		if errors.Is(err, errStaged) {
			// A component's write (a file's memories) must not keep the result out: it
			// goes without them, as it would had the component failed on its own.
			r.s.log.Warn("recording result without the components' writes", "agent", r.id, "proposal", p.ID, "err", err)
			staged = nil
			continue
		}
		r.s.log.Error("recording result", "agent", r.id, "proposal", p.ID, "attempt", attempt, "err", err)
		if !r.sleep(ctx, r.s.opt.Backoff(attempt)) {
			return
		}
	}
	if end.finished && ended {
		r.s.runs.runEnded(p.RunID)
	}
}

// resultTx records the end of agent id's step p in tx, with the components' staged
// writes; the applier publishes the events. A p no longer started (its run's budget ran
// out meanwhile) ends late: its result is only remembered. ended is true when the step
// ended p's run.
func resultTx(s *Supervisor, tx *store.Tx, id string, p *api.Proposal, end stepEnd, busy time.Duration, staged []func(*store.Tx) error) (ended bool, err error) {
	a, err := tx.Agent(id)
	if err != nil {
		return false, err
	}
	cur := *p // a retried transaction starts from the proposal as it was
	on := a
	if a.RunID != p.RunID {
		on = nil // stopped and given a new task while this ran: the agent is the new run's
	}
	ev := end.ev
	if now, err := tx.Proposal(p.ID); err != nil {
		return false, err
	} else if now.Status != api.ProposalStarted {
		// Withdrawn meanwhile: the command ran all the same, and what it did is remembered.
		cur.Status, ev = cycle.None, cycle.Event{Kind: cycle.LateEnd, Reason: a.StateReason}
	}
	s.checkpoints.ended(tx, &cur, &ev) // checkpointed at its start: record its change
	if ev.Unchecked && on == nil {
		on = a // what it wrote unchecked is in the workspace the new run works in: the table pauses that
	}
	c := &change{a: on, p: &cur, ev: ev, episode: end.ep, rec: s.recordEpisode, ckpt: s.checkpoints, pub: s.events.Publish, finishMessage: &end.out, rerun: end.rerun}
	res, err := apply(tx, c)
	if err != nil {
		return false, err
	}
	for _, write := range staged {
		if err := write(tx); err != nil {
			return false, fmt.Errorf("%w: %w", errStaged, err)
		}
	}
	s.audit.keep(tx, id, end.ep.Outcome, map[string]string{"proposal": p.ID, "command": p.Command})
	s.episodeHistory.storeWith(tx, a)
	a.BusyMS += busy.Milliseconds()
	if end.disk >= 0 {
		a.DiskBytes = end.disk
	}
	if on == nil {
		return false, tx.UpdateAgent(a) // its run had been replaced: the agent's state is the new run's
	}
	ended = has(res.effects, cycle.EndRun)
	if ended {
		a.Policy.AutoSteps = 0
		if a.Policy.Mode == "auto" {
			a.Policy.Mode = "ask"
		}
	}
	var open *api.Proposal // p, the only open proposal, settled unless asked again
	if cur.Status.Decidable() {
		open = &cur
	}
	c.shown = known(a, open, nil)
	if a.RunID != p.RunID { // a new run's agent, paused by an unchecked late end: shown with what it has open
		if c.shown, err = view(tx, a); err != nil {
			return false, err
		}
	}
	return ended, tx.UpdateAgent(a)
}

// staleEnd is the end of p's step when its preview's change was not applied, the
// workspace having changed since (err): a person decides again on rerun, the preview run
// again on the workspace as it is now, whose change approving then applies; without one
// approving runs the command itself, and the reason says why the run again gave none.
func staleEnd(p *api.Proposal, err error, rerun *api.Preview) stepEnd {
	why := err.Error() + "; approving again runs the command itself"
	if again := ranAgain(rerun, "on the workspace as it is now"); again != "" {
		why = err.Error() + "; " + again
	}
	result := "Not applied: " + why
	return stepEnd{ev: cycle.Event{Kind: cycle.PreviewStale, Reason: why, Result: result},
		ep: episodeOf(p, "interrupted", result, ""), disk: -1, rerun: rerun}
}
