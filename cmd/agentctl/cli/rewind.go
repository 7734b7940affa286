package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentd/agentd/api"
)

var rewindCmd = &command{
	name:  "rewind",
	args:  "AGENT (--to STEP [--run RUN] | --run RUN | --undo ID) [--yes] [--json]",
	short: "put the agent's workspace back as it was before a step",
	long: `Rewind puts the agent's workspace back exactly as it was before step STEP (a step
number as 'agentctl history' shows it): files, folders, modes and links; files created
since are removed. Step numbers start again at 1 in every run, so STEP is the latest
run's that has it; --run RUN picks another run's (its id, as 'agentctl history' and
'agentctl diff' show it), and the question names the run. --run RUN without --to goes
back to before the run's first step: a team's turn is a run of its role agent, so this
undoes the whole turn. It first shows what would change and asks; --yes skips the question
(for scripts; without a terminal to ask on, rewind refuses unless --yes is given). What
is applied is what was shown: if the workspace changed since (the agent wrote a file),
the rewind is refused and changes nothing; run it again to see the change as it is now.

A step still running cannot be rewound under it: rewind refuses until the step ends
(or 'agentctl stop' ends it). The agent's history records the rewind and the agent is
told on its next step. A rewind can be undone: it prints its id, which
'agentctl rewind AGENT --undo ID' takes.

  agentctl rewind researcher --to 3
  agentctl rewind researcher --to 3 --run r-5f2c9a`,
	run: verb(agentVerbs.runRewind),
}

func (a agentVerbs) runRewind(ctx context.Context, args []string) error {
	fs := a.newFlagSet()
	to := fs.Int("to", 0, "put the workspace back as before step `STEP`")
	run := fs.String("run", "", "STEP of run `RUN` (default: the latest run with STEP); alone, before the run's first step")
	undo := fs.String("undo", "", "undo the rewind `ID` (rw-…, printed by the rewind)")
	yes := fs.Bool("yes", false, "do not ask: rewind at once")
	ref, err := a.parseAgent(fs, args)
	if err != nil {
		return err
	}
	if (*to > 0 || *run != "") == (*undo != "") || *to < 0 {
		return usagef("want --to STEP (a step number from agentctl history %s), --run RUN, or --undo ID, one of them", ref)
	}
	req := api.RewindRequest{To: *to, Run: *run, Undo: *undo, Source: "agentctl", DryRun: true}
	plan, err := api.RewindRoute.Do(ctx, a.api(), ref, req)
	if err != nil {
		return agentErr(ref, err)
	}
	if !*yes {
		fmt.Fprintf(a.stdout, "%s  rewind %s\n", line(plan.Agent), rewindTarget(req, plan.Restore.RunID))
		writeOtherRuns(a.stdout, &plan.Restore)
		writePreview(a.stdout, plan.Restore.Preview, "", 0)
		if err := a.confirm("Rewind? [y/N] "); err != nil {
			return err
		}
	}
	// The daemon applies the change only to the workspace the dry run compared.
	req.DryRun, req.Shown = false, plan.From
	done, err := api.RewindRoute.Do(ctx, a.api(), ref, req)
	return printResult(a.app, done, agentErr(ref, err), func() {
		fmt.Fprintf(a.stdout, "%s  rewound %s: %s\n", line(done.Agent), rewindTarget(req, done.Restore.RunID), line(done.Restore.Summary))
		fmt.Fprintf(a.stdout, "  undo with: agentctl rewind %s --undo %s\n", line(done.Agent), line(done.Undo))
	})
}

// rewindTarget names what req rewinds to; run is the step's run, as the daemon found it.
func rewindTarget(req api.RewindRequest, run string) string {
	switch {
	case req.Undo != "":
		return "undoing " + line(req.Undo)
	case req.To == 0:
		return "to before run " + line(run)
	}
	return fmt.Sprintf("to before step %d of run %s", req.To, line(run))
}

// errNotConfirmed ends a rewind nobody confirmed.
var errNotConfirmed = errors.New("not rewound: nothing was changed")

// confirm asks question on stderr and reads the answer from stdin: yes goes on; no
// answer (no stdin, </dev/null) refuses with the fix.
func (a agentVerbs) confirm(question string) error {
	fmt.Fprint(a.stderr, question)
	if a.stdin == nil {
		return errors.New("no answer: pass --yes to rewind without asking")
	}
	answer, err := bufio.NewReader(a.stdin).ReadString('\n')
	if strings.TrimSpace(answer) == "" && err != nil {
		fmt.Fprintln(a.stderr)
		return errors.New("no answer on stdin: pass --yes to rewind without asking")
	}
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return nil
	}
	return errNotConfirmed
}
