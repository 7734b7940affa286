package scripts_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestQuietlyBeatsWhileItRuns: a quiet step keeps its output in its log, says it still runs
// while it takes long (so the screen is never silent for a beat), and shows its output and
// status when it fails.
func TestQuietlyBeatsWhileItRuns(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cmd     string
		wantRC  int
		want    []string // each must be on the screen
		notWant []string
		inLog   string
	}{
		{"slow_step_says_it_still_runs", `quietly t.log sh -c 'echo noise; sleep 2.5'`, 0,
			[]string{"==> still running (1s so far): sh -c echo noise; sleep 2.5\n", "==> still running (2s so far)"}, []string{"noise\n"}, "noise"},
		{"quick_step_says_nothing", `quietly t.log echo noise`, 0, nil, []string{"noise", "still running"}, "noise"},
		{"failing_step_shows_its_output_and_status", `quietly t.log sh -c 'echo why; exit 3'`, 3,
			[]string{"error: `sh -c echo why; exit 3` failed (exit 3)", "why"}, []string{"still running"}, "why"},
		{"beating_shows_the_output_and_keeps_the_status", `beating "a slow step" sh -c 'echo shown; sleep 1.5; exit 4'`, 4,
			[]string{"shown\n", "==> still running (1s so far): a slow step\n"}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			logs := t.TempDir()
			cmd := exec.Command("bash", "-c", ". ./lib.sh && "+tt.cmd)
			cmd.Env = append(os.Environ(), "AGENTD_LOGS="+logs, "AGENTD_BEAT_SECONDS=1")
			out, err := cmd.CombinedOutput()
			rc := 0
			if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
				rc = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if rc != tt.wantRC {
				t.Errorf("exit %d, want %d; output:\n%s", rc, tt.wantRC, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(string(out), w) {
					t.Errorf("output has %q:\n%s", w, out)
				}
			}
			if tt.inLog != "" {
				if b, _ := os.ReadFile(filepath.Join(logs, "t.log")); !strings.Contains(string(b), tt.inLog) {
					t.Errorf("the log lacks %q:\n%s", tt.inLog, b)
				}
			}
		})
	}
}
