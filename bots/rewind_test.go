package bots

import (
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
)

// What /agent rewind reads from its text, and the usage it answers anything else with.
func TestParseRewindReadsStepRunOrUndo(t *testing.T) {
	for _, tc := range []struct {
		text string
		name string
		want api.RewindRequest
	}{
		{"writer --to 3", "writer", api.RewindRequest{To: 3}},
		{"writer --to 3 --run r-1", "writer", api.RewindRequest{To: 3, Run: "r-1"}},
		{"writer --run r-1", "writer", api.RewindRequest{Run: "r-1"}},
		{"writer --undo rw-2", "writer", api.RewindRequest{Undo: "rw-2"}},
	} {
		name, req, err := parseRewind(tc.text)
		if err != nil || name != tc.name || req != tc.want {
			t.Errorf("parseRewind(%q) = %q, %+v, %v; want %q, %+v", tc.text, name, req, err, tc.name, tc.want)
		}
	}
	for _, text := range []string{"", "writer", "writer --to", "writer --to 0", "writer --to x", "writer --to 3 --undo rw-1",
		"writer --run r-1 --undo rw-1", "writer --force 1"} {
		if _, _, err := parseRewind(text); err == nil || !strings.Contains(err.Error(), "Usage: /agent rewind") {
			t.Errorf("parseRewind(%q) = %v, want the usage", text, err)
		}
	}
}
