package cli_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/apitest"
)

// grantRoutes serves the grants of the fake's agents: researcher has a y -3 running, a
// revoked y! and a pattern grant; a pattern grant previews the proposals it matches.
func (f *fakeDaemon) grantRoutes() {
	fk := &f.api
	made := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	revoked := made.Add(time.Hour)
	grants := func(a *api.Agent) []api.Grant {
		if a.Name != "researcher" {
			return []api.Grant{}
		}
		return []api.Grant{
			{ID: "g-4e", AgentID: a.ID, Kind: api.GrantExact, By: "root", Source: "agentctl", Label: "y!", Command: "execute_python_file",
				Hash: "5be0c1d2e3f4a5b6c7d8e9f0a1b2c3d4", CreatedAt: made, State: api.GrantActive,
				Files: []api.BoundFile{{Path: "check.py", SHA256: "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f809"}}},
			{ID: "g-3c", AgentID: a.ID, Kind: api.GrantPattern, By: "root", Source: "agentctl", Label: "policy add",
				Pattern: "write_file(notes/*)", Used: 4, CreatedAt: made, State: api.GrantActive},
			{ID: "g-2b", AgentID: a.ID, Kind: api.GrantCount, By: "root", Source: "agentctl", Label: "y -3", Count: 2, Used: 1,
				RunID: "r-2", CreatedAt: made, State: api.GrantActive},
			{ID: "g-1a", AgentID: a.ID, Kind: api.GrantExact, By: "U123", Source: "slack", Label: "y!", Command: "write_file",
				Hash: "9f2c1e0d4b5a69788796a5b4c3d2e1f0", CreatedAt: made, RevokedAt: &revoked, RevokedBy: "root", State: api.GrantRevoked},
		}
	}
	apitest.Handle(fk, api.GrantsRoute, func(_ context.Context, ref string, _ api.None) (*api.GrantList, error) {
		a, err := f.agent(ref)
		if err != nil {
			return nil, err
		}
		return &api.GrantList{AgentID: a.ID, Agent: a.Name, Grants: grants(a)}, nil
	})
	apitest.Handle(fk, api.AddGrantRoute, func(_ context.Context, ref string, req api.GrantRequest) (*api.GrantPreview, error) {
		a, err := f.agent(ref)
		if err != nil {
			return nil, err
		}
		if req.Pattern == "bad(" {
			return nil, api.Errorf(api.ErrBadRequest, "pattern bad(: no closing parenthesis: write command(glob), e.g. write_file(notes/*)")
		}
		pv := &api.GrantPreview{AgentID: a.ID, Pattern: req.Pattern, Looked: 12, Matches: []api.GrantMatch{
			{ProposalID: "p-11", Step: 11, Command: "write_file", Subject: "notes/today.md"},
			{ProposalID: "p-4", Step: 4, Command: "write_file", Subject: "notes/plan.md"},
		}}
		if req.Pattern == "write_file(nowhere/*)" {
			pv.Matches = []api.GrantMatch{}
		}
		if !req.DryRun {
			pv.Grant = &api.Grant{ID: "g-4d", AgentID: a.ID, Kind: api.GrantPattern, By: req.By, Source: req.Source,
				Label: "policy add", Pattern: req.Pattern, Count: req.Count, CreatedAt: made, State: api.GrantActive}
		}
		return pv, nil
	})
	apitest.Handle(fk, api.RevokeGrantRoute, func(_ context.Context, ref string, req api.RevokeRequest) (*api.Grant, error) {
		a, err := f.agent(ref)
		if err != nil {
			return nil, err
		}
		for _, g := range grants(a) {
			if g.ID != req.ID {
				continue
			}
			if g.RevokedAt != nil {
				return nil, api.Errorf(api.ErrConflict, "grant %s was revoked already, by %s at %s", g.ID, g.RevokedBy, g.RevokedAt.Format(time.RFC3339))
			}
			g.RevokedAt, g.RevokedBy, g.State = &revoked, req.By, api.GrantRevoked
			return &g, nil
		}
		return nil, api.Errorf(api.ErrNotFound, "agent %s has no grant %s: `agentctl policy %s` lists its grants", a.Name, req.ID, a.Name)
	})
}

// grantReplay is run r-2: a y -3 and the two proposals its grant approved.
func grantReplay() *api.Replay {
	at := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	step := func(n int, path string, d api.Decision) api.ReplayStep {
		id := "p-" + string(rune('0'+n))
		d.ProposalID, d.At = id, at.Add(time.Duration(n)*time.Minute)
		return api.ReplayStep{
			Proposal: api.Proposal{ID: id, Step: n, Command: "write_file", Args: json.RawMessage(`{"path":"` + path + `"}`),
				CreatedAt: at.Add(time.Duration(n) * time.Minute), Status: api.ProposalSucceeded},
			Decisions: []api.Decision{d},
			Episode:   &api.Episode{Step: n, Command: "write_file", Outcome: "succeeded", Result: "wrote " + path}}
	}
	return &api.Replay{
		Run: api.Run{ID: "r-2", AgentID: "a-1", Agent: "researcher", Task: "write notes", StartedAt: at},
		Steps: []api.ReplayStep{
			step(1, "notes/a.md", api.Decision{Kind: api.DecisionApprove, Count: 3, By: "root", Source: "agentctl", Grant: "g-2b", GrantLabel: "root's y -3", GrantCount: 2, GrantLeft: 2}),
			step(2, "notes/b.md", api.Decision{Kind: api.DecisionApprove, Count: 1, By: "root", Source: "grant", Grant: "g-2b", GrantLabel: "root's y -3", GrantCount: 2, GrantLeft: 1}),
			step(3, "notes/c.md", api.Decision{Kind: api.DecisionApprove, Count: 1, By: "root", Source: "grant", Grant: "g-2b", GrantLabel: "root's y -3", GrantCount: 2, GrantLeft: 0}),
		},
	}
}

// TestPolicyAddAsksBeforeStoring: the preview comes first; only "y" stores the grant.
func TestPolicyAddAsksBeforeStoring(t *testing.T) {
	f := newFakeDaemon(t)
	for _, c := range []struct {
		name, stdin string
		code        int
		stored      bool
	}{
		{"yes_stores", "y\n", 0, true},
		{"no_keeps_nothing", "n\n", 1, false},
		{"eof_keeps_nothing", "", 1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := runCLI(t, c.stdin, "--socket", f.sock, "policy", "researcher", "add", "write_file(notes/*)")
			if r.code != c.code || !strings.Contains(r.stdout, "would have approved 2 of the 12") {
				t.Fatalf("exit %d, want %d; no preview first?\n%s", r.code, c.code, r)
			}
			if got := strings.Contains(r.stdout, "stored grant g-4d"); got != c.stored {
				t.Errorf("stored %v, want %v\n%s", got, c.stored, r)
			}
		})
	}
}
