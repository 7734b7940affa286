package bots

import (
	"context"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
)

// hashService records the hash each decision names.
type hashService struct {
	helperService
	hashes []string
}

func (s *hashService) Decide(ctx context.Context, ref string, req api.DecideRequest) (*api.Decision, error) {
	s.hashes = append(s.hashes, req.Hash)
	return s.helperService.Decide(ctx, ref, req)
}

// A relay restarted while a proposal waits reads what the last one posted from the store:
// a typed y names the Ref the proposal's message shows, not the daemon's newer one, and
// the run's end closes the message, once, though this relay never posted it.
func TestARestartedRelayDecidesAndClosesWhatTheLastOnePosted(t *testing.T) {
	ctx := context.Background()
	p := &api.Proposal{ID: "p-1", AgentID: "a-1", Step: 1, Command: "write_file", Status: api.ProposalPending, Hash: "shown-hash", Args: []byte(`{}`)}
	svc := &hashService{helperService: helperService{agents: []api.Agent{{ID: "a-1", Name: "boss", State: api.StateAwaitingDecision, Pending: p}}}}
	before, ad := threadRelay(ctx, svc)
	before.posts.handle(ctx, api.Event{Type: api.EventProposal, AgentID: "a-1", Proposal: p})
	before.out.flush()

	// Restarted; the daemon's proposal moved on meanwhile, and no message showed it.
	moved := *p
	moved.Hash = "newer-hash"
	svc.agents[0].Pending = &moved
	r := New(Options{Service: svc, Bindings: before.opt.Bindings})
	r.Add(ad, Rules{Channels: map[string]Access{"C1": {}}, Approvers: Access{Users: []string{"U1"}}})
	r.OnMessage(ctx, Incoming{Platform: "slack", Where: Where{Channel: "C1", Thread: "T1"}, User: User{ID: "U1"}, Text: "y", ID: ad.stamp()})
	if len(svc.hashes) != 1 || svc.hashes[0] != "shown-hash" {
		t.Fatalf("the reply's decisions named hashes %q; want the one its message shows, shown-hash", svc.hashes)
	}

	// The run ends (finish, then its idle state): the message is closed once.
	svc.agents[0].Pending, svc.agents[0].State = nil, api.StateIdle
	r.posts.handle(ctx, api.Event{Type: api.EventFinish, AgentID: "a-1"})
	r.posts.handle(ctx, api.Event{Type: api.EventState, AgentID: "a-1", Agent: &svc.agents[0]})
	r.out.flush()
	ad.mu.Lock()
	defer ad.mu.Unlock()
	if len(ad.updates) != 1 || !strings.Contains(ad.updates[0], "The run ended before a decision.") {
		t.Fatalf("updates = %q; want the proposal's message closed once as the run ended", ad.updates)
	}
}
