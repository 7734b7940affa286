package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/agentd/agentd/api"
)

var diffCmd = &command{
	name:  "diff",
	args:  "AGENT [STEP] [--run RUN] [--json]",
	short: "what a step changed in the agent's workspace",
	long: `Diff shows what one step of the agent changed in its workspace: the files and folders
created, deleted or modified, then a unified diff of each text file (binary files are
named, not shown). STEP is a step number as 'agentctl history' shows it; without
it, the latest step that may have changed the workspace. A step still running is
shown against the workspace now.

Step numbers start again at 1 in every run (every task the agent is given), so the
same number can name steps of several runs. STEP is the latest run's that has it;
--run RUN picks another (a run id, as 'agentctl history' and this command show them),
and the output names the run shown and the other runs with that step. --run RUN
without STEP shows what the whole run changed, all its steps together: a team's turn
is a run of its role agent, so this is what the turn changed ('agentctl team show'
names each turn's agent and run).

agentd checkpoints the workspace before every step that may change it (writes,
deletes, shell and python runs, clones; not reads). 'agentctl rewind' puts the
workspace back as it was before a step.

  agentctl diff researcher 3
  agentctl diff researcher 3 --run r-5f2c9a
  agentctl diff t3f2a9c1-programmer --run r-5f2c9a`,
	run: verb(agentVerbs.runDiff),
}

func (a agentVerbs) runDiff(ctx context.Context, args []string) error {
	fs := a.newFlagSet()
	run := fs.String("run", "", "STEP of run `RUN` (default: the latest run with STEP); alone, the whole run")
	pos, err := a.parse(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) == 0 || len(pos) > 2 {
		return usagef("want AGENT and an optional STEP, got %q", pos)
	}
	step := 0
	if len(pos) == 2 {
		if step, err = strconv.Atoi(pos[1]); err != nil || step < 1 {
			return usagef("STEP %q: want a step number like 3 (agentctl history %s lists them)", pos[1], pos[0])
		}
	}
	c, err := api.DiffRoute.Do(ctx, a.api(), pos[0], api.DiffRequest{Step: step, Run: *run})
	return printResult(a.app, c, agentErr(pos[0], err), func() {
		writeStepChange(a.stdout, c)
	})
}

// writeStepChange writes a step's (or a rewind's) change: which, then the change as
// proposal previews show one, whole.
func writeStepChange(w io.Writer, c *api.StepChange) {
	what := fmt.Sprintf("step %d of run %s", c.Step, line(c.RunID))
	if c.Kind == "run" {
		what = fmt.Sprintf("run %s, all its steps from step %d", line(c.RunID), c.Step)
	}
	if c.Command != "" {
		what += "  " + line(c.Command)
	}
	if c.Running {
		what += "  (running: against the workspace now)"
	}
	fmt.Fprintf(w, "%s  %s\n", line(c.Agent), what)
	writeOtherRuns(w, c)
	if c.Notice != "" {
		fmt.Fprintf(w, "  notice: %s\n", line(c.Notice))
	}
	writePreview(w, c.Preview, "", 0)
}

// writeOtherRuns names the agent's other runs with a step of c's number, and how to pick
// one: the number alone is the latest run's.
func writeOtherRuns(w io.Writer, c *api.StepChange) {
	if len(c.OtherRuns) == 0 {
		return
	}
	runs := make([]string, len(c.OtherRuns))
	for i, r := range c.OtherRuns {
		runs[i] = line(r)
	}
	fmt.Fprintf(w, "  also a step %d in run %s: --run RUN picks one\n", c.Step, strings.Join(runs, ", "))
}
