package cli

import (
	"testing"

	"github.com/agentd/agentd/api"
)

func TestHTTPState(t *testing.T) {
	tests := []struct {
		name string
		in   api.HTTPStatus
		want string
	}{
		{"off", api.HTTPStatus{}, "off"},
		{"metrics_only", api.HTTPStatus{Listening: true, Addr: "127.0.0.1:7070", Metrics: true}, "127.0.0.1:7070 (metrics)"},
		{"both", api.HTTPStatus{Listening: true, Addr: "[::1]:7070", Metrics: true, AgentProtocol: true}, "[::1]:7070 (metrics, agent protocol)"},
		{"remote", api.HTTPStatus{Listening: true, Addr: "0.0.0.0:7070", Metrics: true, Remote: true},
			"0.0.0.0:7070 (metrics), reachable from other machines"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := httpState(tt.in); got != tt.want {
				t.Errorf("httpState = %q, want %q", got, tt.want)
			}
		})
	}
}
