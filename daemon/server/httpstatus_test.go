package server

import (
	"context"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/agentd/agentd/daemon/client"
)

// TestStatusShowsTheListener asks a running daemon for its status over the socket: the
// address shown is the one bound (port 0 in the config becomes the chosen port).
func TestStatusShowsTheListener(t *testing.T) {
	tests := []struct {
		name          string
		listen        string
		agentProtocol bool
	}{
		{"off", "", true},
		{"metrics_only", "127.0.0.1:0", false},
		{"metrics_and_agent_protocol", "127.0.0.1:0", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := httpTestConfig(t)
			cfg.HTTP.Listen, cfg.HTTP.AgentProtocol = tt.listen, tt.agentProtocol
			stop := run(t, cfg, slog.New(slog.DiscardHandler))
			defer stop()
			st, err := (&client.Client{Socket: cfg.Socket}).Status(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			h := st.HTTP
			if tt.listen == "" {
				if h != (client.HTTPStatus{}) {
					t.Fatalf("listener off, status %+v", h)
				}
				return
			}
			host, port, err := net.SplitHostPort(h.Addr)
			if p, _ := strconv.Atoi(port); err != nil || host != "127.0.0.1" || p == 0 {
				t.Fatalf("addr %q, want 127.0.0.1 and the port bound", h.Addr)
			}
			if !h.Listening || !h.Metrics || h.AgentProtocol != tt.agentProtocol || h.Remote {
				t.Fatalf("status %+v, want listening, metrics, agent_protocol %v, not remote", h, tt.agentProtocol)
			}
			conn, err := net.Dial("tcp", h.Addr)
			if err != nil {
				t.Fatalf("the address shown does not answer: %v", err)
			}
			conn.Close()
		})
	}
}

func TestHTTPServes(t *testing.T) {
	if got := httpServes(client.HTTPStatus{Metrics: true, AgentProtocol: true}); got != "metrics, agent protocol" {
		t.Errorf("httpServes = %q", got)
	}
	if got := httpServes(client.HTTPStatus{Metrics: true}); !strings.Contains(got, "metrics") || strings.Contains(got, "agent") {
		t.Errorf("httpServes = %q", got)
	}
}
