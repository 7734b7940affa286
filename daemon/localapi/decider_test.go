package localapi

import (
	"context"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/apitest"
	"github.com/agentd/agentd/internal/testutil"
)

// TestDecidersAreNamedByTheKernel: behind the peer guard, a decision or answer carries
// the socket peer's uid whatever the body said, and one that names nobody, or only a
// uid ("uid 0" from a shell without $USER), gets that user's login name.
func TestDecidersAreNamedByTheKernel(t *testing.T) {
	me := "uid " + strconv.Itoa(os.Getuid())
	if u, err := user.Current(); err == nil && u.Username != "" {
		me = u.Username
	}
	var (
		mu        sync.Mutex
		decisions []api.DecideRequest
		answers   []api.AnswerRequest
	)
	fk := &apitest.Fake{}
	apitest.Handle(fk, api.DecideRoute, func(_ context.Context, _ string, req api.DecideRequest) (*api.Decision, error) {
		mu.Lock()
		defer mu.Unlock()
		decisions = append(decisions, req)
		return &api.Decision{ProposalID: req.ProposalID, Kind: req.Kind, By: req.By, UID: req.UID}, nil
	})
	apitest.Handle(fk, api.AnswerRoute, func(_ context.Context, _ string, req api.AnswerRequest) (api.None, error) {
		mu.Lock()
		defer mu.Unlock()
		answers = append(answers, req)
		return api.None{}, nil
	})
	sock := filepath.Join(testutil.ShortTempDir(t), "s.sock")
	ln, err := Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: newHandler(nil, fk.Endpoints(), fk.Streams(), nil)}
	GuardPeers(srv, nil, nil)
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	c := &api.Client{Socket: sock}
	ctx := context.Background()

	forged := uint32(4242)
	tests := []struct {
		name, by, want string
	}{
		{"nobody_named", "", me},
		{"only_a_uid", "uid 0", me},
		{"a_name_is_kept", "ana", "ana"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := c.Decide(ctx, "a1", api.DecideRequest{ProposalID: "p1", Kind: api.DecisionApprove, By: tt.by, UID: &forged}); err != nil {
				t.Fatal(err)
			}
			if err := c.Answer(ctx, "a1", api.AnswerRequest{ProposalID: "p1", Text: "blue", By: tt.by, UID: &forged}); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			d, a := decisions[i], answers[i]
			for _, got := range []struct {
				by  string
				uid *uint32
			}{{d.By, d.UID}, {a.By, a.UID}} {
				if got.by != tt.want {
					t.Errorf("by = %q, want %q", got.by, tt.want)
				}
				if got.uid == nil || *got.uid != uint32(os.Getuid()) {
					t.Errorf("uid = %v, want the kernel's %d, not the body's forged %d", got.uid, os.Getuid(), forged)
				}
			}
		})
	}
}
