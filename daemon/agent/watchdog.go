package agent

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/agent/cycle"
	"github.com/agentd/agentd/daemon/agent/policy"
	"github.com/agentd/agentd/daemon/agent/watchdog"
	"github.com/agentd/agentd/daemon/store"
)

// watched is what the watchdog made of a proposal: the event that stores it, and for a
// loop the verdict, what followed (rethink or ask) and the note for the smart model.
type watched struct {
	ev      cycle.Event
	verdict watchdog.Verdict
	action  string
	note    string
	stop    bool // a schedule's run: the watchdog stops it instead of waiting for a person
}

// watch asks the watchdog whether p, which agent a just proposed in tx, goes round a
// loop. No: p is proposed as usual. Yes: the smart model thinks again, once, when
// configured; else a person is asked — on the proposal for a repeat, as ever, by pausing
// the agent for any other loop — and what is left of a `y -N` grant ends (the cycle's
// EndGrant). A schedule's run has nobody to ask: it is stopped. The decision is audited,
// and counted once tx commits.
// seen keeps the observations of the episodes (the runner's); smartNext is set when
// this proposal already came from the smart model.
func watch(tx *store.Tx, l *live, a *store.Agent, last, p *api.Proposal, cmds commands.Set, seen *observedSteps, smartNext bool, m Metrics) (watched, error) {
	w := watched{ev: cycle.Event{Kind: cycle.Proposed}}
	if a == nil || a.State != api.StateThinking {
		return w, nil // kept for the record only
	}
	v, err := loopIn(tx, l, a, last, p, cmds, seen)
	if err != nil || !v.Caught() {
		return w, err
	}
	w.verdict, w.action = v, "ask"
	owner, err := policy.Owner(tx, a) // a helper draws on its top agent's grant
	if err != nil {
		return w, err
	}
	grant, err := grantNote(tx, owner)
	if err != nil {
		return w, err
	}
	switch {
	case !smartNext && l.SmartModel != "":
		w.action, w.ev.Kind = "rethink", cycle.ProposedRethink
		w.note = "The watchdog saw you go round a loop: " + v.String() + ". It did not help: choose a different command or different arguments."
		if v.Kind == watchdog.Repeat {
			w.note = "You proposed the same command with the same arguments twice in a row. It did not help: choose a different command or different arguments."
		}
	case v.Kind == watchdog.Repeat:
		w.ev = cycle.Event{Kind: cycle.ProposedRepeat, Reason: fmt.Sprintf("the model proposed %s with the same arguments twice in a row: approve to run it again, or give feedback%s",
			p.Command, grant)}
	default:
		w.ev = cycle.Event{Kind: cycle.ProposedLoop, Reason: fmt.Sprintf("the watchdog caught a loop (%s): %s%s. Decide on step %d (approve runs it once more, feedback steers the agent), then resume: `agentctl resume %s`",
			v.Kind, v, grant, p.Step, a.Name)}
		if err := tx.SetStateValue(a.ID, policy.CaughtKey, []byte(p.ID)); err != nil {
			return w, err
		}
	}
	if w.action == "ask" && owner != a && grant != "" {
		if err := endGrant(tx, owner); err != nil { // the cycle's EndGrant ends a's own
			return w, err
		}
		if err := tx.UpdateAgent(owner); err != nil {
			return w, err
		}
	}
	if w.action == "ask" {
		if _, err := tx.ScheduleOfRun(a.RunID); err == nil {
			w.stop, w.action = true, "stop"
		} else if !errors.Is(err, store.ErrNotFound) {
			return w, err
		}
	}
	err = tx.Audit(a.ID, "watchdog", map[string]any{"proposal": p.ID, "step": p.Step, "kind": string(v.Kind), "period": v.Period,
		"steps": v.Steps, "loop": v.String(), "action": w.action, "grant_cancelled": grant != "" && w.action != "rethink"})
	kind, action := string(v.Kind), w.action
	tx.AfterCommit(func() { m.Loop(kind, action) })
	return w, err
}

// grantNote says that the proposal ends what was left of a's `y -N` grant, if anything was
// (a is the agent whose grant the proposal's agent draws on).
func grantNote(tx *store.Tx, a *store.Agent) (string, error) {
	n, err := grantLeft(tx, a)
	if err != nil || n == 0 {
		return "", err
	}
	if n == 1 {
		return "; the approval left of its y -N grant is cancelled", nil
	}
	return fmt.Sprintf("; the %d approvals left of its y -N grant are cancelled", n), nil
}

// grantLeft is how many proposals a's count grants (`y -N`, auto steps) still approve
// unasked in its current run.
func grantLeft(tx *store.Tx, a *store.Agent) (int, error) {
	live, err := tx.LiveGrants(a.ID, a.RunID)
	left := 0
	for _, g := range live {
		if g.Kind == api.GrantCount && g.StateAt(tx.Now(), a.RunID) == api.GrantActive {
			left += g.Left()
		}
	}
	return left, err
}

// loopIn is the watchdog's verdict on p, proposed by a: its run's latest steps from the
// episodes, and last, the proposal before p in the run — a call repeated from a proposal
// that never ran (refused, rethought) is a repeat too. seen keeps the observations of the
// episodes in the window from one proposal to the next (an episode never changes).
func loopIn(tx *store.Tx, l *live, a *store.Agent, last, p *api.Proposal, cmds commands.Set, seen *observedSteps) (watchdog.Verdict, error) {
	cfg := l.watchdogFor(a.Name)
	eps, err := tx.Episodes(a.ID, cfg.Window())
	if err != nil {
		return watchdog.Verdict{}, err
	}
	var steps []watchdog.Step
	window := make(observedSteps, len(eps))
	for _, e := range eps {
		if e.RunID != p.RunID {
			continue
		}
		class := classOf(cmds, e.Command)
		key := observedKey{e.ProposalID, e.Outcome, class}
		s, ok := (*seen)[key]
		if !ok {
			result := e.Result
			if e.Outcome == watchdog.Feedback {
				result = e.Feedback
			}
			s = watchdog.Observe(e.Step, e.Command, e.Args, class, e.Outcome, result)
		}
		window[key] = s
		steps = append(steps, s)
	}
	*seen = window
	next := watchdog.Observe(p.Step, p.Command, p.Args, classOf(cmds, p.Command), "", "")
	v := watchdog.Check(cfg, steps, next)
	if !v.Caught() && last != nil && last.Hash == p.Hash && p.Command != commands.AskUser {
		v = watchdog.Verdict{Kind: watchdog.Repeat, Period: 1, Steps: []int{last.Step, p.Step}, Calls: []string{next.Label}}
	}
	return v, nil
}

// observedSteps are the watchdog's observations of an agent's latest episodes, by the
// proposal each ended, its outcome and the command's class.
type observedSteps map[observedKey]watchdog.Step

type observedKey struct {
	proposal, outcome string
	class             commands.Class
}

func classOf(cmds commands.Set, name string) commands.Class {
	if c, ok := cmds.Get(name); ok {
		return c.Spec().Class
	}
	return ""
}

// watchdogFor is the watchdog's thresholds for the agent named name: its config table's,
// falling back field by field to the global ones. A helper ("boss/fetcher") follows its
// top agent's.
func (l *live) watchdogFor(name string) watchdog.Config {
	cfg := l.watchdogConfig()
	o, ok := l.Agents[name]
	if root, _, helper := strings.Cut(name, "/"); !ok && helper {
		o, ok = l.Agents[root]
	}
	if ok {
		if o.WatchdogFailures != nil && *o.WatchdogFailures > 0 {
			cfg.Failures = *o.WatchdogFailures
		}
		if o.WatchdogIdleSteps != nil && *o.WatchdogIdleSteps > 0 {
			cfg.IdleSteps = *o.WatchdogIdleSteps
		}
	}
	return cfg
}
