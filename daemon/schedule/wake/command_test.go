package wake

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/commands/shell"
	"github.com/agentd/agentd/internal/shelltest"
	"github.com/agentd/agentd/internal/testutil"
)

// TestCommandVerdicts: exit 0 wakes with the output as what the run starts from, exit 1
// is nothing to do with the output's first line as the reason, and any other status is a
// failed check that names it.
func TestCommandVerdicts(t *testing.T) {
	sh := sandboxShell(t)
	r := newRig(t, false)
	ws := workspace(t)
	write(t, filepath.Join(ws, "inbox", "1.txt"), "mail\n")
	tg := Target{AgentID: "a-test", Workspace: ws, Shell: sh}
	tests := []struct {
		line    string
		outcome Outcome
		in      string // in the observation (wake) or the reason
	}{
		{"ls inbox | grep . && echo new mail", Wake, "1.txt\nnew mail"},
		{"echo no new mail; exit 1", NothingToDo, "exited 1: no new mail"},
		{"echo broken >&2; exit 2", CheckFailed, "exited 2 (0 wakes the model, 1 is nothing to do, anything else a failed check): broken"},
		{"no-such-program", CheckFailed, "exited 127"},
	}
	for i, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			id := r.schedule("s-cmd" + string(rune('a'+i)))
			v := r.fire(id, Conditions{Commands: []string{tt.line}}, tg)
			got := v.Reason
			if v.Outcome == Wake {
				got = v.Observation
			}
			if v.Outcome != tt.outcome || !strings.Contains(got, tt.in) {
				t.Fatalf("got %s: %q; want %s with %q", v.Outcome, got, tt.outcome, tt.in)
			}
		})
	}
}

// TestCommandIsBounded: a check command that hangs, floods its output, forks without end
// or writes the workspace is bounded by the same sandbox as execute_shell: stopped (time,
// bytes) and recorded as a failed check saying why, its processes gone; the workspace
// unchanged.
func TestCommandIsBounded(t *testing.T) {
	sh := sandboxShell(t)
	st := newRig(t, false)

	ws := workspace(t)
	write(t, filepath.Join(ws, "kept.txt"), "original\n")
	tg := Target{AgentID: "a-test", Workspace: ws, Shell: sh}
	tests := []struct {
		name    string
		line    string
		timeout time.Duration
		outcome Outcome
		reason  []string // one of these is in the reason
	}{
		{"hang", "sleep 600 # wake-hang-marker", time.Second, CheckFailed, []string{"ran longer than 1s"}},
		{"flood", "yes wake-flood", time.Minute, CheckFailed, []string{"bytes of output"}},
		{"writes_workspace", "echo changed > kept.txt && rm -f kept.txt && touch new.txt", time.Minute, CheckFailed, []string{"Read-only file system"}},
		{"fork_storm", "for i in $(seq 2000); do sleep 600 & done; wait # wake-fork-marker", 5 * time.Second, CheckFailed, []string{"Cannot fork", "ran longer than 5s"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st.timeout = tt.timeout
			st.restart()
			id := st.schedule("s-bound" + string(rune('a'+i)))
			v := st.fire(id, Conditions{Commands: []string{tt.line}}, tg)
			if v.Outcome != tt.outcome || v.Wake || !slices.ContainsFunc(tt.reason, func(s string) bool { return strings.Contains(v.Reason, s) }) {
				t.Fatalf("got %s: %q; want %s with %q", v.Outcome, v.Reason, tt.outcome, tt.reason)
			}
		})
	}
	if b, err := os.ReadFile(filepath.Join(ws, "kept.txt")); err != nil || string(b) != "original\n" {
		t.Errorf("kept.txt: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(ws, "new.txt")); err == nil {
		t.Error("a check command wrote new.txt into the workspace")
	}
	for _, marker := range []string{"wake-hang-marker", "wake-flood", "wake-fork-marker"} {
		if !testutil.Wait(5*time.Second, func() bool { return len(testutil.ProcessesWith(marker)) == 0 }) {
			t.Errorf("processes of %q outlived their check: %v", marker, testutil.ProcessesWith(marker))
		}
	}
}

// TestCheckCommandIsOfflineUnlessTheScheduleSaysNetwork: a check command runs without the
// network even where the agent's config grants it, and a failed offline check says how to
// give it the network; with --when-network it has the network the config grants.
func TestCheckCommandIsOfflineUnlessTheScheduleSaysNetwork(t *testing.T) {
	shelltest.Sandboxed(t) // skips without a sandbox
	bwrap, _ := exec.LookPath("bwrap")
	c, err := shell.NewExecuteShell(shell.Options{Sandbox: shell.SandboxBwrap, Bwrap: bwrap, Network: true})
	if err != nil {
		t.Skipf("sandbox not available: %v", err)
	}
	r := newRig(t, false)
	tg := Target{AgentID: "a-test", Workspace: workspace(t), Shell: c.(shell.Checker)}
	// Only a loopback interface is seen in a network namespace of its own.
	line := `awk 'NR>2 && $1 != "lo:"' /proc/net/dev | grep -q . && echo online || { echo offline; exit 2; }`
	v := r.fire(r.schedule("s-offline"), Conditions{Commands: []string{line}}, tg)
	if v.Outcome != CheckFailed || !strings.Contains(v.Reason, "offline") || !strings.Contains(v.Reason, "--when-network") {
		t.Errorf("without --when-network: got %s %q; want a failed check run offline, naming --when-network", v.Outcome, v.Reason)
	}
	v = r.fire(r.schedule("s-online"), Conditions{Commands: []string{line}, Network: true}, tg)
	if v.Outcome != Wake || !strings.Contains(v.Observation, "online") {
		t.Errorf("with --when-network: got %s %q %q; want the network the config grants", v.Outcome, v.Reason, v.Observation)
	}
	if _, err := (Conditions{Network: true}).Check(); err == nil || !strings.Contains(err.Error(), "--when 'COMMAND'") {
		t.Errorf("--when-network with no check command: %v", err)
	}
}
