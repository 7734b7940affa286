package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/apitest"
)

// TestWhyGolden runs testdata/why/*.golden: a policy approval by a pattern (text and
// --json), a person's denial, an agent with no decision yet and an unknown agent.
func TestWhyGolden(t *testing.T) {
	f := newFakeDaemon(t)
	t.Setenv(api.SocketEnv, f.sock)
	at := time.Date(2026, 11, 21, 9, 5, 0, 0, time.UTC)
	whys := map[string]*api.Why{
		"researcher": {AgentID: "a-1", Agent: "researcher", Layer: "config",
			Proposal: api.Proposal{ID: "p-1", AgentID: "a-1", Step: 3, Command: "read_file",
				Args: json.RawMessage(`{"path":"notes.md"}`), Status: api.ProposalSucceeded},
			Decision: api.Decision{ProposalID: "p-1", Kind: api.DecisionApprove, Count: 1, Source: "policy",
				By: "allow pattern read_file(*)", Pattern: "read_file(*)", At: at},
			Reason: "auto-approved by the allow pattern read_file(*) (config)"},
		"writer": {AgentID: "a-5", Agent: "writer",
			Proposal: api.Proposal{ID: "p-9", AgentID: "a-5", Step: 6, Command: "write_file",
				Args: json.RawMessage(`{"path":"notes/b.md"}`), Status: api.ProposalSucceeded},
			Decision: api.Decision{ProposalID: "p-9", Kind: api.DecisionApprove, Count: 1, Source: "grant", By: "root",
				Grant: "g-2b", GrantLabel: "root's y -3", GrantCount: 2, GrantLeft: 1, At: at},
			Grant: &api.Grant{ID: "g-2b", Kind: api.GrantCount, By: "root", Source: "agentctl", Label: "y -3", Count: 2, Used: 2,
				RunID: "r-1", State: api.GrantUsedUp},
			Reason: "approved by root's y -3 (1 left) (grant g-2b), without asking"},
		"a-2": {AgentID: "a-2", Agent: "scribe",
			Proposal: api.Proposal{ID: "p-7", AgentID: "a-2", Step: 1, Command: "execute_shell",
				Args: json.RawMessage(`{"command":"rm -rf build"}`), Status: api.ProposalDenied},
			Decision: api.Decision{ProposalID: "p-7", Kind: api.DecisionDeny, Source: "slack", By: "alice", At: at},
			Reason:   "denied by alice via slack; the run stopped"},
	}
	apitest.Handle(&f.api, api.WhyRoute, func(_ context.Context, ref string, _ api.None) (*api.Why, error) {
		if w, ok := whys[ref]; ok {
			return w, nil
		}
		if ref == "a-3" {
			return nil, api.Errorf(api.ErrNotFound, "agent builder has no decided proposal yet: `agentctl show builder` shows what it waits for")
		}
		return nil, fmt.Errorf("no agent %q: %w", ref, api.ErrNotFound)
	})
	runGoldens(t, f, t.TempDir(), "testdata/why/*.golden")
}
