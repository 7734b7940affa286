package policy

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/agent/cycle"
	"github.com/agentd/agentd/daemon/agent/policy/bind"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/randid"
)

// Grants are the standing decisions that approve more than one proposal: y -N (a count
// grant of the next N-1, for the run), y! (this exact command and args), a pattern added
// with `agentctl policy AGENT add`, and a run's auto steps (--auto N, a schedule's
// autonomy). They live in the store, so they survive a restart; cycle.Authorize weighs
// them with the rules, read fresh in each authorization, so a revoke holds from the next
// proposal on. The agent's Policy.Mode "auto" and AutoSteps only mirror its count grants.

// ApplyGrant records what authorization au did to grants in tx: a use of the grant that
// approved, or the grant a person's decision made (on owner, the top agent, for the
// whole family), whose id and label d then carries. The caller writes owner when it is
// not a and its mirror changed (reported by changed).
func ApplyGrant(tx *store.Tx, a, owner *store.Agent, au cycle.Authorization, d *api.Decision) (changed bool, err error) {
	switch {
	case au.Grant != nil:
		if err := tx.UseGrant(au.Grant.ID); err != nil {
			return false, err
		}
		if au.Grant.Kind != api.GrantCount {
			return false, nil
		}
	case au.NewGrant != nil:
		g := *au.NewGrant
		g.ID, g.AgentID = randid.ID("g-"), owner.ID
		if g.Kind == api.GrantExact {
			// A y! is of this command in this agent's workspace: a helper's file of the
			// same name and contents runs code of its own around it.
			g.AgentID = a.ID
		}
		if g.Kind == api.GrantCount {
			// A new y -N replaces the count still running, as it always did.
			if err := EndCountGrants(tx, owner, "replaced by "+g.ID); err != nil {
				return false, err
			}
		}
		if err := tx.InsertGrant(&g); err != nil {
			return false, err
		}
		if err := tx.Audit(a.ID, "grant", &g); err != nil {
			return false, err
		}
		d.Grant, d.GrantLabel = g.ID, g.Name()
		if g.Count > 0 {
			d.GrantCount, d.GrantLeft = g.Count, g.Left()
		}
	default:
		return false, nil
	}
	return SyncPolicy(tx, owner)
}

// EndExactGrantsOnChange revokes the y! grants on a program line (bind.RunsFiles) that
// a's family holds — its top agent and every helper under it, whose workspaces nest in
// one another — now that step p of a changed a's workspace, or may have (changed says
// how, for the record), except the grant p ran under. A y! binds the files its line
// names, but the program also runs what it finds by itself (a module it imports, a
// default Makefile, a conftest.py): a change made by any other step, or by a rewind, may
// have rewritten that code, so the grant approves its line only while the workspace is
// as the grant's own runs left it, and the next such proposal asks a person again.
func EndExactGrantsOnChange(tx *store.Tx, a *store.Agent, p *api.Proposal, changed string) error {
	owner, err := Owner(tx, a)
	if err != nil {
		return err
	}
	live, err := familyGrants(tx, owner)
	if err != nil || len(live) == 0 {
		return err
	}
	ranUnder := ""
	if p != nil {
		d, err := tx.LastDecision(p.ID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if d != nil {
			ranUnder = d.Grant
		}
	}
	for _, g := range live {
		if g.Kind != api.GrantExact || !bind.RunsFiles(g.Command) || g.ID == ranUnder {
			continue
		}
		if _, err := tx.RevokeGrant(g.ID, changed); err != nil {
			return err
		}
		if err := tx.Audit(a.ID, "grant_ended", map[string]string{"grant": g.ID, "why": changed}); err != nil {
			return err
		}
	}
	return nil
}

// familyGrants are the live grants of owner, a top agent, and of every helper under it
// (MaxAncestors deep): a helper's workspace sits in its parent's, so a step of any of
// them may change what another's y! runs.
func familyGrants(tx *store.Tx, owner *store.Agent) ([]api.Grant, error) {
	var out []api.Grant
	level := []*store.Agent{owner}
	for depth := 0; len(level) > 0 && depth <= MaxAncestors; depth++ {
		var next []*store.Agent
		for _, a := range level {
			gs, err := tx.LiveGrants(a.ID, owner.RunID) // a helper's own --run grants end with its top agent's run
			if err != nil {
				return nil, err
			}
			out = append(out, gs...)
			hs, err := tx.Helpers(a.ID)
			if err != nil {
				return nil, err
			}
			next = append(next, hs...)
		}
		level = next
	}
	return out, nil
}

// EndCountGrants revokes owner's count grants still running, saying why.
func EndCountGrants(tx *store.Tx, owner *store.Agent, why string) error {
	live, err := tx.LiveGrants(owner.ID, owner.RunID)
	if err != nil {
		return err
	}
	for _, g := range live {
		if g.Kind == api.GrantCount {
			if _, err := tx.RevokeGrant(g.ID, why); err != nil {
				return err
			}
		}
	}
	return nil
}

// SyncPolicy sets owner's mode to mirror its count grants: auto with what is left of
// them on its current run, else back to ask. It reports whether that changed owner.
func SyncPolicy(tx *store.Tx, owner *store.Agent) (bool, error) {
	live, err := tx.LiveGrants(owner.ID, owner.RunID)
	if err != nil {
		return false, err
	}
	left := 0
	for _, g := range live {
		if g.Kind == api.GrantCount && g.StateAt(tx.Now(), owner.RunID) == api.GrantActive {
			left += g.Left()
		}
	}
	mode := owner.Policy.Mode
	switch {
	case left > 0 && mode != "continuous":
		mode = "auto"
	case left == 0 && mode == "auto":
		mode = "ask"
	}
	if mode == owner.Policy.Mode && left == owner.Policy.AutoSteps {
		return false, nil
	}
	owner.Policy.Mode, owner.Policy.AutoSteps = mode, left
	return true, nil
}

// GrantAutoSteps turns the auto steps a run starts with (--auto N, a schedule's
// autonomy) into a count grant of that run; a was just given opt's policy.
func GrantAutoSteps(tx *store.Tx, a *store.Agent, by, source string) error {
	if a.Policy.Mode != "auto" || a.Policy.AutoSteps <= 0 {
		return nil
	}
	if err := EndCountGrants(tx, a, "a new run's policy"); err != nil {
		return err
	}
	g := &api.Grant{ID: randid.ID("g-"), AgentID: a.ID, Kind: api.GrantCount, By: by, Source: source,
		Label: fmt.Sprintf("auto mode for %d steps", a.Policy.AutoSteps), Count: a.Policy.AutoSteps, RunID: a.RunID}
	if name, ok := strings.CutPrefix(by, "schedule "); ok {
		g.Label = "autonomy of schedule " + name
	}
	if g.Source == "" {
		g.Source = "api"
	}
	if err := tx.InsertGrant(g); err != nil {
		return err
	}
	return tx.Audit(a.ID, "grant", g)
}
