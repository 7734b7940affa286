package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/agent/cycle"
	"github.com/agentd/agentd/daemon/run"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/display"
	"github.com/agentd/agentd/internal/randid"
)

// Sub-agents. A helper is a real agent of this daemon — its own runs, history, memory
// and a workspace under its parent's (<parent ws>/agents/<key>) — named "<parent>/<key>"
// and linked to its parent. start_agent and message_agent leave the parent's proposal
// started, with a helper_waits row naming the helper's run; when that run ends, for
// whatever reason, the end is recorded as the proposal's result and the parent goes on.
// No goroutine waits: the parent's loop exits while it waits, and the delivery kicks it.
// The row goes in the same transaction as the delivery, so an end is delivered once,
// including after a restart (deliverEnded).

// helperEnv is commands.Helpers for one execution: the agent running the command and the
// proposal whose result a helper's run becomes.
type helperEnv struct {
	s          *helpers
	parentID   string
	proposalID string
}

var _ commands.Helpers = helperEnv{}

// waitingTx checks that the proposal the command runs for is still started in the
// parent's current run: a parent stopped meanwhile starts nothing.
func (h helperEnv) waitingTx(tx *store.Tx, cmd string) (*store.Agent, error) {
	parent, err := tx.Agent(h.parentID)
	if err != nil {
		return nil, err
	}
	p, err := tx.Proposal(h.proposalID)
	if err != nil {
		return nil, err
	}
	if p.Status != api.ProposalStarted || p.RunID != parent.RunID || !active(parent.State) {
		return nil, fmt.Errorf("%s: not run: your run was stopped", cmd)
	}
	return parent, nil
}

// helperID is the id of the parent's helper named key, for the command cmd.
func (h helperEnv) helperID(ctx context.Context, key, cmd string) (string, error) {
	var id string
	var keys []string
	err := h.s.st.View(ctx, func(tx *store.Tx) error {
		hs, err := tx.Helpers(h.parentID)
		for _, a := range hs {
			if keyOf(a.Name) == key {
				id = a.ID
			}
			keys = append(keys, keyOf(a.Name))
		}
		return err
	})
	switch {
	case err != nil || id != "":
		return id, err
	case len(keys) == 0:
		return "", fmt.Errorf("%s: you have no helper %q (you have none; start one with start_agent)", cmd, key)
	}
	return "", fmt.Errorf("%s: you have no helper %q; your helpers: %s", cmd, key, strings.Join(keys, ", "))
}

// helperPolicy is a helper's own policy: ask. It is never used for its proposals —
// they follow its top agent's policy as it is at each step (policyOwner) — but it keeps
// a copied count of approvals from being spent twice, or shown as if it were.
var helperPolicy = api.Policy{Mode: "ask"}

// Start implements commands.Helpers.
func (h helperEnv) Start(ctx context.Context, key, task, prompt string) error {
	s := h.s
	const cmd = commands.StartAgent
	if !nameRE.MatchString(key) || len(key) > 30 {
		return fmt.Errorf("%s: name %q: use 1-30 lowercase letters, digits, - or _, starting with a letter or digit", cmd, key)
	}
	var parentWS string
	if err := s.st.View(ctx, func(tx *store.Tx) error {
		a, err := tx.Agent(h.parentID)
		if err == nil {
			parentWS = a.Workspace
		}
		return err
	}); err != nil {
		return err
	}
	ws, made, err := makeHelperWorkspace(parentWS, key)
	if err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	helper := &store.Agent{Agent: api.Agent{
		ID: randid.ID("a-"), Description: task, Task: prompt, State: cycle.Initial,
		RunID: randid.ID("r-"), Workspace: ws, ParentID: h.parentID,
	}}
	if helper.Description == "" {
		helper.Description = "a helper agent"
	}
	err = s.st.Tx(ctx, func(tx *store.Tx) error { return h.insertHelperTx(tx, key, helper) })
	if err != nil {
		s.batchRuns.drop(helper.RunID)
		if made {
			removeWorkspace(ws)
		}
		return err
	}
	s.kick(helper.ID)
	return nil
}

// insertHelperTx stores helper, the parent's new helper named key, with its run started
// and the parent's proposal waiting for it, and shows it once tx commits.
func (h helperEnv) insertHelperTx(tx *store.Tx, key string, helper *store.Agent) error {
	s := h.s
	const cmd = commands.StartAgent
	parent, err := h.waitingTx(tx, cmd)
	if err != nil {
		return err
	}
	if err := roomForHelper(tx, parent, key, s.maxDepth, s.maxHelpers); err != nil {
		return err
	}
	helper.Name, helper.Policy = parent.Name+"/"+key, helperPolicy
	if err := insertAgent(tx, helper, fmt.Errorf("%s: an agent named %s exists already: pick another name", cmd, helper.Name)); err != nil {
		return err
	}
	if err := tx.InsertWait(&store.HelperWait{ProposalID: h.proposalID, AgentID: parent.ID, HelperID: helper.ID, HelperRun: helper.RunID}); err != nil {
		return err
	}
	s.batchRuns.link(helper.RunID, parent.ID, parent.RunID) // before the helper's first step
	if err := tx.Audit(helper.ID, "created", map[string]any{"name": helper.Name, "task": helper.Task, "parent": parent.ID}); err != nil {
		return err
	}
	if err := tx.Audit(parent.ID, "helper", map[string]string{"helper": helper.ID, "name": helper.Name, "proposal": h.proposalID, "run": helper.RunID}); err != nil {
		return err
	}
	_, err = created(tx, helper, s.events.Publish)
	return err
}

// Message implements commands.Helpers.
func (h helperEnv) Message(ctx context.Context, key, message string) error {
	s := h.s
	const cmd = commands.MessageAgent
	id, err := h.helperID(ctx, key, cmd)
	if err != nil {
		return err
	}
	var runID string
	_, err = s.mutate(ctx, id, nil, func(tx *store.Tx, a *store.Agent) error {
		parent, err := h.waitingTx(tx, cmd)
		if err != nil {
			return err
		}
		if a.State != api.StateIdle && a.State != api.StateFailed {
			return fmt.Errorf("%s: helper %s is %s, not done with its last task: wait, or remove it with delete_agent", cmd, key, a.State)
		}
		if err := newRunTx(tx, a, message); err != nil {
			return err
		}
		a.Policy = helperPolicy
		if err := tx.InsertWait(&store.HelperWait{ProposalID: h.proposalID, AgentID: parent.ID, HelperID: a.ID, HelperRun: a.RunID}); err != nil {
			return err
		}
		runID = a.RunID
		s.batchRuns.link(runID, parent.ID, parent.RunID) // before the commit wakes the helper
		return tx.Audit(a.ID, "task", map[string]string{"task": message, "run": a.RunID, "by": parent.Name})
	}, nil)
	if err != nil && runID != "" {
		s.batchRuns.drop(runID)
	}
	return err
}

// List implements commands.Helpers.
func (h helperEnv) List(ctx context.Context) ([]string, error) {
	var out []string
	err := h.s.st.View(ctx, func(tx *store.Tx) error {
		hs, err := tx.Helpers(h.parentID)
		for _, a := range hs {
			line := fmt.Sprintf("%s: %s", keyOf(a.Name), a.State)
			if a.StateReason != "" {
				line += " (" + display.Cut(strings.TrimSpace(a.StateReason), 120, display.Ellipsis) + ")"
			}
			line += " — " + display.Cut(strings.TrimSpace(a.Description), 80, display.Ellipsis)
			out = append(out, line)
		}
		return err
	})
	return out, err
}

// Delete implements commands.Helpers.
func (h helperEnv) Delete(ctx context.Context, key string) error {
	id, err := h.helperID(ctx, key, commands.DeleteAgent)
	if err != nil {
		return err
	}
	return h.s.deleteAgent(ctx, id)
}

// helperResult is what the parent's command shows of its helper's end.
func helperResult(key string, outcome api.RunOutcome, reason string) (string, api.ProposalStatus) {
	switch outcome {
	case api.RunFinished:
		return fmt.Sprintf("helper %s finished: %s", key, reason), api.ProposalSucceeded
	case api.RunRemoved:
		return fmt.Sprintf("Error: helper %s was removed before it finished", key), api.ProposalFailed
	case "":
		return fmt.Sprintf("Error: helper %s ended without a report", key), api.ProposalFailed
	}
	return fmt.Sprintf("Error: helper %s did not finish (%s): %s", key, strings.ReplaceAll(string(outcome), "_", " "), reason), api.ProposalFailed
}

// errDelivered rolls back a delivery that found nothing to deliver.
var errDelivered = errors.New("delivered already")

// deliverHelper records the end of a helper's run as the result of the parent's
// proposal waiting on it, if one is; ended is the run's outcome and reason when its row
// is gone with its agent (named name), nil to read them.
func (s *helpers) deliverHelper(ctx context.Context, runID string, ended *run.End, name string) {
	var w *store.HelperWait
	var outcome api.RunOutcome
	var reason string
	err := s.st.View(ctx, func(tx *store.Tx) error {
		var err error
		if w, err = tx.WaitOn(runID); err != nil {
			return err
		}
		if a, err := tx.Agent(w.HelperID); err == nil {
			name = a.Name
		}
		if ended != nil {
			outcome, reason = ended.Outcome, ended.Reason
			return nil
		}
		r, err := tx.Run(runID)
		if errors.Is(err, store.ErrNotFound) {
			outcome = api.RunRemoved // its agent went while the daemon was down
			return nil
		}
		if err == nil {
			outcome, reason = r.Outcome, r.Reason
		}
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return // no one waits for this run
	}
	if err != nil {
		s.log.Error("reading a helper's end", "run", runID, "err", err)
		return
	}
	key := keyOf(name)
	if key == "" {
		key = w.HelperID
	}
	result, status := helperResult(key, outcome, reason)
	s.checkpoints.ahead(ctx, s.st, &api.Proposal{ID: w.ProposalID, AgentID: w.AgentID}, nil) // the step's end: outside the write
	shows := &change{rec: s.recordEpisode, ckpt: s.checkpoints}
	_, err = s.mutate(ctx, w.AgentID, nil, func(tx *store.Tx, a *store.Agent) error {
		if ok, err := tx.DeleteWait(w.ProposalID); err != nil {
			return err
		} else if !ok {
			return errDelivered
		}
		p, err := tx.Proposal(w.ProposalID)
		if err != nil {
			return err
		}
		ev := cycle.Event{Kind: cycle.Succeed, Result: result}
		epOutcome := "succeeded"
		if status == api.ProposalFailed {
			ev.Kind, epOutcome = cycle.Fail, "failed"
		}
		if p.Status != api.ProposalStarted {
			return nil // withdrawn meanwhile (its run was stopped): the wait just goes
		}
		shows.a, shows.p = a, p
		if a.RunID != p.RunID {
			shows.a = nil // its run is over: the agent is another run's
		}
		shows.episode = episodeOf(p, epOutcome, result, "")
		s.checkpoints.ended(tx, p, &ev) // the helper's end is the step's: its change is recorded
		shows.ev = ev
		if res, err := apply(tx, shows); err != nil || !res.moved {
			return err // withdrawn meanwhile (its run was stopped): the wait just goes
		}
		s.audit.keep(tx, a.ID, epOutcome, map[string]string{"proposal": p.ID, "command": p.Command, "helper": w.HelperID})
		return nil
	}, shows)
	if err != nil && !errors.Is(err, errDelivered) && !errors.Is(err, api.ErrNotFound) {
		s.log.Error("delivering a helper's end", "run", runID, "proposal", w.ProposalID, "err", err)
	}
}

// deliverEnded delivers the ends of helper runs that ended while the daemon was down (or
// between their end and its delivery). Start calls it after recovery.
func (s *helpers) deliverEnded(ctx context.Context) error {
	var runs []string
	err := s.st.View(ctx, func(tx *store.Tx) error {
		ws, err := tx.Waits()
		if err != nil {
			return err
		}
		for _, w := range ws {
			run, err := tx.Run(w.HelperRun)
			if errors.Is(err, store.ErrNotFound) || (err == nil && !run.Ended.IsZero()) {
				runs = append(runs, w.HelperRun)
			} else if err != nil {
				return err
			}
		}
		return nil
	})
	for _, id := range runs {
		s.deliverHelper(ctx, id, nil, "")
	}
	return err
}

// stopHelpers stops the helpers of an agent whose run ended: they worked for that run.
// Each one's end stops its own helpers in turn.
func (s *helpers) stopHelpers(ctx context.Context, parentID string) {
	var ids []string
	err := s.st.View(ctx, func(tx *store.Tx) error {
		hs, err := tx.Helpers(parentID)
		for _, h := range hs {
			if h.State != api.StateIdle {
				ids = append(ids, h.ID)
			}
		}
		return err
	})
	if err != nil {
		s.log.Error("listing helpers to stop", "agent", parentID, "err", err)
	}
	s.changeEach(ctx, ids, s.stop, "stopped: its parent's run ended", "stopping a helper")
}

// pausedWith is the state reason of a helper paused because name was: resuming name
// resumes exactly those, never a helper a person paused on its own.
func pausedWith(name string) string {
	return "paused: " + name + " was paused"
}

// descendants lists the helpers of the agent id at any depth, parents first, that keep
// holds for; the agent itself is left out. What fails is logged as listing them to do.
func (s *helpers) descendants(ctx context.Context, id, do string, keep func(*store.Agent) bool) []string {
	var out []string
	err := s.st.View(ctx, func(tx *store.Tx) error {
		a, err := tx.Agent(id)
		if err != nil {
			return err
		}
		fam, err := family(tx, a)
		for _, h := range fam[min(1, len(fam)):] {
			if keep(h) {
				out = append(out, h.ID)
			}
		}
		return err
	})
	if err != nil {
		s.log.Error("listing helpers to "+do, "agent", id, "err", err)
		return nil
	}
	return out
}

// pauseHelpers pauses the running helpers of the agent id (named name), at any depth.
func (s *helpers) pauseHelpers(ctx context.Context, id, name string) {
	running := s.descendants(ctx, id, "pause", func(h *store.Agent) bool { return active(h.State) })
	s.changeEach(ctx, running, s.pause, pausedWith(name), "pausing a helper")
}

// resumeHelpers resumes the helpers that pauseHelpers paused for the agent id (named name).
func (s *helpers) resumeHelpers(ctx context.Context, id, name string) {
	why := pausedWith(name)
	paused := s.descendants(ctx, id, "resume", func(h *store.Agent) bool { return h.State == api.StatePaused && h.StateReason == why })
	s.changeEach(ctx, paused, s.resume, why, "resuming a helper")
}

// changeEach does change to each agent of ids, with reason. An agent that changed
// meanwhile (a conflict) or is gone is no failure; what else fails is logged as doing.
func (s *helpers) changeEach(ctx context.Context, ids []string, change func(ctx context.Context, ref, reason string) (*api.Agent, error), reason, doing string) {
	for _, id := range ids {
		if _, err := change(ctx, id, reason); err != nil && !errors.Is(err, api.ErrConflict) && !errors.Is(err, api.ErrNotFound) {
			s.log.Error(doing, "agent", id, "err", err)
		}
	}
}

// Reasons a stray helper is stopped for at start.
const (
	strayParentGone  = "stopped at restart: its parent is gone"
	strayParentEnded = "stopped at restart: its parent's run had ended"
)

// stopStrays stops the helpers that should have stopped with their parent's run, had the
// daemon not died between that run's end and stopHelpers: a helper still running whose
// parent is gone, or whose run began before the parent's latest run ended (a run begun
// after that was given by a person to a helper of an idle parent, and stays). Start
// calls it after the ends of helper runs are delivered.
func (s *helpers) stopStrays(ctx context.Context) error {
	type stray struct{ id, why string }
	var strays []stray
	err := s.st.View(ctx, func(tx *store.Tx) error {
		agents, err := tx.Agents()
		if err != nil {
			return err
		}
		for _, a := range agents {
			if a.ParentID == "" || a.State == api.StateIdle {
				continue
			}
			if _, err := tx.Agent(a.ParentID); errors.Is(err, store.ErrNotFound) {
				strays = append(strays, stray{a.ID, strayParentGone})
				continue
			} else if err != nil {
				return err
			}
			run, err := tx.Run(a.RunID)
			if errors.Is(err, store.ErrNotFound) {
				continue
			} else if err != nil {
				return err
			}
			end, err := tx.LastRunEnd(a.ParentID)
			if err != nil {
				return err
			}
			if !end.IsZero() && !run.Started.After(end) {
				strays = append(strays, stray{a.ID, strayParentEnded})
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, x := range strays {
		s.log.Warn("stopping a helper its parent left running", "agent", x.id, "reason", x.why)
		if _, err := s.stop(ctx, x.id, x.why); err != nil && !errors.Is(err, api.ErrConflict) && !errors.Is(err, api.ErrNotFound) {
			return err
		}
	}
	return nil
}

// helpers keeps the helper agents (start_agent) in step with their parents: a helper's
// end is delivered to the parent waiting on it, and pausing, resuming or stopping an
// agent does the same to its helpers.
type helpers struct {
	st         *store.Store
	log        *slog.Logger
	audit      *auditKeeper
	events     *run.Broker
	batchRuns  *batchRuns // a helper's runs are batch work when its parent's are
	maxDepth   int        // Options.MaxHelperDepth ([agent] max_helper_depth)
	maxHelpers int        // Options.MaxHelpers ([agent] max_helpers)
	// checkpoints records what a helper's step changed in its parent's workspace.
	checkpoints *checkpoints

	// What the helpers need of the runs: changing an agent under its runner's lock,
	// pausing, resuming, stopping and removing it, waking its loop; and of the episodes:
	// ending a step.
	mutate        func(ctx context.Context, ref string, first func(id string) error, fn func(tx *store.Tx, a *store.Agent) error, shows *change) (*api.Agent, error)
	recordEpisode func(tx *store.Tx, agentID string, p *api.Proposal, ep *api.Episode) error
	pause         func(ctx context.Context, ref, reason string) (*api.Agent, error)
	resume        func(ctx context.Context, ref, only string) (*api.Agent, error)
	stop          func(ctx context.Context, ref, reason string) (*api.Agent, error)
	deleteAgent   func(ctx context.Context, ref string) error
	kick          func(id string)
}

// ended marks ev, the end of step p, as its checkpoints see it: Writes when p's start
// took one (its change is recorded), and Unchecked when the second wall could not check
// or put back what p wrote (putBack): the agent then pauses, its reason saying why.
func (k *checkpoints) ended(tx *store.Tx, p *api.Proposal, ev *cycle.Event) {
	ev.Writes = k.took(tx, p)
	if t, ok := k.takenFor(p, true); ok && ev.Writes && t.unchecked != "" && (ev.Kind == cycle.Succeed || ev.Kind == cycle.Fail || ev.Kind == cycle.LateEnd) {
		ev.Unchecked, ev.Reason = true, display.Cut(t.unchecked, 300, display.Ellipsis)
	}
}
