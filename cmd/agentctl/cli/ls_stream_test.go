package cli_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/cmd/agentctl/cli"
	"github.com/agentd/agentd/internal/apitest"
	"github.com/agentd/agentd/internal/testutil"
)

// ls prints as it reads: with more agents than a page, the first page's rows are on the
// terminal before the daemon reads the next page (here the daemon waits for them), and
// every agent is printed once. It asks for the brief listing.
func TestLsPrintsAsItReads(t *testing.T) {
	f := newFakeDaemon(t)
	all := make([]api.Agent, api.ListPage+3)
	for i := range all {
		all[i] = api.Agent{ID: fmt.Sprintf("a-%05d", i), Name: fmt.Sprintf("agent-%05d", i), State: api.StateIdle, Task: "wait"}
	}
	var out, errb testutil.SyncBuffer
	var full atomic.Int32 // listings asked for whole
	apitest.HandleList(&f.api, api.AgentsRoute, func(_ context.Context, q api.AgentQuery, p api.Page) ([]api.Agent, string, error) {
		if !q.Brief {
			full.Add(1)
		}
		if p.After != "" && !testutil.Wait(10*time.Second, func() bool { return strings.Contains(out.String(), all[api.ListPage-1].Name) }) {
			return nil, "", errors.New("ls had not printed the first page 10s after the daemon wrote it")
		}
		return apitest.PageOf(all, func(a api.Agent) string { return a.ID }, p)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code := cli.Run(ctx, []string{"--socket", f.sock, "ls"}, strings.NewReader(""), &out, &errb)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if code != 0 || len(lines) != len(all)+1 {
		t.Fatalf("ls: exit %d, %d lines for %d agents; stderr: %s", code, len(lines), len(all), errb.String())
	}
	if full.Load() != 0 {
		t.Error("ls asked for every agent whole: it shows no proposal's thoughts or args")
	}
}
