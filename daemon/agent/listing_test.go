package agent

import (
	"context"
	"errors"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/store"
)

// Listing the agents a page at a time gives each agent once, oldest first, whatever the
// page size, and goes on right after the agent a page ended with is removed; a cursor
// the daemon did not give is refused, naming the fix. A brief listing keeps which
// proposal waits and drops its thoughts, args and preview.
func TestListAgentsPages(t *testing.T) {
	h := newHarness(t)
	seedAwaiting(t, h.st, 7)
	views := h.sup.agentViews
	ctx := context.Background()
	all, err := views.ListAgents(ctx, api.AgentQuery{}, api.Page{})
	if err != nil || len(all.Agents) != 7 || all.Next != "" {
		t.Fatalf("the whole listing: %d agents, next %q, %v", len(all.Agents), all.Next, err)
	}
	ids := func(as []api.Agent) (out []string) {
		for _, a := range as {
			out = append(out, a.ID)
		}
		return out
	}
	for _, limit := range []int{1, 2, 3, 7, 8} {
		var got []string
		p := api.Page{Limit: limit}
		for pages := 0; ; pages++ {
			l, err := views.ListAgents(ctx, api.AgentQuery{}, p)
			if err != nil || pages > 10 {
				t.Fatalf("limit %d, page %d: %v", limit, pages, err)
			}
			got = append(got, ids(l.Agents)...)
			if l.Next == "" {
				break
			}
			p.After = l.Next
		}
		if want := ids(all.Agents); len(got) != len(want) || got[0] != want[0] || got[len(got)-1] != want[len(want)-1] {
			t.Errorf("limit %d: pages gave %v, want %v", limit, got, want)
		}
	}

	first, err := views.ListAgents(ctx, api.AgentQuery{}, api.Page{Limit: 3})
	if err != nil || len(first.Agents) != 3 || first.Next == "" {
		t.Fatalf("first page: %+v, %v", first, err)
	}
	if err := h.st.Tx(ctx, func(tx *store.Tx) error { return tx.DeleteAgent(first.Agents[2].ID) }); err != nil {
		t.Fatal(err)
	}
	rest, err := views.ListAgents(ctx, api.AgentQuery{}, api.Page{After: first.Next, Limit: 10})
	if err != nil || len(rest.Agents) != 4 || rest.Agents[0].ID != all.Agents[3].ID {
		t.Errorf("the page after a removed agent: %v, %v; want the 4 agents after it", ids(rest.Agents), err)
	}

	for _, bad := range []string{"a-0123", "-4", "x"} {
		_, err := views.ListAgents(ctx, api.AgentQuery{}, api.Page{After: bad, Limit: 2})
		if !errors.Is(err, api.ErrBadRequest) {
			t.Errorf("after=%q: %v, want a bad request", bad, err)
		}
	}

	brief, err := views.ListAgents(ctx, api.AgentQuery{Brief: true}, api.Page{Limit: 1})
	if err != nil || len(brief.Agents) != 1 {
		t.Fatalf("brief: %v", err)
	}
	full, bp := all.Agents[0].Pending, brief.Agents[0].Pending
	if bp == nil || bp.ID != full.ID || bp.Command != full.Command || bp.Hash != full.Hash ||
		bp.Thoughts != (api.Thoughts{}) || bp.Preview != nil || (bp.Args != nil && string(bp.Args) != "null") {
		t.Errorf("brief pending proposal %+v, want %s's id, command and hash only", bp, full.ID)
	}
}
