package agent

import (
	"context"
	"errors"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/agent/cycle"
	"github.com/agentd/agentd/daemon/effect"
	"github.com/agentd/agentd/daemon/store"
)

// withEffect adds to p's preview the effect preview of its command c, run ahead on a
// copy of a's workspace in the profile its approval will give (deny rules included): the
// policy's, for a proposal not yet stored that the policy approves unasked (an allow
// pattern's bounded profile), else a person's (a stored one run again is asked of a
// person). The policy is not decided here: its verdict only picks that profile and keeps
// a refused line out of the sandbox. The one decision is the proposal's transaction's
// (startTx), and the preview is applied only under an approval in the profile it ran in
// (previewed); one left to a person after all runs ahead again in theirs
// (askOnPersonRerun). st is where the deny rules are read, previews what runs it, room the
// disk it may take (agentBudgets.previewRoom); previewing, when set, is called as the run
// ahead starts (it may hold the step a minute), to show the agent previewing.
func withEffect(ctx context.Context, st *store.Store, previews *effect.Previews, room int64, l *live, a *store.Agent, p, last *api.Proposal, c commands.Command, previewing func()) {
	if previews == nil || p.Preview == nil || !l.effectPreview(a.Name) {
		return
	}
	if _, ok := c.(commands.EffectPreviewer); !ok {
		return
	}
	var prof commands.Profile
	var by *api.Decision // the approval the preview runs under; nil: a person's
	refused := false
	err := st.View(ctx, func(tx *store.Tx) error {
		spec := c.Spec()
		au, _, err := authorize(l, tx, a, p, last, &spec, nil)
		if err != nil {
			return err
		}
		if refused = au.Verdict == cycle.Refuse; refused {
			return nil
		}
		if p.Status == "" {
			by = au.Decision
		}
		prof, err = sandboxProfile(l, tx, a, by)
		return err
	})
	if refused {
		return
	}
	if err != nil {
		p.Preview.Effect = &api.Effect{None: "the agent's deny rules could not be read: " + err.Error()}
		return
	}
	env := commands.Env{Workspace: a.Workspace, AgentID: a.ID, Profile: prof}
	if previewing != nil {
		previewing()
	}
	var diff string
	p.Preview.Effect, diff = previews.Run(ctx, c, env, p.Args, l.Limits, room)
	if p.Preview.Effect != nil && by != nil {
		p.Preview.Effect.Profile = by.Profile
	}
	p.Preview.Diff, p.Preview.DiffCut = commands.CutDiff(diff, api.MaxPreviewDiff)
}

// runAhead adds to p, the model's proposal not yet stored, the effect preview of its
// command (withEffect), showing the agent previewing meanwhile.
func (r *runner) runAhead(ctx context.Context, l *live, a *store.Agent, p, last *api.Proposal, cmds commands.Set) {
	if c, ok := cmds.Get(p.Command); ok {
		previewing := func() { r.setState(ctx, nil, cycle.Previewing, previewingReason(p.Command)) } // through the applier, which publishes it
		withEffect(ctx, r.s.st, r.s.previews, r.s.agentBudgets.previewRoom(a), l, a, p, last, c, previewing)
	}
}

// boundedPreviewReason is why a proposal left to a person shows no effect preview.
const boundedPreviewReason = "ran ahead in the pattern's bounded profile; approving runs it in yours"

// askedBounded drops, in the transaction that stores p, an effect preview that ran ahead
// in the policy's bounded profile (withEffect) when p is left to a person after all (the
// watchdog caught a loop, a grant ended meanwhile): their approval runs the command in
// their profile, so that change is not what they would approve. shown is p as its event
// shows it. It reports whether it dropped one: then p runs ahead again in the person's
// profile once tx commits (askOnPersonRerun).
func askedBounded(tx *store.Tx, a *store.Agent, p, shown *api.Proposal) (bool, error) {
	if a == nil || p.Status != api.ProposalPending || p.Preview == nil || !p.Preview.Effect.Appliable() || p.Preview.Effect.Profile == "" {
		return false, nil
	}
	if _, err := apply(tx, &change{a: a, p: p, ev: cycle.Event{Kind: cycle.BoundedPreviewAsked, Reason: boundedPreviewReason}}); err != nil {
		return false, err
	}
	shown.Preview = p.Preview
	return true, nil
}

// askOnPersonRerun runs p, whose bounded run ahead askedBounded dropped, ahead again in a
// person's profile, the way a stale preview is (rerunPreview), and has the person asked
// on what that run gives (cycle.PreviewRerun): p's Ref changes with it, so a decision
// made on p as shown before is refused (look again). Nothing moves when p was decided,
// or its run ended, meanwhile.
func (r *runner) askOnPersonRerun(ctx context.Context, l *live, a *store.Agent, p *api.Proposal, cmds commands.Set) {
	c, ok := cmds.Get(p.Command)
	if !ok {
		return
	}
	rerun := rerunPreview(ctx, r.s.st, r.s.previews, r.s.agentBudgets.previewRoom(a), l, a, p, c)
	why := boundedPreviewReason
	if again := ranAgain(rerun, "in yours"); again != "" {
		why = "ran ahead in the pattern's bounded profile; " + again
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.s.st.Tx(ctx, func(tx *store.Tx) error {
		cur, err := tx.Agent(a.ID)
		if err != nil {
			return err
		}
		now, err := tx.Proposal(p.ID)
		if err != nil || now.Status != api.ProposalPending { // decided, or its run ended, meanwhile
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
	if err != nil && !errors.Is(err, store.ErrNotFound) && ctx.Err() == nil { // paused or stopped: asked on the dropped one
		r.s.log.Error("asking on the preview run again", "agent", a.ID, "proposal", p.ID, "err", err)
	}
}

// previewingReason is the agent's state reason while its proposal runs ahead.
func previewingReason(command string) string {
	return "previewing the effect of " + command + " on a copy of the workspace…"
}

// effectPreview reports whether agent name's shell and python proposals run ahead.
func (l *live) effectPreview(name string) bool {
	if o, ok := l.Agents[name]; ok && o.EffectPreview != nil {
		return *o.EffectPreview
	}
	return !l.NoEffectPreview
}
