package cli

import (
	"testing"
	"time"
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
