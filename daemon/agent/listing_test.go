package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/llm"
	"github.com/agentd/agentd/daemon/localapi"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/ollamatest"
	"github.com/agentd/agentd/internal/randid"
	"github.com/agentd/agentd/internal/testutil"
)

// Listing the agents a page at a time gives each agent once, oldest first, whatever the
// page size, and goes on right after the agent a page ended with is removed; a cursor
// the daemon did not give is refused, naming the fix. A brief listing keeps which
// proposal waits and drops its thoughts, args and preview.
func TestListAgentsPages(t *testing.T) {
	h := newHarness(t)
	seedAwaiting(t, h.st, 7)
	views := h.sup.agentViews
	ctx := context.Background()
	all, err := views.ListAgents(ctx, api.AgentQuery{}, api.Page{})
	if err != nil || len(all.Agents) != 7 || all.Next != "" {
		t.Fatalf("the whole listing: %d agents, next %q, %v", len(all.Agents), all.Next, err)
	}
	ids := func(as []api.Agent) (out []string) {
		for _, a := range as {
			out = append(out, a.ID)
		}
		return out
	}
	for _, limit := range []int{1, 2, 3, 7, 8} {
		var got []string
		p := api.Page{Limit: limit}
		for pages := 0; ; pages++ {
			l, err := views.ListAgents(ctx, api.AgentQuery{}, p)
			if err != nil || pages > 10 {
				t.Fatalf("limit %d, page %d: %v", limit, pages, err)
			}
			got = append(got, ids(l.Agents)...)
			if l.Next == "" {
				break
			}
			p.After = l.Next
		}
		if want := ids(all.Agents); len(got) != len(want) || got[0] != want[0] || got[len(got)-1] != want[len(want)-1] {
			t.Errorf("limit %d: pages gave %v, want %v", limit, got, want)
		}
	}

	first, err := views.ListAgents(ctx, api.AgentQuery{}, api.Page{Limit: 3})
	if err != nil || len(first.Agents) != 3 || first.Next == "" {
		t.Fatalf("first page: %+v, %v", first, err)
	}
	if err := h.st.Tx(ctx, func(tx *store.Tx) error { return tx.DeleteAgent(first.Agents[2].ID) }); err != nil {
		t.Fatal(err)
	}
	rest, err := views.ListAgents(ctx, api.AgentQuery{}, api.Page{After: first.Next, Limit: 10})
	if err != nil || len(rest.Agents) != 4 || rest.Agents[0].ID != all.Agents[3].ID {
		t.Errorf("the page after a removed agent: %v, %v; want the 4 agents after it", ids(rest.Agents), err)
	}

	for _, bad := range []string{"a-0123", "-4", "x"} {
		_, err := views.ListAgents(ctx, api.AgentQuery{}, api.Page{After: bad, Limit: 2})
		if !errors.Is(err, api.ErrBadRequest) {
			t.Errorf("after=%q: %v, want a bad request", bad, err)
		}
	}

	brief, err := views.ListAgents(ctx, api.AgentQuery{Brief: true}, api.Page{Limit: 1})
	if err != nil || len(brief.Agents) != 1 {
		t.Fatalf("brief: %v", err)
	}
	full, bp := all.Agents[0].Pending, brief.Agents[0].Pending
	if bp == nil || bp.ID != full.ID || bp.Command != full.Command || bp.Hash != full.Hash ||
		bp.Thoughts != (api.Thoughts{}) || bp.Preview != nil || (bp.Args != nil && string(bp.Args) != "null") {
		t.Errorf("brief pending proposal %+v, want %s's id, command and hash only", bp, full.ID)
	}
}

// seedAwaiting stores n agents, each awaiting a decision on a write_file proposal with
// its thoughts and diff preview (about 1.4 KB of JSON each, as a real one), the way the
// supervisor leaves them; straight into the store, so seeding 10,000 takes seconds.
func seedAwaiting(tb testing.TB, st *store.Store, n int) {
	tb.Helper()
	err := st.Tx(context.Background(), func(tx *store.Tx) error {
		for i := range n {
			a := &store.Agent{Agent: api.Agent{ID: randid.ID("a-"), Name: fmt.Sprintf("pending-%05d", i), Description: "waits for a person",
				Task: "keep the notes tidy", State: api.StateAwaitingDecision, RunID: randid.ID("r-"), Step: 1, Workspace: "/tmp/none",
				Policy: api.Policy{Mode: "ask"}}}
			if err := tx.InsertAgent(a); err != nil {
				return err
			}
			if err := tx.StartRun(a.RunID, a.ID, a.Task); err != nil {
				return err
			}
			args := json.RawMessage(fmt.Sprintf(`{"path":"notes/%05d.md","contents":"# Notes\n\n- one\n- two\n"}`, i))
			diff := fmt.Sprintf("--- notes/%05d.md\n+++ notes/%05d.md\n@@ -0,0 +1,4 @@\n+# Notes\n+\n+- one\n+- two\n", i, i)
			p := &api.Proposal{ID: randid.ID("p-"), AgentID: a.ID, RunID: a.RunID, Step: 1, Command: "write_file", Args: args,
				Hash: Hash("write_file", args), Status: api.ProposalPending, Model: ollamatest.TinyModelName,
				Thoughts: api.Thoughts{Observations: "the notes folder has no index yet, and three notes repeat each other",
					Text: "write a first notes file", Reasoning: "a file people can read is the first step to tidy notes; the rest follows",
					SelfCriticism: "I have not read every note yet", Plan: "- write the index\n- merge the repeats\n- finish",
					Speak: "I will write notes/index.md with a list of the notes."},
				Preview: &api.Preview{Kind: api.PreviewDiff, Path: fmt.Sprintf("notes/%05d.md", i), Diff: diff}}
			if err := tx.InsertProposal(p); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// listingService serves the agents' API alone, as the daemon's socket does.
type listingService struct {
	parts
	localapi.ScheduleService
	localapi.DaemonService
	localapi.TeamService
	localapi.WebService
}

// countingConn counts the bytes the client reads off the socket.
type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// BenchmarkListAgents10000 lists 10,000 agents awaiting decisions over the local API's
// unix socket, as agentctl does after a restart: ms/list is one whole listing, every
// agent decoded by the client as the daemon writes it (EachAgent, what `agentctl ls
// --json` reads); brief-ms/list the brief listing `agentctl ls` reads; first-ms when the
// first agent of the whole listing arrived; MB/list and brief-MB/list what crossed the
// socket; cpu-ms/list the CPU time of one whole listing, the daemon's and the client's
// (both in this process), which a loaded machine does not stretch as it does wall time.
// The supervisor is made on the seeded state but not started: the listing alone is
// measured (BenchmarkRestartPending in daemon/server times a restart).
func BenchmarkListAgents10000(b *testing.B) {
	const n = 10000
	dir := b.TempDir()
	st, err := store.Open(context.Background(), filepath.Join(dir, "agentd.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	seedAwaiting(b, st, n)
	fake := ollamatest.NewFake(b)
	lc, err := llm.New(fake.URL(), nil)
	if err != nil {
		b.Fatal(err)
	}
	sup, err := New(testOptions(func(o *Options) {
		o.Store, o.LLM, o.Model, o.StateDir, o.Commands = st, lc, ollamatest.TinyModelName, dir, testCommands
		o.Backoff = func(int) time.Duration { return time.Second }
	}))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background() // not started: its agents' loops would share the CPU
	sock := filepath.Join(testutil.ShortTempDir(b), "s")
	ln, err := localapi.Listen(sock)
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: localapi.NewHandler(listingService{parts: partsOf(sup)}, nil)}
	go srv.Serve(ln)
	defer srv.Close()
	var read atomic.Int64
	c := &api.Client{HTTP: &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			conn, err := d.DialContext(ctx, "unix", sock)
			return countingConn{conn, &read}, err
		}}}}
	list := func(q api.AgentQuery) (count int, first, all time.Duration, bytes int64) {
		read.Store(0)
		start := time.Now()
		err := c.EachAgent(ctx, q, func(api.Agent) error {
			if count++; count == 1 {
				first = time.Since(start)
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		return count, first, time.Since(start), read.Load()
	}
	var whole, brief, first, cpu time.Duration
	var bytes, briefBytes int64
	for b.Loop() {
		var got int
		cpu0 := cpuTime()
		if got, first, whole, bytes = list(api.AgentQuery{}); got != n {
			b.Fatalf("listed %d agents, want %d", got, n)
		}
		cpu = cpuTime() - cpu0
		if got, _, brief, briefBytes = list(api.AgentQuery{Brief: true}); got != n {
			b.Fatalf("listed %d agents briefly, want %d", got, n)
		}
	}
	b.ReportMetric(float64(whole.Microseconds())/1000, "ms/list")
	b.ReportMetric(float64(brief.Microseconds())/1000, "brief-ms/list")
	b.ReportMetric(float64(first.Microseconds())/1000, "first-ms")
	b.ReportMetric(float64(cpu.Microseconds())/1000, "cpu-ms/list")
	b.ReportMetric(float64(bytes)/1e6, "MB/list")
	b.ReportMetric(float64(briefBytes)/1e6, "brief-MB/list")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
