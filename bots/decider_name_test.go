package bots

import (
	"context"
	"testing"

	"github.com/agentd/agentd/api"
)

// nameService records the requests a relay sends, whole.
type nameService struct {
	helperService
	decides []api.DecideRequest
	answers []api.AnswerRequest
}

func (s *nameService) Decide(ctx context.Context, ref string, req api.DecideRequest) (*api.Decision, error) {
	s.decides = append(s.decides, req)
	return s.helperService.Decide(ctx, ref, req)
}

func (s *nameService) Answer(_ context.Context, ref string, req api.AnswerRequest) error {
	s.answers = append(s.answers, req)
	return nil
}

// TestChatDecidersCarryTheirDisplayName: a reply in a thread decides or answers as the
// chat user's id (By, for approver checks and mentions) and display name (ByName, for
// agentctl follow, history and the audit log, where an id means nothing).
func TestChatDecidersCarryTheirDisplayName(t *testing.T) {
	pending := &api.Proposal{ID: "p-1", AgentID: "a-1", Step: 4, Command: "write_file", Status: api.ProposalPending, Args: []byte(`{}`)}
	question := &api.Question{ProposalID: "p-2", Text: "Which colour?"}
	tests := []struct {
		name  string
		agent api.Agent
		text  string
	}{
		{"decision", api.Agent{ID: "a-1", Name: "boss", State: api.StateAwaitingDecision, Pending: pending}, "y"},
		{"answer", api.Agent{ID: "a-1", Name: "boss", State: api.StateAwaitingDecision, Question: question}, "blue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			svc := &nameService{helperService: helperService{agents: []api.Agent{tt.agent}}}
			r, ad := threadRelay(ctx, svc)
			showWaiting(ctx, r, tt.agent)
			r.OnMessage(ctx, Incoming{Platform: "slack", Where: Where{Channel: "C1", Thread: "T1"}, User: User{ID: "U1", Name: "Ana Lima"}, Text: tt.text, ID: ad.stamp()})
			var by, name string
			switch {
			case len(svc.decides) == 1:
				by, name = svc.decides[0].By, svc.decides[0].ByName
			case len(svc.answers) == 1:
				by, name = svc.answers[0].By, svc.answers[0].ByName
			default:
				t.Fatalf("sent %d decisions and %d answers, want one", len(svc.decides), len(svc.answers))
			}
			if by != "U1" || name != "Ana Lima" {
				t.Errorf("by %q named %q, want U1 named Ana Lima", by, name)
			}
		})
	}
}
