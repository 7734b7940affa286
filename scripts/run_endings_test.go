package scripts_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// finishReply is a model reply that ends the run at once.
const finishReply = `{"thoughts":{"observations":"o","text":"t","reasoning":"r","self_criticism":"s","plan":"p","speak":"Done"},"command":{"name":"finish","args":{"reason":"nothing to do"}}}`

// TestRunEndingsLeaveAgentdRunning: however run.sh's follow ends — a piped n (which
// once hung follow for ten minutes: the n came before the proposal and was dropped) or
// the agent finishing — run.sh ends, agentd keeps running, and run.sh says how to reach
// and stop it. (Ctrl-C: TestRunLeavesAgentdRunningAndSaysSo.)
func TestRunEndingsLeaveAgentdRunning(t *testing.T) {
	tests := []struct {
		name  string
		reply string
		stdin string
		want  string // in run.sh's output, besides the notes every ending gets
	}{
		{"answer_n", proposal, "n\n", "decision: denied by"},
		{"agent_finishes", finishReply, "y\n", "finished: nothing to do"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, home, env := runShWorld(t, tt.reply)

			out := sh(t, root, env, tt.stdin, "scripts/run.sh", "list the folder")
			for _, want := range []string{
				tt.want,
				"agentd keeps running, with your agents",
				"    bin/agentctl follow folder-lister\n",
				"still running, started by run.sh: agentd; stop them with: scripts/run.sh stop",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("run.sh did not say %q; it said:\n%s", want, out)
				}
			}
			if pid := agentdPID(t, filepath.Join(home, "state", "run.pids")); !running(pid) {
				t.Errorf("agentd (pid %d) stopped with run.sh:\n%s", pid, out)
			}
		})
	}
}
