package agent

import (
	"context"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/agent/cycle"
	"github.com/agentd/agentd/daemon/effect"
	"github.com/agentd/agentd/daemon/store"
)

// withEffect adds to p's preview the effect preview of its command c, run ahead on a
// copy of a's workspace in the profile its approval will give (deny rules included): the
// policy's, for a pending proposal the policy approves unasked (an allow pattern's
// bounded profile), else a person's. The effect records that profile: an approval in
// another profile runs the command itself (previewed). st is where the deny rules are
// read, previews what runs it, room the disk it may take (agentBudgets.previewRoom);
// previewing, when set, is called as the run ahead starts (it may hold the step a
// minute), to show the agent previewing.
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
		// What the policy refuses never runs, not even ahead: the proposal's transaction
		// decides again, this only keeps a refused line out of the sandbox.
		spec := c.Spec()
		au, _, err := authorize(l, tx, a, p, last, &spec, nil)
		if err != nil {
			return err
		}
		if refused = au.Verdict == cycle.Refuse; refused {
			return nil
		}
		if p.Status == "" || p.Status == api.ProposalPending {
			// Weighed by the policy before any person. A stale preview's re-run (its
			// proposal started) is asked of a person whatever the patterns say.
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

// boundedPreviewReason is why a proposal left to a person shows no effect preview.
const boundedPreviewReason = "ran ahead in the pattern's bounded profile; approving runs it in yours"

// askedBounded drops, in the transaction that stores p, an effect preview that ran ahead
// in the policy's bounded profile (withEffect) when p is left to a person after all (the
// watchdog caught a loop, a grant ended meanwhile): their approval runs the command in
// their profile, so that change is not what they would approve. shown is p as its event
// shows it.
func askedBounded(tx *store.Tx, a *store.Agent, p, shown *api.Proposal) error {
	if a == nil || p.Status != api.ProposalPending || p.Preview == nil || !p.Preview.Effect.Appliable() || p.Preview.Effect.Profile == "" {
		return nil
	}
	if _, err := apply(tx, &change{a: a, p: p, ev: cycle.Event{Kind: cycle.BoundedPreviewAsked, Reason: boundedPreviewReason}}); err != nil {
		return err
	}
	shown.Preview = p.Preview
	return nil
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
