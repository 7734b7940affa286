package agent

import (
	"context"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/effect"
	"github.com/agentd/agentd/daemon/store"
)

// withEffect adds to p's preview the effect preview of its command c, run ahead on a
// copy of a's workspace in the profile a person's approval gives (deny rules included).
// st is where the deny rules are read, previews what runs it, room the disk it may take
// (agentBudgets.previewRoom); previewing, when set, is called as the run ahead starts
// (it may hold the step a minute), to show the agent previewing.
func withEffect(ctx context.Context, st *store.Store, previews *effect.Previews, room int64, l *live, a *store.Agent, p *api.Proposal, c commands.Command, previewing func()) {
	if previews == nil || p.Preview == nil || !l.effectPreview(a.Name) {
		return
	}
	if _, ok := c.(commands.EffectPreviewer); !ok {
		return
	}
	var prof commands.Profile
	refused := false
	err := st.View(ctx, func(tx *store.Tx) error {
		// What the deny rules refuse never runs, not even ahead: the proposal's
		// transaction decides, this only keeps a refused line out of the sandbox.
		var err error
		prof, refused, err = previewProfile(l, tx, a, p, c.Spec())
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
	p.Preview.Diff, p.Preview.DiffCut = commands.CutDiff(diff, api.MaxPreviewDiff)
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
