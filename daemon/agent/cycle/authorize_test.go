package cycle

import (
	"encoding/json"
	"testing"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/commands/permission"
	"github.com/agentd/agentd/daemon/client"
)

func TestAuthorize(t *testing.T) {
	read := &commands.Spec{Name: "read_file", Class: commands.ClassRead, Subject: "path"}
	write := &commands.Spec{Name: "write_file", Class: commands.ClassWriteWorkspace, Subject: "path"}
	shell := &commands.Spec{Name: "execute_shell", Class: commands.ClassExecute, Subject: "command_line"}
	rules, err := permission.ParseRules("config", []string{"read_file(docs/*)"}, []string{"read_file(secrets/*)"})
	if err != nil {
		t.Fatal(err)
	}
	prop := func(cmd string, args map[string]string) *client.Proposal {
		b, _ := json.Marshal(args)
		return &client.Proposal{ID: "p-1", Command: cmd, Args: b, Step: 3}
	}
	for _, c := range []struct {
		name       string
		req        Request
		want       Verdict
		by         string // the decision's By
		wantPolicy Policy
	}{
		{"ask_user_needs_no_approval", Request{Proposal: prop(commands.AskUser, map[string]string{"question": "?"})}, Allow, "ask_user needs no approval", Policy{}},
		{"repeat_asks", Request{Proposal: prop("read_file", map[string]string{"path": "docs/a"}), Spec: read, Rules: []permission.Rules{rules}, Repeat: true}, Ask, "", Policy{}},
		{"unknown_command_asks", Request{Proposal: prop("nope", nil), Policy: Policy{Mode: "auto", AutoSteps: 3}}, Ask, "", Policy{Mode: "auto", AutoSteps: 3}},
		{"deny_pattern_refuses", Request{Proposal: prop("read_file", map[string]string{"path": "secrets/k"}), Spec: read, Rules: []permission.Rules{rules}, Policy: Policy{Mode: "auto", AutoSteps: 3}}, Refuse, "deny pattern read_file(secrets/*)", Policy{Mode: "auto", AutoSteps: 3}},
		{"allow_pattern_approves", Request{Proposal: prop("read_file", map[string]string{"path": "docs/a"}), Spec: read, Rules: []permission.Rules{rules}}, Allow, "allow pattern read_file(docs/*)", Policy{}},
		{"auto_read_approves_reads", Request{Proposal: prop("read_file", map[string]string{"path": "x"}), Spec: read, Options: permission.Options{AutoRead: true}}, Allow, "auto_read", Policy{}},
		{"execute_asks_in_auto_mode", Request{Proposal: prop("execute_shell", map[string]string{"command_line": "ls"}), Spec: shell, Policy: Policy{Mode: "auto", AutoSteps: 3}}, Ask, "", Policy{Mode: "auto", AutoSteps: 3}},
		{"auto_draws_from_grant", Request{Proposal: prop("write_file", map[string]string{"path": "a"}), Spec: write, Policy: Policy{Mode: "auto", AutoSteps: 2}}, Allow, "auto", Policy{Mode: "auto", AutoSteps: 1}},
		{"last_grant_returns_to_ask", Request{Proposal: prop("write_file", map[string]string{"path": "a"}), Spec: write, Policy: Policy{Mode: "auto", AutoSteps: 1, Owner: "lead"}}, Allow, "auto (lead's)", Policy{Mode: "ask", Owner: "lead"}},
		{"continuous_within_limit", Request{Proposal: prop("write_file", map[string]string{"path": "a"}), Spec: write, Policy: Policy{Mode: "continuous", ContinuousLimit: 3}}, Allow, "continuous", Policy{Mode: "continuous", ContinuousLimit: 3}},
		{"continuous_past_limit_asks", Request{Proposal: prop("write_file", map[string]string{"path": "a"}), Spec: write, Policy: Policy{Mode: "continuous", ContinuousLimit: 2}}, Ask, "", Policy{Mode: "continuous", ContinuousLimit: 2}},
		{"ask_mode_asks", Request{Proposal: prop("write_file", map[string]string{"path": "a"}), Spec: write, Policy: Policy{Mode: "ask"}}, Ask, "", Policy{Mode: "ask"}},
		{"person_approve_n_grants", Request{Proposal: prop("write_file", nil), Approver: true, Policy: Policy{Mode: "ask"},
			Decision: &client.Decision{Kind: client.DecisionApprove, Count: 4, By: "ana", Source: "slack"}}, Allow, "ana", Policy{Mode: "auto", AutoSteps: 3}},
		{"person_approve_n_keeps_continuous", Request{Proposal: prop("write_file", nil), Approver: true, Policy: Policy{Mode: "continuous"},
			Decision: &client.Decision{Kind: client.DecisionApprove, Count: 4, Source: "api"}}, Allow, "", Policy{Mode: "continuous"}},
		{"person_deny_refuses", Request{Proposal: prop("write_file", nil), Approver: true,
			Decision: &client.Decision{Kind: client.DecisionDeny, Source: "discord"}}, Refuse, "", Policy{}},
		{"non_approver_is_refused", Request{Proposal: prop("write_file", nil),
			Decision: &client.Decision{Kind: client.DecisionApprove, Count: 1, Source: "slack"}}, Refuse, "", Policy{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Authorize(c.req)
			if got.Verdict != c.want {
				t.Fatalf("verdict %s (%s), want %s", got.Verdict, got.Reason, c.want)
			}
			if got.Reason == "" {
				t.Error("no reason given")
			}
			if c.by != "" && (got.Decision == nil || got.Decision.By != c.by) {
				t.Errorf("decision %+v, want one by %q", got.Decision, c.by)
			}
			if c.want == Ask && got.Decision != nil {
				t.Errorf("asking made a decision: %+v", got.Decision)
			}
			if got.Policy != c.wantPolicy {
				t.Errorf("policy after: %+v, want %+v", got.Policy, c.wantPolicy)
			}
		})
	}
}
