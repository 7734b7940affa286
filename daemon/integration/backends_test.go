package integration

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/ollamatest"
	"github.com/agentd/agentd/internal/testutil"
)

// poolConfig is configText with the model pool's hosts instead of one [ollama] host.
func poolConfig(urls ...string) string {
	cfg := configText(urls[0], 8192, nil)
	cfg = strings.Replace(cfg, fmt.Sprintf("host = %q\n", urls[0]), "", 1)
	var hosts strings.Builder
	for _, u := range urls {
		fmt.Fprintf(&hosts, "[[ollama.hosts]]\nurl = %q\nslots = 1\n\n", u) // OLLAMA_NUM_PARALLEL=1
	}
	return strings.Replace(cfg, "[agent]", hosts.String()+"[agent]", 1)
}

// keepMoving answers every agent's proposal with feedback, so that each step is one model
// call and nothing runs; questions are answered, paused agents resumed, idle ones given a
// task. It returns when ctx ends.
func keepMoving(ctx context.Context, t *testing.T, c *api.Client, ids []string) {
	for ctx.Err() == nil {
		for _, id := range ids {
			a, err := api.AgentRoute.Do(ctx, c, id, api.None{})
			if err != nil {
				continue
			}
			switch {
			case a.Question != nil:
				err = api.AnswerRoute.Send(ctx, c, id, api.AnswerRequest{ProposalID: a.Question.ProposalID, Text: "Do what you think is best.", By: "tester"})
			case a.State == api.StateAwaitingDecision && a.Pending != nil:
				_, err = api.DecideRoute.Do(ctx, c, id, api.DecideRequest{ProposalID: a.Pending.ID, Kind: api.DecisionFeedback,
					Feedback: "Try something else.", By: "tester", Source: "integration"})
			case a.State == api.StatePaused:
				_, err = api.ResumeRoute.Do(ctx, c, id, api.None{})
			case a.State == api.StateIdle:
				_, err = api.TaskRoute.Do(ctx, c, id, api.TaskRequest{Task: "Look around the workspace once more."})
			case a.State == api.StateFailed:
				t.Errorf("agent %s failed: %s", a.Name, a.StateReason)
				return
			}
			if err != nil && ctx.Err() == nil {
				t.Logf("moving %s on from %s: %v (retrying)", a.Name, a.State, err)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// hostsOf returns the pool's hosts from the daemon's status.
func hostsOf(t *testing.T, c *api.Client) []api.OllamaHostStatus {
	t.Helper()
	st, err := api.StatusRoute.Do(context.Background(), c, "", api.None{})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Ollama.Hosts) != 2 {
		t.Fatalf("status shows %d hosts, want 2: %s", len(st.Ollama.Hosts), jsonString(st.Ollama))
	}
	return st.Ollama.Hosts
}

// TestPoolFailover runs agents on two real Ollama servers: one is killed mid-run and its
// calls move to the other within 2 s, no agent waits for the model; restarted, it takes
// work again.
func TestPoolFailover(t *testing.T) {
	begin := time.Now()
	binaries(t)
	a, b := ollamatest.StartReal(t), ollamatest.StartReal(t)
	t.Logf("two real Ollama servers ready in %v", time.Since(begin).Round(time.Millisecond))
	d := newDaemon(t, daemonOpts{binary: true, config: poolConfig(a.URL(), b.URL())})
	d.start()
	c := d.client()
	events := followEvents(t, d.socket)
	ids := []string{create(t, c, "pool-a").ID, create(t, c, "pool-b").ID, create(t, c, "pool-c").ID}

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { keepMoving(ctx, t, c, ids) })
	defer func() { cancel(); wg.Wait() }()

	// A bound against hangs, not a performance check: a step takes 5-50s on two busy cores.
	const phase = 4 * time.Minute
	testutil.Eventually(t, phase, "both hosts to answer calls", func() bool {
		hs := hostsOf(t, c)
		return hs[0].Served > 0 && hs[1].Served > 0
	})
	testutil.Eventually(t, phase, "a call in flight on the first host", func() bool { return hostsOf(t, c)[0].Busy > 0 })

	events.mu.Lock()
	seen := len(events.events)
	events.mu.Unlock()
	killed := time.Now()
	a.Kill()
	// Within 2 s the call in flight on the dead host is back in the queue or on the other.
	var hs []api.OllamaHostStatus
	if !testutil.Wait(2*time.Second, func() bool {
		hs = hostsOf(t, c)
		return !hs[0].Up && hs[0].Busy == 0 && hs[1].Busy > 0
	}) {
		t.Fatalf("2s after the kill: hosts %s", jsonString(hs))
	}
	t.Logf("first host killed; its call moved to the other in %v", time.Since(killed).Round(time.Millisecond))

	// None stuck: every agent takes two more steps, all on the host that is left. Counted
	// from after the kill, and two: a call the host left served just before the count
	// may be stored just after it, so only the second step is sure to be a call it
	// served since.
	servedB := hs[1].Served
	steps := map[string]int{}
	for _, id := range ids {
		ag, err := api.AgentRoute.Do(context.Background(), c, id, api.None{})
		if err != nil {
			t.Fatal(err)
		}
		steps[id] = ag.Step
	}
	// The three agents share the one slot left, so an agent's two steps wait behind the
	// others': six calls of up to a minute each on a loaded machine, not two.
	for _, id := range ids {
		waitAgent(t, c, id, "two steps on the host left", 2*phase, func(ag *api.Agent) bool { return ag.Step > steps[id]+1 })
	}
	hs = hostsOf(t, c)
	if hs[1].Served < servedB+int64(len(ids)) {
		t.Errorf("the host left answered %d calls since the kill, want at least %d", hs[1].Served-servedB, len(ids))
	}
	events.mu.Lock()
	for _, ev := range events.events[seen:] {
		if ev.Agent != nil && ev.Agent.State == api.StateWaitingForModel {
			t.Errorf("agent %s waited for the model while a host was up: %s", ev.Agent.Name, ev.Agent.StateReason)
		}
	}
	events.mu.Unlock()
	t.Logf("every agent stepped on the host left %v after the kill", time.Since(killed).Round(time.Millisecond))

	// Restarted, the first host is probed back up and takes calls again.
	servedA := hs[0].Served
	restarted := time.Now()
	a.Restart(t)
	testutil.Eventually(t, phase, "the restarted host to be probed up", func() bool { return hostsOf(t, c)[0].Up })
	t.Logf("restarted host up again %v after the restart began", time.Since(restarted).Round(time.Millisecond))
	testutil.Eventually(t, phase, "the restarted host to take calls again", func() bool {
		hs := hostsOf(t, c)
		return hs[0].Up && hs[0].Served > servedA
	})
	t.Logf("restarted host answered a call %v after the restart", time.Since(restarted).Round(time.Millisecond))

	// Stopped the way a service manager stops it, so the event stream ends between events.
	cancel()
	wg.Wait()
	if code, took := d.term(10 * time.Second); code != 0 {
		t.Errorf("agentd exited %d after SIGTERM (%v)", code, took)
	}
	t.Logf("TestPoolFailover took %v", time.Since(begin).Round(time.Millisecond))
}

type noteIn struct {
	Text string `json:"text" jsonschema:"what to note"`
}

// TestMCPToolStep runs an agent step through an MCP tool in the real agentd binary: the
// tool served by a streamable-HTTP MCP server on loopback appears as tools.note, asks
// like any execute command, runs exactly once when approved, and its result becomes the
// episode's. With the server gone, the next approved call fails with a clear error and
// the daemon stays up.
func TestMCPToolStep(t *testing.T) {
	var calls atomic.Int32
	srv := mcp.NewServer(&mcp.Implementation{Name: "agentd-it", Version: "v0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "note", Description: "Keep a note and say how many there are."},
		func(_ context.Context, _ *mcp.CallToolRequest, in noteIn) (*mcp.CallToolResult, any, error) {
			n := calls.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("noted %q (%d notes)", in.Text, n)}}}, nil, nil
		})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer ts.Close()

	fake := ollamatest.NewFake(t)
	route(fake, func(agent string, n int) string {
		if n < 2 {
			return reply("tools.note", map[string]string{"text": fmt.Sprintf("note %d", n)})
		}
		return reply("finish", map[string]string{"reason": "done"})
	})
	cfg := configText(fake.URL(), 4096, nil) + fmt.Sprintf("\n[mcp]\n[[mcp.servers]]\nname = \"tools\"\nurl = %q\ntimeout = \"5s\"\n", ts.URL)
	d := newDaemon(t, daemonOpts{binary: true, config: cfg})
	d.start()
	c := d.client()
	ctx := context.Background()

	// The bridge connects in the background; the tool is offered once it is listed.
	var tool *api.CommandInfo
	testutil.Eventually(t, 20*time.Second, "tools.note to be offered", func() bool {
		infos, err := c.Commands(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(infos, func(ci api.CommandInfo) bool { return ci.Name == "tools.note" })
		if i >= 0 {
			tool = &infos[i]
		}
		return tool != nil
	})
	if tool.Provider != "mcp" || tool.Class != "execute" || !strings.HasPrefix(tool.Policy, "ask") {
		t.Errorf("tools.note = provider %q class %q policy %q; want mcp, execute, ask", tool.Provider, tool.Class, tool.Policy)
	}

	a, err := api.CreateAgentRoute.Do(ctx, c, "", api.CreateAgentRequest{Name: "noter", Goals: []string{"keep notes"},
		Policy: &api.Policy{Mode: "auto", AutoSteps: 10}})
	if err != nil {
		t.Fatal(err)
	}
	// Auto mode does not cover execute commands: the tool call asks.
	p := waitAgent(t, c, a.ID, "the tool call to ask", 20*time.Second, awaiting).Pending
	if p.Command != "tools.note" {
		t.Fatalf("pending = %s %s, want tools.note", p.Command, p.Args)
	}
	decide(t, c, a.ID, p, api.DecisionApprove, "")
	p2 := waitAgent(t, c, a.ID, "the second tool call", 20*time.Second, func(a *api.Agent) bool {
		return awaiting(a) && a.Pending.ID != p.ID
	}).Pending
	h, err := api.HistoryRoute.Do(ctx, c, a.ID, api.None{})
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 1 || h[0].Command != "tools.note" || h[0].Outcome != "succeeded" || !strings.Contains(h[0].Result, `noted "note 0" (1 notes)`) {
		t.Fatalf("history after one approved tool call = %+v", h)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("the MCP tool ran %d times, want once", n)
	}

	// The server goes away: the approved call fails and says why; nothing is retried.
	ts.CloseClientConnections()
	ts.Close()
	decide(t, c, a.ID, p2, api.DecisionApprove, "")
	testutil.Eventually(t, 30*time.Second, "the failed tool call's episode", func() bool {
		h, err = api.HistoryRoute.Do(ctx, c, a.ID, api.None{})
		return err == nil && len(h) >= 2
	})
	if h[1].Command != "tools.note" || h[1].Outcome != "failed" || h[1].Result == "" {
		t.Errorf("episode with the server gone = %+v; want a failed tools.note with the reason", h[1])
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the MCP tool ran %d times, want once", n)
	}
	if !d.running() {
		t.Fatal("agentd exited when the MCP server went away")
	}
	if _, err := api.StatusRoute.Do(ctx, c, "", api.None{}); err != nil {
		t.Fatalf("status after the MCP server went away: %v", err)
	}
	t.Logf("second call's result: %s", h[1].Result)
}
