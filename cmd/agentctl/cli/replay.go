package cli

import (
	"cmp"
	"fmt"

	"github.com/agentd/agentd/api"
)

var replayCmd = &command{
	name:  "replay",
	args:  "RUN|AGENT [--json]",
	short: "a run step by step: thoughts, proposal, decisions, result",
	long: `Replay shows one run as it happened, step by step: what the agent observed and planned,
the command it proposed, every decision on it (who, from where, when), and what running
it returned. Give a run id (from agentctl history) or an agent, for its latest run.`,
	run: refVerb(agentRef, api.ReplayRoute, writeReplay),
}

// writeReplay prints a run as it happened: each step's thoughts, proposal, decisions and result.
func writeReplay(a *app, _ string, r *api.Replay) {
	run := r.Run
	name := cmp.Or(run.Agent, run.AgentID)
	fmt.Fprintf(a.stdout, "run %s of %s, started %s\n", run.ID, name, formatTime(run.StartedAt))
	fmt.Fprintf(a.stdout, "task: %s\n", oneParagraph(run.Task))
	for _, s := range r.Steps {
		p := s.Proposal
		fmt.Fprintf(a.stdout, "\nstep %d  %s  %s\n", p.Step, formatTime(p.CreatedAt), formatCall(p.Command, p.Args))
		writeThoughts(a.stdout, p.Thoughts, "  ", true)
		for _, d := range s.Decisions {
			fmt.Fprintf(a.stdout, "  decision at %s: %s\n", formatTime(d.At), decisionString(&d))
		}
		if e := s.Episode; e != nil {
			fmt.Fprintf(a.stdout, "  outcome: %s\n", line(e.Outcome))
			if e.Result != "" {
				writeResult(a.stdout, e, "", "    ")
			}
		} else {
			fmt.Fprintf(a.stdout, "  status: %s\n", line(string(p.Status)))
		}
	}
	if !run.EndedAt.IsZero() {
		fmt.Fprintf(a.stdout, "\nended %s: %s", formatTime(run.EndedAt), run.Outcome)
		if run.Reason != "" {
			fmt.Fprintf(a.stdout, " (%s)", oneParagraph(run.Reason))
		}
		fmt.Fprintln(a.stdout)
	}
}
