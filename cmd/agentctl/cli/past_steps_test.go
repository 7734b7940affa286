package cli_test

// The commands that look back at a step the agent took: why (who or which rule decided
// it), diff (what it changed in the workspace) and rewind (putting the workspace back).

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/apitest"
)

// TestWhyGolden runs testdata/why/*.golden: a policy approval by a pattern (text and
// --json), a person's denial, an agent with no decision yet and an unknown agent.
func TestWhyGolden(t *testing.T) {
	f, at := newEnvDaemon(t), stepAt
	whys := map[string]*api.Why{
		"researcher": {AgentID: "a-1", Agent: "researcher", Layer: "config",
			Proposal: api.Proposal{ID: "p-1", AgentID: "a-1", Step: 3, Command: "read_file",
				Args: json.RawMessage(`{"path":"notes.md"}`), Status: api.ProposalSucceeded},
			Decision: api.Decision{ProposalID: "p-1", Kind: api.DecisionApprove, Count: 1, Source: "policy",
				By: "allow pattern read_file(*)", Pattern: "read_file(*)", At: at},
			Reason: "auto-approved by the allow pattern read_file(*) (config)"},
		"writer": {AgentID: "a-5", Agent: "writer",
			Proposal: api.Proposal{ID: "p-9", AgentID: "a-5", Step: 6, Command: "write_file",
				Args: json.RawMessage(`{"path":"notes/b.md"}`), Status: api.ProposalSucceeded},
			Decision: api.Decision{ProposalID: "p-9", Kind: api.DecisionApprove, Count: 1, Source: "grant", By: "root",
				Grant: "g-2b", GrantLabel: "root's y -3", GrantCount: 2, GrantLeft: 1, At: at},
			Grant: &api.Grant{ID: "g-2b", Kind: api.GrantCount, By: "root", Source: "agentctl", Label: "y -3", Count: 2, Used: 2,
				RunID: "r-1", State: api.GrantUsedUp},
			Reason: "approved by root's y -3 (1 left) (grant g-2b), without asking"},
		"a-2": {AgentID: "a-2", Agent: "scribe",
			Proposal: api.Proposal{ID: "p-7", AgentID: "a-2", Step: 1, Command: "execute_shell",
				Args: json.RawMessage(`{"command":"rm -rf build"}`), Status: api.ProposalDenied},
			Decision: api.Decision{ProposalID: "p-7", Kind: api.DecisionDeny, Source: "slack", By: "alice", At: at},
			Reason:   "denied by alice via slack; the run stopped"},
	}
	apitest.Handle(&f.api, api.WhyRoute, func(_ context.Context, ref string, _ api.None) (*api.Why, error) {
		if w, ok := whys[ref]; ok {
			return w, nil
		}
		if ref == "a-3" {
			return nil, api.Errorf(api.ErrNotFound, "agent builder has no decided proposal yet: `agentctl show builder` shows what it waits for")
		}
		return nil, fmt.Errorf("no agent %q: %w", ref, api.ErrNotFound)
	})
	runGoldens(t, f, t.TempDir(), "testdata/why/*.golden")
}

// TestDiffAndRewindGolden runs testdata/rewind/*.golden: a step's diff (named, latest,
// a bad step, none, an earlier run's by --run, a whole run by --run alone), a rewind with --yes, one with no answer to its question (refused,
// nothing changed, the fix named), one with no target, one of an earlier run's step (--run), one to before a whole run, one refused while a step runs,
// and undoing a rewind as JSON.
func TestDiffAndRewindGolden(t *testing.T) {
	f, at := newEnvDaemon(t), stepAt
	change := func(step int, summary, diff string) *api.StepChange {
		return &api.StepChange{AgentID: "a-1", Agent: "researcher", ID: "p-3", RunID: "r-1", Step: step, Kind: "step",
			Command: "execute_shell", Files: 2, Added: 2, Removed: 1, Summary: summary, At: at,
			Preview: &api.Preview{Kind: api.PreviewChange, Summary: summary, Diff: diff}}
	}
	const diff = "modified file notes.md (+1 −1)\ncreated file out/\x1b[31mred.txt (+1 −0)\n\n--- a/notes.md\n+++ b/notes.md\n@@ -1 +1 @@\n-old\n+new\n"
	apitest.Handle(&f.api, api.DiffRoute, func(_ context.Context, ref string, in api.DiffRequest) (*api.StepChange, error) {
		if ref != "researcher" {
			return nil, api.Errorf(api.ErrNotFound, "agent builder has no checkpointed step 2: only steps that may change the workspace are (`agentctl history builder` lists them)")
		}
		step := in.Step
		if step == 0 {
			step = 4 // the latest
		}
		c := change(step, "changed 2 files (+2 −1)", diff)
		switch {
		case in.Run != "" && in.Step == 0: // the whole run
			c.Kind, c.ID, c.RunID, c.Step, c.Command = "run", in.Run, in.Run, 1, ""
		case in.Run != "":
			c.RunID, c.OtherRuns = in.Run, []string{"r-1"}
		case step == 3: // step 3 is in two runs: the latest (r-1) is shown, r-0 named
			c.OtherRuns = []string{"r-0"}
		}
		return c, nil
	})
	var rewound []api.RewindRequest
	apitest.Handle(&f.api, api.RewindRoute, func(_ context.Context, ref string, in api.RewindRequest) (*api.Rewind, error) {
		if ref == "busy" {
			return nil, api.Errorf(api.ErrConflict, "agent busy is running step 4 (execute_shell): a rewind waits until it ends; try again then, or `agentctl stop busy` first")
		}
		if !in.DryRun {
			rewound = append(rewound, in)
		}
		r := &api.Rewind{AgentID: "a-1", Agent: "researcher", Step: in.To, Done: !in.DryRun, Undo: "rw-9",
			Restore: *change(in.To, "changed 2 files (+1 −2)", "deleted file out/red.txt (+0 −1)\n")}
		if in.DryRun {
			r.From = shownRoot
		}
		if in.Run != "" {
			r.Restore.RunID, r.Restore.OtherRuns = in.Run, []string{"r-1"}
		}
		return r, nil
	})
	runGoldens(t, f, t.TempDir(), "testdata/rewind/*.golden")
	slices.SortStableFunc(rewound, func(a, b api.RewindRequest) int { return strings.Compare(a.Undo+a.Run, b.Undo+b.Run) })
	if len(rewound) != 4 || rewound[0].To != 3 || rewound[0].Run != "" || rewound[1].To != 3 || rewound[1].Run != "r-0" ||
		rewound[2].To != 0 || rewound[2].Run != "r-0" || rewound[3].Undo != "rw-7" {
		t.Errorf("the daemon was asked to rewind %+v; want to step 3 of the latest run once (--yes), of run r-0 once, to before run r-0 once, and to undo rw-7 once", rewound)
	}
}

// shownRoot is the workspace root a fake dry run returns (api.Rewind.From).
const shownRoot = "5be1c0de5be1c0de5be1c0de5be1c0de5be1c0de5be1c0de5be1c0de5be1c0de"

// Every rewind agentctl asks for applies the workspace its dry run showed, --yes too:
// it sends the dry run's From back as Shown.
func TestRewindSendsBackTheWorkspaceItsDryRunShowed(t *testing.T) {
	f := newFakeDaemon(t)
	var asked []api.RewindRequest
	apitest.Handle(&f.api, api.RewindRoute, func(_ context.Context, ref string, in api.RewindRequest) (*api.Rewind, error) {
		asked = append(asked, in)
		r := &api.Rewind{Agent: ref, Step: in.To, Done: !in.DryRun, Undo: "rw-1", Restore: api.StepChange{Summary: "changed 1 file (+0 −1)"}}
		if in.DryRun {
			r.From = shownRoot
		}
		return r, nil
	})
	for _, args := range [][]string{{"--to", "2"}, {"--to", "2", "--yes"}, {"--undo", "rw-7", "--yes"}} {
		asked = nil
		r := runCLI(t, "y\n", append([]string{"--socket", f.sock, "rewind", "researcher"}, args...)...)
		if len(asked) != 2 || !asked[0].DryRun || asked[1].DryRun || asked[1].Shown != shownRoot || asked[0].Shown != "" {
			t.Errorf("rewind %v asked the daemon %+v; want a dry run, then the rewind with its From as Shown; output:\n%s", args, asked, r)
		}
	}
}

// Answering the question yes rewinds; anything else leaves the workspace alone.
func TestRewindAsksAndOnlyYesRewinds(t *testing.T) {
	f := newFakeDaemon(t)
	var dry, done int
	apitest.Handle(&f.api, api.RewindRoute, func(_ context.Context, ref string, in api.RewindRequest) (*api.Rewind, error) {
		if in.DryRun {
			dry++
		} else {
			done++
		}
		return &api.Rewind{Agent: ref, Step: in.To, Done: !in.DryRun, Undo: "rw-1",
			Restore: api.StepChange{Summary: "changed 1 file (+0 −1)", Preview: &api.Preview{Kind: api.PreviewChange, Summary: "changed 1 file (+0 −1)"}}}, nil
	})
	for _, c := range []struct {
		answer string
		done   int
	}{{"n\n", 0}, {"y\n", 1}, {"yes\n", 2}, {"\n", 2}} {
		r := runCLI(t, c.answer, "--socket", f.sock, "rewind", "researcher", "--to", "2")
		if done != c.done || (c.done == 0 && !strings.Contains(r.String(), "not rewound")) {
			t.Errorf("answer %q: %d rewinds (want %d); output:\n%s", c.answer, done, c.done, r)
		}
	}
	if dry != 4 {
		t.Errorf("%d dry runs for 4 questions: each question must show what would change first", dry)
	}
}
