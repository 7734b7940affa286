package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/agentd/agentd/api"
)

var diffCmd = &command{
	name:  "diff",
	args:  "AGENT [STEP] [--json]",
	short: "what a step changed in the agent's workspace",
	long: `Diff shows what one step of the agent changed in its workspace: the files and folders
created, deleted or modified, then a unified diff of each text file (binary files are
named, not shown). STEP is a step number as 'agentctl history' shows it, of the
agent's latest run with that step; without it, the latest step that may have
changed the workspace. A step still running is shown against the workspace now.

agentd checkpoints the workspace before every step that may change it (writes,
deletes, shell and python runs, clones; not reads). 'agentctl rewind' puts the
workspace back as it was before a step.

  agentctl diff researcher 3`,
	run: verb(agentVerbs.runDiff),
}

func (a agentVerbs) runDiff(ctx context.Context, args []string) error {
	pos, err := a.parse(a.newFlagSet(), args, -1)
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
	c, err := a.api().Diff(ctx, pos[0], step)
	if err != nil {
		return agentErr(pos[0], err)
	}
	if a.json {
		return a.printJSON(c)
	}
	writeStepChange(a.stdout, c)
	return nil
}

// writeStepChange writes a step's (or a rewind's) change: which, then the change as
// proposal previews show one, whole.
func writeStepChange(w io.Writer, c *api.StepChange) {
	what := fmt.Sprintf("step %d", c.Step)
	if c.Command != "" {
		what += "  " + line(c.Command)
	}
	if c.Running {
		what += "  (running: against the workspace now)"
	}
	fmt.Fprintf(w, "%s  %s\n", line(c.Agent), what)
	if c.Notice != "" {
		fmt.Fprintf(w, "  notice: %s\n", line(c.Notice))
	}
	writePreview(w, c.Preview, "", 0)
}
