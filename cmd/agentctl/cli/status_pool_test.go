package cli

import (
	"testing"

	"github.com/agentd/agentd/daemon/client"
	"github.com/agentd/agentd/daemon/testutil"
)

func TestStatusOneHostSlots(t *testing.T) {
	for _, tc := range []struct {
		name  string
		hosts []client.OllamaHostStatus
		want  string
	}{
		{"one_slot_adds_nothing", []client.OllamaHostStatus{{URL: "u", Up: true, Slots: 1}}, ""},
		{"more_slots_show_busy", []client.OllamaHostStatus{{URL: "u", Up: true, Slots: 4, Busy: 2}}, "slots:\t2 of 4 busy\n"},
		{"failing_model_shows", []client.OllamaHostStatus{{URL: "u", Up: true, Slots: 1,
			Failing: []client.OllamaModelFailing{{Model: "big:70b", RetryInMS: 2400, Error: "HTTP 500: out of memory"}}}},
			"failing:\tcannot run big:70b, next try in 2s: HTTP 500: out of memory\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b testutil.SyncBuffer
			writePool(&b, client.OllamaStatus{Hosts: tc.hosts})
			if got := b.String(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
