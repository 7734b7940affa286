package discord

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/bots"
)

func TestCustomIDRoundTrip(t *testing.T) {
	for _, c := range []CustomID{
		{Action: ActionApprove, ProposalID: "p-0123456789ab"},
		{Action: ActionApproveN, ProposalID: "p-0123456789ab", N: 3},
		{Action: ActionApproveN, ProposalID: "p-0123456789ab", N: MaxApproveN},
		{Action: ActionDeny, ProposalID: "p-abcdef"},
		{Action: ActionFeedback, ProposalID: "p-0123456789ab"},
		{Action: ActionFeedbackModal, ProposalID: "p-0123456789ab"},
		{Action: ActionApprove, ProposalID: "p-0123456789ab", Hash: "00112233445566ff"},
		{Action: ActionApproveN, ProposalID: "p-" + strings.Repeat("f", 32), N: MaxApproveN, Hash: "00112233445566ff"},
		{Action: ActionFeedbackModal, ProposalID: "p-0123456789ab", Hash: "00112233445566ff"},
		{Action: ActionRewind, ProposalID: "p-0123456789ab", AgentID: "a-0123456789ab", Hash: "00112233445566ff"},
		{Action: ActionRewind, ProposalID: "r-0123456789ab", AgentID: "a-0123456789ab", Hash: "00112233445566ff"}, // a whole run's
		{Action: ActionRewindCancel, ProposalID: "rw-0123456789ab", AgentID: "a-" + strings.Repeat("f", 32), Hash: "00112233445566ff"},
		{Action: ActionRewindCancel, ProposalID: "rw-0123456789ab", AgentID: "a-0123456789ab"}, // shown without a workspace
	} {
		s := c.String()
		got, err := ParseCustomID(s)
		if err != nil || got != c {
			t.Errorf("ParseCustomID(%q) = %+v, %v; want %+v", s, got, err, c)
		}
		if len(s) > 100 {
			t.Errorf("%q is longer than 100", s)
		}
	}
}

func TestParseCustomIDRefuses(t *testing.T) {
	cases := []struct{ name, id, reason string }{
		{"empty", "", "not made by agentd"},
		{"other_bot", "approve:123", "not made by agentd"},
		{"other_version", "agentd:v3:approve:p-0123456789ab:-", "another agentd version"},
		{"v1_button", "agentd:v1:approve:p-0123456789ab", "older agentd"},
		{"unknown_action", "agentd:v2:launch:p-0123456789ab:-", "unknown action"},
		{"missing_id", "agentd:v2:approve", "exactly a proposal ID and a hash"},
		{"missing_hash", "agentd:v2:approve:p-0123456789ab", "exactly a proposal ID and a hash"},
		{"extra_part", "agentd:v2:deny:p-0123456789ab:1:-", "exactly a proposal ID and a hash"},
		{"bad_proposal_id", "agentd:v2:approve:a-0123456789ab:-", "not a proposal ID"},
		{"upper_hex", "agentd:v2:approve:p-0123456789AB:-", "not a proposal ID"},
		{"short_hash", "agentd:v2:approve:p-0123456789ab:0011", "not a proposal or workspace hash"},
		{"upper_hash", "agentd:v2:approve:p-0123456789ab:00112233445566FF", "not a proposal or workspace hash"},
		{"empty_hash", "agentd:v2:approve:p-0123456789ab:", "not a proposal or workspace hash"},
		{"approve_n_without_count", "agentd:v2:approve_n:p-0123456789ab:-", "a proposal ID, a count and a hash"},
		{"count_one", "agentd:v2:approve_n:p-0123456789ab:1:-", "outside 2..100"},
		{"count_huge", "agentd:v2:approve_n:p-0123456789ab:1000:-", "outside 2..100"},
		{"count_signed", "agentd:v2:approve_n:p-0123456789ab:+3:-", "plain decimal"},
		{"count_leading_zero", "agentd:v2:approve_n:p-0123456789ab:03:-", "plain decimal"},
		{"count_not_number", "agentd:v2:approve_n:p-0123456789ab:x:-", "plain decimal"},
		{"too_long", "agentd:v2:approve:p-" + strings.Repeat("a", 100), "longer than"},
		{"rewind_without_agent", "agentd:v2:rewind:p-0123456789ab:00112233445566ff", "its agent's and a hash"},
		{"rewind_bad_agent", "agentd:v2:rewind:p-0123456789ab:p-0123456789ab:00112233445566ff", "not an agent ID"},
		{"rewind_bad_step", "agentd:v2:rewind:x-0123456789ab:a-0123456789ab:00112233445566ff", "not a step to rewind to"},
		{"rewind_short_hash", "agentd:v2:rewind:p-0123456789ab:a-0123456789ab:0011", "not a proposal or workspace hash"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseCustomID(c.id)
			var ce *CustomIDError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), c.reason) {
				t.Fatalf("ParseCustomID(%q) = %v, want a CustomIDError about %q", c.id, err, c.reason)
			}
		})
	}
}

func TestDecideRequest(t *testing.T) {
	cases := []struct {
		name  string
		id    CustomID
		ok    bool
		kind  api.DecisionKind
		count int
	}{
		{"approve", CustomID{Action: ActionApprove, ProposalID: "p-abcdef", Hash: "00112233445566ff"}, true, api.DecisionApprove, 1},
		{"approve_n", CustomID{Action: ActionApproveN, ProposalID: "p-abcdef", N: 4}, true, api.DecisionApprove, 4},
		{"deny", CustomID{Action: ActionDeny, ProposalID: "p-abcdef"}, true, api.DecisionDeny, 0},
		{"feedback_needs_modal", CustomID{Action: ActionFeedback, ProposalID: "p-abcdef"}, false, "", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, ok := c.id.DecideRequest("200000000000000001")
			if ok != c.ok || req.Kind != c.kind || req.Count != c.count {
				t.Fatalf("DecideRequest = %+v, %v", req, ok)
			}
			if ok && (req.ProposalID != "p-abcdef" || req.Hash != c.id.Hash || req.Source != "discord" || req.By != "200000000000000001") {
				t.Fatalf("DecideRequest = %+v", req)
			}
		})
	}
}

func TestHashLenAgrees(t *testing.T) {
	if h := strings.Repeat("a", bots.HashLen); !hashRE.MatchString(h) {
		t.Fatalf("custom IDs do not take bots.HashLen (%d) hex characters", bots.HashLen)
	}
}
