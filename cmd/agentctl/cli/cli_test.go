package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/cmd/agentctl/cli"
	"github.com/agentd/agentd/internal/apitest"
	"github.com/agentd/agentd/internal/testutil"
)

func TestMain(m *testing.M) {
	time.Local = time.UTC // golden output shows times
	os.Setenv("USER", "tester")
	os.Exit(m.Run())
}

// result is one in-process run of agentctl.
type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("[exit %d]\n--- stdout\n%s--- stderr\n%s", r.code, r.stdout, r.stderr)
}

func runCLI(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	// Only a guard against a hang: a 100,000-line import under -race on a loaded
	// machine takes longer than 20s.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	code := cli.Run(ctx, args, strings.NewReader(stdin), &out, &errb)
	return result{code, out.String(), errb.String()}
}

// TestGolden runs each testdata/*.golden file's command line against the fake daemon and
// compares the exit code, stdout and stderr. A file's first line is the command, e.g.
// "$ agentctl ls"; $SOCKET is the fake's socket (also in $AGENTD_SOCKET) and $TMP an empty
// directory. Run with -update to rewrite the files after an intended change.
func TestGolden(t *testing.T) {
	f := newEnvDaemon(t)
	f.decide = conflictOnP9
	tmp := testutil.ShortTempDir(t)

	runGoldens(t, f, tmp, "testdata/*.golden")
}

// newEnvDaemon starts the fake daemon with $AGENTD_SOCKET naming it, as a command line
// without --socket (a golden file's, a completion script's) finds it.
func newEnvDaemon(t *testing.T) *fakeDaemon {
	t.Helper()
	f := newFakeDaemon(t)
	t.Setenv(api.SocketEnv, f.sock)
	return f
}

// runGoldens runs each golden file matching glob against f, as TestGolden describes.
func runGoldens(t *testing.T, f *fakeDaemon, tmp, glob string) {
	t.Helper()
	files, err := filepath.Glob(glob)
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".golden")
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			cmdline, _, _ := strings.Cut(string(b), "\n")
			args := strings.Fields(strings.TrimPrefix(cmdline, "$ agentctl"))
			for i, a := range args {
				args[i] = strings.NewReplacer("$SOCKET", f.sock, "$TMP", tmp).Replace(a)
			}
			got := cmdline + "\n" + runCLI(t, "", args...).String()
			got = strings.NewReplacer(f.sock, "$SOCKET", tmp, "$TMP").Replace(got)
			testutil.Golden(t, file, []byte(got))
		})
	}
}

func TestDecisionCommandsSendTheProposalID(t *testing.T) {
	f := newFakeDaemon(t)
	tests := []struct {
		name string
		args []string
		want api.DecideRequest
	}{
		{"approve", []string{"approve", "researcher"}, api.DecideRequest{Kind: api.DecisionApprove, Count: 1}},
		{"approve_n_after_agent", []string{"approve", "researcher", "-n", "4"}, api.DecideRequest{Kind: api.DecisionApprove, Count: 4}},
		{"deny", []string{"deny", "a-1"}, api.DecideRequest{Kind: api.DecisionDeny}},
		{"feedback_unquoted", []string{"feedback", "researcher", "use", "ls", "-la", "instead"},
			api.DecideRequest{Kind: api.DecisionFeedback, Feedback: "use ls -la instead"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, "", append([]string{"--socket", f.sock}, tt.args...)...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			got := <-f.decided
			tt.want.ProposalID, tt.want.Source, tt.want.By = "p-7", "agentctl", "tester"
			if got != tt.want {
				t.Errorf("decision = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	for _, args := range [][]string{
		{}, {"nope"}, {"approve"}, {"approve", "a", "b"}, {"approve", "a", "-n", "0"}, {"ls", "--bogus"},
		{"run"}, {"create", "--name", "x"}, {"create", "--name", "x", "--role", "r", "--start"},
		{"feedback", "a"}, {"answer"}, {"task", "a"}, {"help", "nope"},
		{"schedule"}, {"schedule", "show"}, {"schedule", "add", "x"}, {"schedule", "add", "x", "@daily"}, {"schedule", "history", "x", "-n", "-1"},
	} {
		t.Run(strings.Join(append([]string{"args"}, args...), "_"), func(t *testing.T) {
			r := runCLI(t, "", append([]string{"--socket", "/nonexistent/agentd.sock"}, args...)...)
			if r.code != 2 || r.stdout != "" || r.stderr == "" {
				t.Errorf("got %v, want exit 2 with usage on stderr only", r)
			}
		})
	}
}

// waitOutput waits until s holds substr n times, or fails the test after 10s showing s.
func waitOutput(t *testing.T, s *testutil.SyncBuffer, substr string, n int) {
	t.Helper()
	if !testutil.Wait(10*time.Second, func() bool { return strings.Count(s.String(), substr) >= n }) {
		t.Fatalf("timed out waiting for %q (x%d) in:\n%s", substr, n, s.String())
	}
}

// create says at once when the new agent's deny rules (its config section's, the global
// ones) have no second wall, as the daemon's policy view warns.
func TestCreateWarnsWhenTheAgentsDenyRulesHaveNoSecondWall(t *testing.T) {
	f := newFakeDaemon(t)
	const warning = "checkpoints are off ([checkpoints] enabled = false), so the deny rules have no second wall: set [checkpoints] enabled = true in the config"
	apitest.Handle(&f.api, api.PolicyRoute, func(_ context.Context, ref string, _ api.None) (*api.PolicyView, error) {
		if ref != "a-9" { // the agent create made
			return nil, fmt.Errorf("%w: no agent %s", api.ErrNotFound, ref)
		}
		return &api.PolicyView{AgentID: ref, Permissions: []api.Permission{{Effect: "deny", Pattern: "write_file(*.toml)", Source: "config"}}, Warnings: []string{warning}}, nil
	})
	r := runCLI(t, "", "--socket", f.sock, "create", "--name", "x", "--role", "a test agent")
	if r.code != 0 || !strings.Contains(r.stderr, "warning: "+warning+"\n") || strings.Contains(r.stdout, "warning") {
		t.Errorf("create with deny rules and checkpoints off: %s\nwant the warning on stderr", r)
	}
}
