package bots

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/display/displaytest"
	"github.com/agentd/agentd/internal/testutil"
)

type groups map[string][]string

func (g groups) InGroup(_ context.Context, user, group string) (bool, error) {
	if group == "broken" {
		return false, errors.New("down")
	}
	for _, u := range g[group] {
		if u == user {
			return true, nil
		}
	}
	return false, nil
}

func TestRulesAllowed(t *testing.T) {
	rules := Rules{
		Approvers: Access{Users: []string{"U1"}, Groups: []string{"S1"}},
		Channels:  map[string]Access{"C1": {}, "C2": {Users: []string{"U2"}}},
		Agents:    map[string]Access{"deployer": {Users: []string{"U3"}}},
	}
	g := groups{"S1": {"U9"}}
	for _, tc := range []struct {
		name, channel, agent, user string
		want                       bool
	}{
		{"platform_approver", "C1", "", "U1", true},
		{"group_member", "C1", "a", "U9", true},
		{"stranger", "C1", "a", "U5", false},
		{"channel_list_replaces_platform", "C2", "a", "U1", false},
		{"channel_approver", "C2", "a", "U2", true},
		{"agent_list_replaces_channel", "C2", "deployer", "U2", false},
		{"agent_approver", "C1", "deployer", "U3", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := rules.Allowed(context.Background(), g, tc.channel, tc.agent, tc.user)
			if err != nil || got != tc.want {
				t.Errorf("Allowed = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	if ok, err := (Rules{Approvers: Access{Groups: []string{"broken"}}}).Allowed(context.Background(), g, "C1", "", "U1"); ok || err == nil {
		t.Errorf("a failing group lookup allowed: %v, %v", ok, err)
	}
	if ok, _ := (Rules{}).Allowed(context.Background(), g, "C1", "", "U1"); ok {
		t.Error("no approvers configured, yet someone may decide")
	}
}

func TestRulesServes(t *testing.T) {
	rules := Rules{Teams: []string{"T1"}, Channels: map[string]Access{"C1": {}}, DM: true}
	for _, tc := range []struct {
		name string
		w    Where
		want bool
	}{
		{"configured_channel", Where{Team: "T1", Channel: "C1"}, true},
		{"other_channel", Where{Team: "T1", Channel: "C2"}, false},
		{"other_team", Where{Team: "T2", Channel: "C1"}, false},
		{"direct_message", Where{Team: "T1", Channel: "D1", DM: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := rules.Serves(tc.w); got != tc.want {
				t.Errorf("Serves(%+v) = %v", tc.w, got)
			}
		})
	}
	if (Rules{Channels: map[string]Access{"C1": {}}}).Serves(Where{Channel: "D1", DM: true}) {
		t.Error("direct messages served without DM")
	}
}

func TestRefRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		ok   bool
	}{
		{"approve", "a-1 p-2 0", true},
		{"approve_n", "a-1 p-2 3", true},
		{"missing_count", "a-1 p-2", false},
		{"negative_count", "a-1 p-2 -1", false},
		{"empty", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ParseRef(tc.in)
			if (err == nil) != tc.ok {
				t.Fatalf("ParseRef(%q) = %+v, %v", tc.in, r, err)
			}
			if tc.ok && EncodeRef(r) != tc.in {
				t.Errorf("EncodeRef = %q, want %q", EncodeRef(r), tc.in)
			}
		})
	}
}

// TestTypedReplies keeps the chat grammar the terminal's: the relay hands typed text to
// api.ParseDecision.
func TestTypedReplies(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		kind       api.DecisionKind
		count      int
	}{
		{"y", "y", api.DecisionApprove, 1},
		{"yes", "Yes", api.DecisionApprove, 1},
		{"y_minus_n", "y -3", api.DecisionApprove, 3},
		{"n", "n", api.DecisionDeny, 0},
		{"feedback", "use the docs folder instead", api.DecisionFeedback, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := api.ParseDecision(tc.text)
			if err != nil || req.Kind != tc.kind || req.Count != tc.count {
				t.Errorf("ParseDecision(%q) = %+v, %v", tc.text, req, err)
			}
		})
	}
	if _, err := api.ParseDecision("y -0"); err == nil {
		t.Error("y -0 accepted")
	}
}

func text(m Message) string {
	var b strings.Builder
	for _, p := range m.Parts {
		for _, s := range p.Spans {
			if s.User != "" {
				b.WriteString("@" + s.User)
			} else {
				b.WriteString(s.Text)
			}
		}
		b.WriteString(p.Code)
		b.WriteString("\n")
	}
	for _, bt := range m.Buttons {
		b.WriteString("[" + bt.Label + "]")
	}
	return b.String()
}

func TestFormatProposal(t *testing.T) {
	p := &api.Proposal{ID: "p-1", AgentID: "a-1", Step: 2, Command: "write_file", Args: json.RawMessage(`{"path":"a.txt"}`),
		Status: api.ProposalPending, Thoughts: api.Thoughts{Speak: "Writing it.", Plan: "1\n2\n3\n4\n5"}}
	for _, tc := range []struct {
		name string
		v    ProposalView
		want []string
		not  []string
	}{
		{"pending", ProposalView{Proposal: p, ApproveN: 3}, []string{"Writing it.", "Plan:\n1\n2\n3\n…", "Step 2: write_file", `"path": "a.txt"`, "[Approve][Approve ×3][Deny][Feedback…]"}, nil},
		{"no_approve_n", ProposalView{Proposal: p, ApproveN: 1}, []string{"[Approve][Deny]"}, []string{"×"}},
		{"decided_here", ProposalView{Proposal: p, Decision: &api.Decision{Kind: api.DecisionApprove, Count: 3, By: "U1", Source: "slack"}}, []string{"✅ Approved ×3 by @U1"}, []string{"[Approve]"}},
		{"decided_in_agentctl", ProposalView{Proposal: p, Decision: &api.Decision{Kind: api.DecisionDeny, By: "ann", Source: "agentctl"}}, []string{"⛔ Denied by ann via agentctl"}, []string{"[Deny]"}},
		{"feedback", ProposalView{Proposal: p, Decision: &api.Decision{Kind: api.DecisionFeedback, Feedback: "no", By: "U1", Source: "slack"}}, []string{"💬 Feedback by @U1: no"}, nil},
		{"policy", ProposalView{Proposal: p, Decision: &api.Decision{Kind: api.DecisionApprove, Source: "policy", Pattern: "write_file(*)"}}, []string{"by policy (write_file(*))"}, nil},
		{"expired", ProposalView{Proposal: p, Closed: "⌛ Expired"}, []string{"⌛ Expired"}, []string{"[Approve]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := text(FormatProposal(tc.v, "slack"))
			testutil.CheckContains(t, "the reply", got, tc.want, tc.not)
		})
	}
}

func TestFormatResultLongOutputIsAFile(t *testing.T) {
	long := strings.Repeat("line\n", 1000)
	m, file := FormatResult(&api.Episode{Command: "read_file", Outcome: "succeeded", Result: long}, 2000)
	if file == "" || !strings.Contains(text(m), "attached") {
		t.Errorf("long output not attached: %q", text(m))
	}
	m, file = FormatResult(&api.Episode{Command: "read_file", Outcome: "failed", Result: "no such file"}, 2000)
	if file != "" || !strings.Contains(text(m), "❌ read_file failed\nno such file") {
		t.Errorf("short output = %q, file %q", text(m), file)
	}
}

func TestCutKeepsRunes(t *testing.T) {
	s := cut(strings.Repeat("é", 10), 5)
	if !strings.HasPrefix(s, "éé…") {
		t.Errorf("cut = %q", s)
	}
}

// TestModelLinesCannotPassForTheBots: a line break in the model's words (its speech, its
// plan, a question, a finish message) never starts a line of the message outside a
// quotation, so no line of the model's can pass for the bot's own.
func TestModelLinesCannotPassForTheBots(t *testing.T) {
	for _, c := range displaytest.Cases {
		t.Run(c.Name, func(t *testing.T) {
			p := &api.Proposal{ID: "p-1", AgentID: "a-1", Step: 3, Command: "execute_shell", Status: api.ProposalPending,
				Args: json.RawMessage(`{}`), Thoughts: api.Thoughts{Speak: c.Text, Plan: c.Text}}
			for name, m := range map[string]Message{
				"proposal": FormatProposal(ProposalView{Proposal: p}, "slack"),
				"question": FormatQuestion(&api.Question{ProposalID: "p-1", Text: c.Text}, ""),
				"note":     FormatNote("🏁 Finished: " + c.Text),
			} {
				for _, part := range m.Parts {
					if part.Quote || part.Code != "" {
						continue
					}
					var text strings.Builder
					for _, sp := range part.Spans {
						text.WriteString(sp.Text)
					}
					if strings.Contains(text.String(), "\n"+displaytest.Forged) {
						t.Errorf("the %s message starts an unquoted line with the model's %q", name, displaytest.Forged)
					}
				}
			}
		})
	}
}
