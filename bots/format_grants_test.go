package bots

import (
	"testing"

	"github.com/agentd/agentd/api"
)

// TestDecisionSpansNameTheGrant: an automatic approval names its grant and what is left
// of it, never "policy"; a person's y -N or y! names the grant it made.
func TestDecisionSpansNameTheGrant(t *testing.T) {
	for _, c := range []struct {
		name string
		d    api.Decision
		want string
		from string // where the grant was made
	}{
		{"count_grant", api.Decision{Kind: api.DecisionApprove, Count: 1, Source: "grant", By: "root", Grant: "g-1", GrantLabel: "root's y -3", GrantCount: 2, GrantLeft: 1},
			"✅ Approved by root's y -3 (1 of 2 left)", ""},
		{"pattern_grant", api.Decision{Kind: api.DecisionApprove, Count: 1, Source: "grant", By: "root", Grant: "g-2", Pattern: "write_file(notes/*)",
			GrantLabel: "rule write_file(notes/*) added by root 2026-11-24"}, "✅ Approved by rule write_file(notes/*) added by root 2026-11-24", ""},
		{"person_approve_n", api.Decision{Kind: api.DecisionApprove, Count: 3, Source: "slack", By: "U1", Grant: "g-3", GrantLabel: "U1's y -3", GrantCount: 2, GrantLeft: 2},
			"✅ Approved ×3 by @U1 (grant g-3)", ""},
		{"person_always_exact", api.Decision{Kind: api.DecisionApprove, Count: 1, Scope: api.ScopeAgent, Source: "discord", By: "ann", Grant: "g-4"},
			"✅ Approved always (this exact command) by ann via discord (grant g-4)", ""},
		{"person_always_before_grants", api.Decision{Kind: api.DecisionApprove, Count: 1, Scope: api.ScopeAgent, Pattern: "ls(*)", Source: "agentctl", By: "bob"},
			"✅ Approved always (ls(*)) by bob via agentctl", ""},
		{"policy_pattern", api.Decision{Kind: api.DecisionApprove, Count: 1, Source: "policy", By: "allow pattern read_file(*)", Pattern: "read_file(*)"},
			"✅ Approved by policy (read_file(*))", ""},
		{"grant_by_id_made_here", api.Decision{Kind: api.DecisionApprove, Count: 1, Source: "grant", By: "U123", Grant: "g-5", GrantLabel: "U123's y -3", GrantCount: 2, GrantLeft: 2},
			"✅ Approved by @U123's y -3 (2 of 2 left)", "slack"},
		{"grant_by_id_made_elsewhere", api.Decision{Kind: api.DecisionApprove, Count: 1, Source: "grant", By: "U123", Grant: "g-6", GrantLabel: "U123's y -3", GrantCount: 2, GrantLeft: 2},
			"✅ Approved by U123's y -3 (2 of 2 left)", "agentctl"},
		{"grant_by_discord_id", api.Decision{Kind: api.DecisionApprove, Count: 1, Source: "grant", By: "123456789012345678", Grant: "g-7", GrantLabel: "123456789012345678's y -2", GrantCount: 1, GrantLeft: 1},
			"✅ Approved by 123456789012345678's y -2 (1 of 1 left)", "discord"},
		{"grant_by_forged_id", api.Decision{Kind: api.DecisionApprove, Count: 1, Source: "grant", By: "U1><!channel>", Grant: "g-8", GrantLabel: "U1><!channel>'s y -3 (2 of 2 left)"},
			"✅ Approved by U1><!channel>'s y -3 (2 of 2 left)", "slack"},
		{"person_forged_id", api.Decision{Kind: api.DecisionDeny, Source: "slack", By: "U1><!channel>"},
			"⛔ Denied by U1><!channel>", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := ""
			for _, s := range DecisionSpans(&c.d, "slack", c.from) {
				if s.User != "" {
					got += "@" + s.User
				}
				got += s.Text
			}
			if got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}
