package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentd/agentd/api"
)

var whyCmd = &command{
	name:  "why",
	args:  "AGENT [--json]",
	short: "who or which rule decided the agent's last proposal, and why",
	long: `Why shows the decision on the agent's last decided proposal, as the daemon stored it:
the proposal (step, command and arguments), the decision (approve, deny or feedback),
who made it and from where (agentctl, slack, discord, api), and why. A decision the
policy made names the allow or deny pattern that matched and the layer holding it
(config, agent-config or stored), or continuous mode; one a grant made (y -N, y!, a
pattern added with agentctl policy add, a schedule's autonomy) names the grant, who made
it, what was left of it then and what is left now.`,
	run: verb(oneRef(agentRef, agentVerbs.runWhy)),
}

func (a agentVerbs) runWhy(ctx context.Context, ref string) error {
	w, err := api.WhyRoute.Do(ctx, a.api(), ref, api.None{})
	if errors.Is(err, api.ErrNotFound) {
		if _, aerr := api.AgentRoute.Do(ctx, a.api(), ref, api.None{}); aerr != nil {
			return agentErr(ref, aerr) // no such agent, rather than no decision yet
		}
	}
	return printResult(a.app, w, err, func() {
		d, p := &w.Decision, &w.Proposal
		fmt.Fprintf(a.stdout, "%s  step %d  %s\n", line(w.Agent), p.Step, formatCall(p.Command, p.Args))
		fmt.Fprintf(a.stdout, "  proposal:  %s (%s)\n", line(p.ID), line(string(p.Status)))
		fmt.Fprintf(a.stdout, "  decision:  %s at %s\n", line(string(d.Kind)), formatTime(d.At))
		fmt.Fprintf(a.stdout, "  by:        %s\n", line(cmdWho(d)))
		if g := w.Grant; g != nil {
			fmt.Fprintf(a.stdout, "  grant:     %s  %s  (now %s: %s)\n", line(g.ID), line(d.GrantText()), line(g.State), line(g.Describe()))
		}
		if d.Pattern != "" {
			layer := ""
			if w.Layer != "" {
				layer = "  (" + line(w.Layer) + ")"
			}
			fmt.Fprintf(a.stdout, "  pattern:   %s%s\n", line(d.Pattern), layer)
		}
		if d.Feedback != "" {
			fmt.Fprintf(a.stdout, "  feedback:  %s\n", oneParagraph(d.Feedback))
		}
		fmt.Fprintf(a.stdout, "  why:       %s\n", line(w.Reason))
	})
}

// cmdWho names who decided: a person and where from, a grant and its maker, or the
// policy and what in it.
func cmdWho(d *api.Decision) string {
	if d.Source == "grant" {
		return "grant " + d.Grant + " made by " + d.By
	}
	return via(d.By, d.Source)
}

// via names who did something from where: "root via slack", or the source alone.
func via(by, source string) string {
	if by == "" {
		return source
	}
	return by + " via " + source
}
