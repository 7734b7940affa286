package agent

import (
	"context"
	"errors"
	"testing"

	"github.com/agentd/agentd/api"
)

func TestWhyNamesTheRuleOrPerson(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Allow = []string{"list_folder(*)"} })
	h.fake.Script(
		reply("list_folder", map[string]string{"path": "."}),                         // allowed by config
		reply("write_file", map[string]string{"path": "notes.txt", "contents": "x"}), // asks
	)
	a := h.create(api.CreateAgentRequest{})
	p := h.pending(a.ID)
	ctx := context.Background()
	w, err := h.sup.policyService.Why(ctx, a.Name)
	if err != nil {
		t.Fatal(err)
	}
	if w.Proposal.Command != "list_folder" || w.Decision.Source != "policy" || w.Decision.Pattern != "list_folder(*)" || w.Layer != "config" {
		t.Errorf("why before the person decided = %+v, want list_folder approved by list_folder(*) from config", w)
	}
	if want := "auto-approved by the allow pattern list_folder(*) (config)"; w.Reason != want {
		t.Errorf("reason = %q, want %q", w.Reason, want)
	}
	if _, err := h.decide(a.ID, p, "n"); err != nil {
		t.Fatal(err)
	}
	w, err = h.sup.policyService.Why(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if w.Proposal.ID != p.ID || w.Decision.Kind != api.DecisionDeny || w.Layer != "" {
		t.Errorf("why after the denial = %+v, want the denial of %s", w, p.ID)
	}
	if want := "denied by " + w.Decision.By + " via " + w.Decision.Source + "; the run stopped"; w.Reason != want {
		t.Errorf("reason = %q, want %q", w.Reason, want)
	}
	if _, err := h.sup.policyService.Why(ctx, "nobody"); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("Why(unknown agent) = %v, want ErrNotFound", err)
	}
}

func TestWhyBeforeAnyDecision(t *testing.T) {
	h := newHarness(t)
	h.fake.Script(reply("write_file", map[string]string{"path": "a.txt", "contents": "x"}))
	a := h.create(api.CreateAgentRequest{})
	h.pending(a.ID)
	if _, err := h.sup.policyService.Why(context.Background(), a.ID); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("Why with only a pending proposal = %v, want ErrNotFound", err)
	}
}

func TestWhyReason(t *testing.T) {
	cases := []struct {
		name  string
		d     api.Decision
		layer string
		want  string
	}{
		{"policy_pattern", api.Decision{Kind: api.DecisionApprove, Source: "policy", By: "allow pattern read_file(*)", Pattern: "read_file(*)"}, "stored",
			"auto-approved by the allow pattern read_file(*) (stored)"},
		{"policy_auto_read", api.Decision{Kind: api.DecisionApprove, Source: "policy", By: "auto_read"}, "",
			"auto-approved: a read command, and the agent's policy runs reads unasked (auto_read)"},
		{"policy_mode", api.Decision{Kind: api.DecisionApprove, Source: "policy", By: "auto (alice's)"}, "",
			"approved by the policy mode auto (alice's)"},
		{"policy_deny", api.Decision{Kind: api.DecisionFeedback, Source: "policy", By: "deny pattern rm(*)", Pattern: "rm(*)"}, "config",
			"refused by the deny pattern rm(*) (config): the model was told to choose another way"},
		{"person_approve", api.Decision{Kind: api.DecisionApprove, Count: 1, Source: "slack", By: "alice"}, "",
			"approved by alice via slack"},
		{"person_approve_n", api.Decision{Kind: api.DecisionApprove, Count: 3, Source: "agentctl", By: "bob"}, "",
			"approved by bob via agentctl for this and the next 2 proposals (y -3)"},
		{"person_always", api.Decision{Kind: api.DecisionApprove, Count: 1, Scope: api.ScopeAgent, Pattern: "ls(*)", Source: "discord", By: "carol"}, "",
			"approved by carol via discord, who also allowed ls(*) for the agent from then on"},
		{"grant_count", api.Decision{Kind: api.DecisionApprove, Count: 1, Source: "grant", By: "root", Grant: "g-1", GrantLabel: "root's y -3 (1 left)"}, "",
			"approved by root's y -3 (1 left) (grant g-1), without asking"},
		{"person_approve_n_grant", api.Decision{Kind: api.DecisionApprove, Count: 3, Source: "agentctl", By: "bob", Grant: "g-2"}, "",
			"approved by bob via agentctl for this and the next 2 proposals (y -3, grant g-2)"},
		{"person_always_exact", api.Decision{Kind: api.DecisionApprove, Count: 1, Scope: api.ScopeAgent, Source: "discord", By: "carol", Grant: "g-3"}, "",
			"approved by carol via discord, who also granted this exact command with these args from then on (grant g-3)"},
		{"person_never", api.Decision{Kind: api.DecisionDeny, Scope: api.ScopeDeny, Pattern: "rm(*)", Source: "agentctl", By: "bob"}, "",
			"denied by bob via agentctl, who also denied rm(*) for the agent from then on"},
		{"person_feedback", api.Decision{Kind: api.DecisionFeedback, Feedback: "use git", Source: "api"}, "",
			"not run: api answered with feedback, which went to the model"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := whyReason(&api.Why{Decision: c.d, Layer: c.layer}); got != c.want {
				t.Errorf("whyReason = %q, want %q", got, c.want)
			}
		})
	}
}
