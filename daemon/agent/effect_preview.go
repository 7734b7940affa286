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
// policy's, for a proposal not yet stored that the policy approves unasked (an allow
// pattern's bounded profile), else a person's (a stored one run again is asked of a
// person). The policy is not decided here: its verdict only picks that profile and keeps
// a refused line out of the sandbox. The one decision is the proposal's transaction's
// (startTx), and the preview is applied only under an approval in the profile it ran in
// (previewed); one left to a person after all runs ahead again in theirs
// (askOnPersonRerun). st is where the deny rules are read, previews what runs it, room the
// disk it may take (budgets.previewRoom); previewing, when set, is called as the run
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
	p.Preview.Effect, diff = previews.Run(ctx, c, env, p.Args, l.commandLimits(), room)
	if p.Preview.Effect != nil && by != nil {
		p.Preview.Effect.Profile = by.Profile
	}
	p.Preview.Diff, p.Preview.DiffCut = commands.CutDiff(diff, api.MaxPreviewDiff)
}

// boundedPreviewReason is why a proposal left to a person shows no effect preview while
// it runs ahead again in their profile (askOnPersonRerun); approving meanwhile runs the
// command itself, as any proposal with no change to apply, and the run again, once in,
// then moves nothing. It also marks the proposal as waiting for that run (awaitsRerun).
const boundedPreviewReason = "ran ahead in the pattern's bounded profile, so it runs ahead again in yours: approving before that run is in runs the command itself, in yours"

// notRerunReason is why once its run ahead again in the person's profile gave no preview
// at all (its command is gone, the policy now refuses it, previews were turned off).
const notRerunReason = "ran ahead in the pattern's bounded profile and could not run ahead again in yours: approving runs the command itself, in yours"

// awaitsRerun reports whether p's bounded preview was dropped for a person's and its run
// ahead again in their profile is not in (cycle.Round.Rerun): it is not begun, or a
// pause or a restart cut it short.
func awaitsRerun(p *api.Proposal) bool {
	return p.Status == api.ProposalPending && p.Preview != nil && p.Preview.Effect != nil && p.Preview.Effect.None == boundedPreviewReason
}

// rerunReason is what the person is told once p's preview ran again in their profile
// (rerun: what that gave), as its state reason and why there is nothing to apply.
func rerunReason(rerun *api.Preview) string {
	if again := ranAgain(rerun, "in yours"); again != "" {
		return "ran ahead in the pattern's bounded profile; " + again
	}
	return notRerunReason
}

// askedBounded drops, in the transaction that stores p, an effect preview that ran ahead
// in the policy's bounded profile (withEffect) when p is left to a person after all (the
// watchdog caught a loop, a grant ended meanwhile): their approval runs the command in
// their profile, so that change is not what they would approve. shown is p as its event
// shows it. p then awaits its run ahead again in the person's profile (awaitsRerun),
// which the loop's next round makes (cycle.RunAhead, askOnPersonRerun).
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
	return l.EffectPreview
}

// rerunPreview is p's preview with its effect preview run again, on a's workspace as it
// is now and in a person's profile: what a person decides on once the one shown went
// stale, or ran ahead in a pattern's bounded profile (askOnPersonRerun). Nil when none
// is made.
func rerunPreview(ctx context.Context, st *store.Store, previews *effect.Previews, room int64, l *live, a *store.Agent, p *api.Proposal, c commands.Command) *api.Preview {
	if p.Preview == nil {
		return nil
	}
	fresh := *p.Preview
	fresh.Effect, fresh.Diff, fresh.DiffCut = nil, "", false
	q := *p
	q.Preview = &fresh
	withEffect(ctx, st, previews, room, l, a, &q, nil, c, nil)
	return q.Preview
}

// ranAgain says what approving does once a proposal's preview was run again (where: how),
// rerun being what that run gave; "" when none was made.
func ranAgain(rerun *api.Preview, where string) string {
	switch {
	case rerun != nil && rerun.Effect.Appliable():
		return "its preview was run again " + where + ": approving applies that change"
	case rerun != nil && rerun.Effect != nil:
		return "its preview was run again and gives nothing to apply (" + rerun.Effect.None + "): approving runs the command itself"
	}
	return ""
}
