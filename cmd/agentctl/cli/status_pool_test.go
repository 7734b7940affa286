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
