package cli

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
)

// TestSpinnerSaysWhatItWaitsOnAndHowLong: the frame names what the agent waits on and
// the seconds waited, counted from when that wait began, not from the last redraw.
func TestSpinnerSaysWhatItWaitsOnAndHowLong(t *testing.T) {
	start := time.Date(2026, 11, 21, 9, 30, 0, 0, time.UTC)
	tests := []struct {
		name  string
		label string
		tick  int
		after time.Duration
		want  string
	}{
		{"thinking_at_start", spinThinking, 0, 0, "⠋ thinking: waiting for the model (0 s)"},
		{"thinking_12s", spinThinking, 100, 12*time.Second + 400*time.Millisecond, "⠋ thinking: waiting for the model (12 s)"},
		{"model_down", spinNoModel, 3, 75 * time.Second, "⠸ waiting for the model to answer again (Ollama down or busy) (75 s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &spinner{label: tt.label, since: start}
			if got := s.frame(tt.tick, start.Add(tt.after)); got != tt.want {
				t.Errorf("frame = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestSpinnerOfALateFollowCountsFromTheModelCall: a follow that attaches while the agent
// thinks counts from when the daemon says the model call began, not from attaching.
func TestSpinnerOfALateFollowCountsFromTheModelCall(t *testing.T) {
	var mu sync.Mutex
	var out bytes.Buffer
	f := &follower{spin: &spinner{w: &out, mu: &mu}, shown: map[string]bool{}, closed: map[string]bool{}, asked: map[string]bool{},
		calls: map[string]string{}, a: &app{stdout: io.Discard, stderr: io.Discard}}
	began := time.Now().Add(-42 * time.Second).Truncate(time.Millisecond)
	mu.Lock()
	f.sync(&api.Agent{ID: "a-1", Name: "walker", State: api.StateThinking, StateSince: began}, time.Time{})
	f.settle()
	frame := f.spin.frame(0, began.Add(42*time.Second))
	f.spin.stop()
	mu.Unlock()
	if !strings.Contains(frame, "thinking: waiting for the model (42 s)") {
		t.Errorf("the spinner of a follow that attached 42 s into the call says %q", frame)
	}
}
