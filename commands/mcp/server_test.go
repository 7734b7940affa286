package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/internal/backoff"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serverEnv, when set to "stdio", makes the test binary run the test server on its
// stdin/stdout instead of the tests: the stdio tests start it as their MCP server.
const serverEnv = "AGENTD_MCP_TEST_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(serverEnv) == "stdio" {
		fmt.Fprintln(os.Stderr, "test server: serving on stdio")
		if err := newTestServer(nil).Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "test server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type echoIn struct {
	Text  string `json:"text" jsonschema:"the text to send back"`
	Upper bool   `json:"upper,omitempty" jsonschema:"send it back in upper case"`
}

type addIn struct {
	A int `json:"a" jsonschema:"first addend"`
	B int `json:"b" jsonschema:"second addend"`
}

type none struct{}

// newTestServer builds the MCP server the tests talk to. cancelled, if not nil, receives
// a value when the slow tool sees its context end.
func newTestServer(cancelled chan<- struct{}) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "agentd-test", Version: "v0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text back.\nSecond line is dropped."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			if in.Upper {
				in.Text = strings.ToUpper(in.Text)
			}
			return text(in.Text), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Add two integers."},
		func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, any, error) {
			return text(strconv.Itoa(in.A + in.B)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Always fails."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return nil, nil, errors.New("disk quota exceeded; free some space")
		})
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "Blocks until the call is cancelled."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			<-ctx.Done()
			if cancelled != nil {
				cancelled <- struct{}{}
			}
			return nil, nil, ctx.Err()
		})
	mcp.AddTool(s, &mcp.Tool{Name: "getPID", Title: "Process id of the server"},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return text(strconv.Itoa(os.Getpid())), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "snapshot", Description: "Text, an image and a resource, for the content summary."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "a snapshot"},
				&mcp.ImageContent{MIMEType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///notes.txt", Text: "notes"}},
			}}, nil, nil
		})
	// A tool whose arguments agentd cannot express: it must be skipped, not break the others.
	s.AddTool(&mcp.Tool{Name: "free_form", Description: "Takes any object.", InputSchema: map[string]any{
		"type": "object", "properties": map[string]any{"data": map[string]any{"type": "object"}}, "required": []any{"data"},
	}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("unused"), nil })
	return s
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// memServer is an in-process test server reached over in-memory transports; kill ends
// the current connection as a crash would.
type memServer struct {
	srv       *mcp.Server
	cancelled chan struct{}
	mu        sync.Mutex
	sessions  []*mcp.ServerSession
	refuse    bool // make the next connections fail
}

func (m *memServer) dial(ServerConfig, io.Writer) (mcp.Transport, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.refuse {
		return nil, errors.New("test: server refuses to start")
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := m.srv.Connect(context.Background(), st, nil)
	if err != nil {
		return nil, err
	}
	m.sessions = append(m.sessions, ss)
	return ct, nil
}

func (m *memServer) kill() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.sessions {
		s.Close()
	}
	m.sessions = nil
}

// testLog sends the bridge's log to the test's log, so a failure shows what happened.
func testLog(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

var fastBackoff = backoff.Policy{Base: 10 * time.Millisecond, Max: 80 * time.Millisecond}

// startMem starts a bridge on one in-memory server named "mem".
func startMem(t *testing.T, cfg ServerConfig) (*Bridge, *memServer) {
	t.Helper()
	ms := &memServer{cancelled: make(chan struct{}, 4)}
	ms.srv = newTestServer(ms.cancelled)
	if cfg.Name == "" {
		cfg.Name = "mem"
	}
	cfg.Command = []string{"in-memory"}
	return startBridge(t, cfg, ms.dial), ms
}

// startBridge starts a bridge, retrying fast, to the one server cfg names, reached through
// dial when it is not nil; the bridge closes when the test ends.
func startBridge(t *testing.T, cfg ServerConfig, dial func(ServerConfig, io.Writer) (mcp.Transport, error)) *Bridge {
	t.Helper()
	b, err := New([]ServerConfig{cfg}, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	b.backoff = fastBackoff
	if dial != nil {
		b.dial = dial
	}
	b.Start(context.Background())
	t.Cleanup(b.Close)
	return b
}

// waitFor waits until cond holds, re-checking at each change the bridge announces.
func waitFor(t *testing.T, b *Bridge, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(20 * time.Second) // generous: only a hang ever gets here
	for {
		ch := b.Changed()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("timed out waiting until %s; status %+v", what, b.Status())
		}
	}
}

func available(b *Bridge, name string) func() bool {
	return func() bool {
		c, ok := b.Lookup(name)
		return ok && c.(*toolCommand).Available()
	}
}

// run executes a bridge command through commands.Run, as the daemon does.
func run(t *testing.T, b *Bridge, name, args string, lim commands.Limits) (string, error) {
	t.Helper()
	c, ok := b.Lookup(name)
	if !ok {
		t.Fatalf("no command %q; have %v", name, names(b.Commands()))
	}
	return commands.Run(context.Background(), c, commands.Env{}, []byte(args), lim)
}

func names(cs []commands.Command) []string {
	var n []string
	for _, c := range cs {
		n = append(n, c.Spec().Name)
	}
	return n
}
