package integration

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/ollamatest"
	"github.com/agentd/agentd/internal/testutil"
)

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
