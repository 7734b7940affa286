package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/testutil"
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

func TestStatusOneHostSlots(t *testing.T) {
	for _, tc := range []struct {
		name  string
		hosts []api.OllamaHostStatus
		want  string
	}{
		{"one_slot_adds_nothing", []api.OllamaHostStatus{{URL: "u", Up: true, Slots: 1}}, ""},
		{"more_slots_show_busy", []api.OllamaHostStatus{{URL: "u", Up: true, Slots: 4, Busy: 2}}, "slots:\t2 of 4 busy\n"},
		{"failing_model_shows", []api.OllamaHostStatus{{URL: "u", Up: true, Slots: 1,
			Failing: []api.OllamaModelFailing{{Model: "big:70b", RetryInMS: 2400, Error: "HTTP 500: out of memory"}}}},
			"failing:\tcannot run big:70b, next try in 2s: HTTP 500: out of memory\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b testutil.SyncBuffer
			writePool(&b, api.OllamaStatus{Hosts: tc.hosts})
			if got := b.String(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// Each host of a pool says how old the daemon's word on it is.
func TestStatusHostsShowCheckAge(t *testing.T) {
	now := time.Now()
	var b testutil.SyncBuffer
	writePool(&b, api.OllamaStatus{Hosts: []api.OllamaHostStatus{
		{URL: "http://a:11434", Up: true, Slots: 1, CheckedAt: now},
		{URL: "http://b:11434", Error: "connection refused", CheckedAt: now.Add(-5 * time.Second)},
	}})
	for _, want := range []string{"http://a:11434 up, 0 of 1 slots busy, 0 calls (checked just now)\n",
		"http://b:11434 down: connection refused (checked 5s ago)\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, b.String())
		}
	}
}
