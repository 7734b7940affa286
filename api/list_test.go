package api_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/apitest"
	"github.com/agentd/agentd/internal/testutil"
)

// serve serves f on a unix socket the way the daemon does, for a Client.
func serve(t *testing.T, f *apitest.Fake) *api.Client {
	t.Helper()
	sock := filepath.Join(testutil.ShortTempDir(t), "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: apitest.Handler(f)}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return &api.Client{Socket: sock}
}

func agents(n int) []api.Agent {
	out := make([]api.Agent, n)
	for i := range out {
		out[i] = api.Agent{ID: fmt.Sprintf("a-%05d", i), Name: fmt.Sprintf("agent-%05d", i), State: api.StateIdle}
	}
	return out
}

func key(a api.Agent) string { return a.ID }

// A whole listing reaches the caller as the daemon writes it: the first page's agents
// are in the caller's hands before the daemon has read the second page. Here the
// daemon's second read waits for the caller to have them all, which a reply written
// whole would never let happen.
func TestEachAgentReadsAsTheDaemonWrites(t *testing.T) {
	all := agents(api.ListPage + 7)
	got := make(chan string, len(all))
	var f apitest.Fake
	apitest.HandleList(&f, api.AgentsRoute, func(ctx context.Context, _ api.AgentQuery, p api.Page) ([]api.Agent, string, error) {
		if p.After != "" {
			select {
			case <-firstPageRead(got, api.ListPage):
			case <-time.After(10 * time.Second):
				return nil, "", errors.New("the client had not read the first page 10s after the daemon wrote it")
			}
		}
		return apitest.PageOf(all, key, p)
	})
	c := serve(t, &f)
	n := 0
	err := c.EachAgent(context.Background(), api.AgentQuery{}, func(a api.Agent) error {
		if a.ID != all[n].ID {
			return fmt.Errorf("agent %d is %s, want %s", n, a.ID, all[n].ID)
		}
		n++
		got <- a.ID
		return nil
	})
	if err != nil || n != len(all) {
		t.Fatalf("read %d of %d agents: %v", n, len(all), err)
	}
}

// firstPageRead is closed once got has held n items.
func firstPageRead(got chan string, n int) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		testutil.Wait(10*time.Second, func() bool { return len(got) >= n })
		close(done)
	}()
	return done
}

// A page asked for comes with the cursor of the next (from the Link header), and the
// cursors walk the list once; a limit out of range is refused, naming the range.
func TestListAgentsPagesByCursor(t *testing.T) {
	all := agents(7)
	var f apitest.Fake
	apitest.HandleList(&f, api.AgentsRoute, func(_ context.Context, _ api.AgentQuery, p api.Page) ([]api.Agent, string, error) {
		return apitest.PageOf(all, key, p)
	})
	c := serve(t, &f)
	ctx := context.Background()
	var ids []string
	p := api.Page{Limit: 3}
	for range 4 {
		l, err := c.ListAgents(ctx, api.AgentQuery{}, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range l.Agents {
			ids = append(ids, a.ID)
		}
		if l.Next == "" {
			break
		}
		p.After = l.Next
	}
	if got := strings.Join(ids, " "); got != "a-00000 a-00001 a-00002 a-00003 a-00004 a-00005 a-00006" {
		t.Errorf("pages of 3 gave %s", got)
	}
	var ae *api.APIError
	_, err := c.ListAgents(ctx, api.AgentQuery{}, api.Page{Limit: api.MaxListLimit + 1})
	if !errors.As(err, &ae) || ae.Status != 400 || !strings.Contains(ae.Message, "from 1 to") {
		t.Errorf("a limit over the largest: %v, want 400 naming the range", err)
	}
}
