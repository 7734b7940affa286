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

// previewEffect carries out the effects on a proposal's effect preview: apply_preview
// records, before anything is applied, that the captured change and not the command is
// what this step runs (the runner then applies it); drop_preview stores why the change
// can no longer be applied, so the next approval runs the command itself.
func previewEffect(tx *store.Tx, p *api.Proposal, e cycle.Effect) error {
	if p == nil || p.Preview == nil || !p.Preview.Effect.Appliable() {
		return errMissing
	}
	eff := p.Preview.Effect
	if e.Kind == cycle.ApplyPreview {
		return tx.Audit(p.AgentID, "apply_preview", map[string]any{"proposal": p.ID, "command": p.Command,
			"from_checkpoint": eff.From, "to_checkpoint": eff.To, "change": eff.Summary})
	}
	pv, dropped := *p.Preview, *eff
	dropped.None, dropped.From, dropped.To = e.Reason, 0, 0
	pv.Effect, p.Preview = &dropped, &pv
	return tx.SetProposalPreview(p.ID, p.Preview)
}

// previewed reports whether approving p applies its effect preview: it captured a
// change, and the profile p runs in may write the workspace (a bounded read-only
// approval runs the command, which can then change nothing).
func previewed(p *api.Proposal, prof commands.Profile) bool {
	return p.Preview != nil && p.Preview.Effect.Appliable() && (!prof.Bounded || prof.Write)
}

// withEffect adds to p's preview the effect preview of its command c, run ahead on a
// copy of a's workspace in the profile a person's approval gives (deny rules included).
// st is where the deny rules are read, previews what runs it.
func withEffect(ctx context.Context, st *store.Store, previews *effect.Previews, l *live, a *store.Agent, p *api.Proposal, c commands.Command) {
	if previews == nil || p.Preview == nil || !l.effectPreview(a.Name) {
		return
	}
	if _, ok := c.(commands.EffectPreviewer); !ok {
		return
	}
	var prof started
	err := st.View(ctx, func(tx *store.Tx) error { return sandboxProfile(l, tx, a, &prof) })
	if err != nil {
		p.Preview.Effect = &api.Effect{None: "the agent's deny rules could not be read: " + err.Error()}
		return
	}
	env := commands.Env{Workspace: a.Workspace, AgentID: a.ID, Profile: prof.profile}
	var diff string
	p.Preview.Effect, diff = previews.Run(ctx, c, env, p.Args, l.Limits)
	p.Preview.Diff, p.Preview.DiffCut = commands.CutDiff(diff, api.MaxPreviewDiff)
}

// applyPreview puts p's captured change in place in a's workspace: the step's output,
// or an error wrapping effect.ErrStale when the workspace changed since the preview.
func applyPreview(ctx context.Context, previews *effect.Previews, a *store.Agent, p *api.Proposal) (string, error) {
	if previews == nil {
		return "", errors.New("effect previews are off: the captured change cannot be applied")
	}
	return previews.Apply(ctx, a.ID, a.Workspace, p.Preview.Effect)
}

// effectPreview reports whether agent name's shell and python proposals run ahead.
func (l *live) effectPreview(name string) bool {
	if o, ok := l.Agents[name]; ok && o.EffectPreview != nil {
		return *o.EffectPreview
	}
	return !l.NoEffectPreview
}

// staleEnd is the end of p's step when its preview's change was not applied, the
// workspace having changed since (err): a person decides again, and approving then runs
// the command itself.
func staleEnd(p *api.Proposal, err error) stepEnd {
	why := err.Error() + "; approving again runs the command itself"
	result := "Not applied: " + why
	return stepEnd{ev: cycle.Event{Kind: cycle.PreviewStale, Reason: why, Result: result},
		ep: episodeOf(p, "interrupted", result, ""), disk: -1}
}
