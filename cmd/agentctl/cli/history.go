package cli

import (
	"fmt"
	"io"

	"github.com/agentd/agentd/api"
)

var historyCmd = &command{
	name:  "history",
	args:  "AGENT [--json]",
	short: "what an agent did, step by step",
	long: `History prints the agent's episodes, oldest first, one block per step: the command it
ran with its arguments, the outcome (succeeded, failed, denied, or feedback when you
answered with text instead), the first lines of the result, and the agent's reasoning.
Steps are grouped by run; each task or follow-up task is one run.`,
	run: refVerb(agentRef, api.HistoryRoute, func(a *app, ref string, eps []api.Episode) {
		if len(eps) == 0 {
			a.note("agent %s has no history yet", ref)
			return
		}
		run := ""
		for i := range eps {
			ep := &eps[i]
			if ep.RunID != run {
				if i > 0 {
					fmt.Fprintln(a.stdout)
				}
				run = ep.RunID
				fmt.Fprintf(a.stdout, "run %s\n", line(run))
			}
			writeEpisode(a.stdout, ep)
		}
	}),
}

func writeEpisode(w io.Writer, ep *api.Episode) {
	fmt.Fprintf(w, "\nstep %d  %s  %s  %s\n", ep.Step, line(ep.Outcome), formatTime(ep.At), formatCall(ep.Command, ep.Args))
	if ep.Decision != nil {
		d := *ep.Decision
		d.Feedback = "" // shown below, once
		fmt.Fprintf(w, "  decision: %s\n", decisionString(&d))
	}
	if ep.Reasoning != "" {
		fmt.Fprintf(w, "  reasoning: %s\n", oneParagraph(ep.Reasoning))
	}
	if ep.Feedback != "" {
		fmt.Fprintf(w, "  feedback: %s\n", oneParagraph(ep.Feedback))
	}
	writeResult(w, ep, "  result:", "    ")
}
