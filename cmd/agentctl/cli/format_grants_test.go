package cli

import (
	"testing"

	"github.com/agentd/agentd/api"
)

// TestDecisionStringNamesTheGrant: follow shows an automatic approval by its grant, with
// what was left of it, never "by policy" when no policy decided.
func TestDecisionStringNamesTheGrant(t *testing.T) {
	for _, c := range []struct {
		name string
		d    api.Decision
		want string
	}{
		{"grant_countdown", api.Decision{Kind: api.DecisionApprove, Count: 1, Source: "grant", By: "root", Grant: "g-1", GrantLabel: "root's y -3", GrantCount: 2, GrantLeft: 1},
			"approved by root's y -3 (1 of 2 left)"},
		{"label_written_before_count_fields", api.Decision{Kind: api.DecisionApprove, Count: 1, Source: "grant", By: "root", Grant: "g-1", GrantLabel: "root's y -3 (1 left)"},
			"approved by root's y -3 (1 left)"},
		{"pattern_grant", api.Decision{Kind: api.DecisionApprove, Count: 1, Source: "grant", By: "root", Grant: "g-2",
			GrantLabel: "rule write_file(notes/*) added by root 2026-11-24"}, "approved by rule write_file(notes/*) added by root 2026-11-24"},
		{"person_y_n_makes_grant", api.Decision{Kind: api.DecisionApprove, Count: 3, Source: "agentctl", By: "root", Grant: "g-3"},
			"approved (and the next 2) by root via agentctl [grant g-3]"},
		{"policy_pattern", api.Decision{Kind: api.DecisionApprove, Count: 1, Source: "policy", By: "allow pattern read_file(*)", Pattern: "read_file(*)"},
			"approved by policy (allow pattern read_file(*))"},
		{"person", api.Decision{Kind: api.DecisionDeny, Source: "slack", By: "ann"}, "denied by ann via slack"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := decisionString(&c.d); got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}
