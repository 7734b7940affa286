package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/display"
)

var showCmd = &command{
	name:  "show",
	args:  "AGENT [--json]",
	short: "show an agent: profile, state, pending proposal or question",
	long: `Show prints everything about one agent: its profile (name, description, goals), the
directives it works under, its approval policy, its state and why, the proposal waiting
for your decision (with the agent's reasoning and the exact command and arguments), a
question waiting for your answer, how many tokens it has used, and its helper agents
(named PARENT/NAME; they were started by the agent with start_agent).

AGENT is the agent's name or id.`,
	run: verb(oneRef(agentRef, agentVerbs.runShow)),
}

func (a agentVerbs) runShow(ctx context.Context, ref string) error {
	ag, err := api.AgentRoute.Do(ctx, a.api(), ref, api.None{})
	if err != nil {
		return agentErr(ref, err)
	}
	if a.json {
		return a.printJSON(ag)
	}
	writeAgent(a.stdout, ag)
	gl, err := api.GrantsRoute.Do(ctx, a.api(), ag.ID, api.None{})
	if err != nil {
		return err
	}
	writeActiveGrants(a.stdout, gl.Grants)
	// Its parent and helpers, read briefly: with thousands of agents, the rest is not kept.
	var family []api.Agent
	err = a.api().EachAgent(ctx, api.AgentQuery{Brief: true}, func(o api.Agent) error {
		if o.ID == ag.ParentID || o.ParentID == ag.ID {
			family = append(family, o)
		}
		return nil
	})
	if err != nil {
		return err
	}
	writeFamily(a.stdout, ag, family)
	return nil
}

// writeFamily shows the agent's parent and its helpers (agents it started with
// start_agent), which work under it and appear in its chat thread.
func writeFamily(w io.Writer, ag *api.Agent, all []api.Agent) {
	if ag.ParentID != "" {
		parent := ag.ParentID
		for _, p := range all {
			if p.ID == ag.ParentID {
				parent = p.Name
			}
		}
		fmt.Fprintf(w, "\nHelper of %s: its proposals follow %[1]s's policy and show in %[1]s's chat thread.\n", line(parent))
	}
	helpers := slices.DeleteFunc(slices.Clone(all), func(h api.Agent) bool { return h.ParentID != ag.ID })
	if len(helpers) == 0 {
		return
	}
	fmt.Fprintln(w, "\nHelpers:")
	tw := table(w)
	for _, h := range helpers {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", line(h.Name), stateString(&h), truncate(h.Task, lsTaskMax))
	}
	tw.Flush()
}

// writeAgent shows the agent's profile, then its goals, directives, runs and what waits
// on a person.
func writeAgent(w io.Writer, ag *api.Agent) {
	writeProfile(w, ag)
	if len(ag.Goals) > 0 {
		fmt.Fprintln(w, "\nGoals:")
		for i, g := range ag.Goals {
			fmt.Fprintf(w, "  %d. %s\n", i+1, oneParagraph(g))
		}
	}
	writeDirectives(w, ag.Directives)
	if len(ag.Runs) > 0 {
		fmt.Fprintln(w, "\nRuns (latest first):")
		tw := table(w, "  RUN\tSTARTED\tOUTCOME\tSTEPS\tTOKENS\tTASK")
		for _, r := range ag.Runs {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%d\t%s\n", line(r.ID), formatTime(r.StartedAt), line(cmp.Or(string(r.Outcome), "running")), r.Steps, r.Tokens, truncate(r.Task, 60))
		}
		tw.Flush()
	}
	if p := ag.Pending; p != nil {
		fmt.Fprintf(w, "\nPending proposal %s (step %d, %s):\n", p.ID, p.Step, p.Status)
		writeProposal(w, p, 0, 0)
		fmt.Fprintf(w, "  decide with: agentctl approve %[1]s [-n N] | agentctl deny %[1]s | agentctl feedback %[1]s TEXT\n", refOf(ag))
	}
	if q := ag.Question; q != nil {
		fmt.Fprintf(w, "\nQuestion (asked %s):\n  ? %s\n", formatTime(q.AskedAt), oneParagraph(q.Text))
		fmt.Fprintf(w, "  answer with: agentctl answer %s TEXT\n", refOf(ag))
	}
}

// writeProfile shows the agent's fields a line each: who it is, its run, tokens and budget.
func writeProfile(w io.Writer, ag *api.Agent) {
	tw := table(w)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", k, line(v))
		}
	}
	row("ID", ag.ID)
	row("Name", ag.Name)
	row("Description", ag.Description)
	row("State", stateString(ag))
	task := oneParagraph(ag.Task)
	if ag.Task == api.GoalsTask && len(ag.Goals) > 0 {
		task = "its goals (below)" // made with create: the stand-in task says nothing
	}
	row("Task", task)
	if ag.RunID != "" {
		run := fmt.Sprintf("%s, step %d", ag.RunID, ag.Step)
		for _, r := range ag.Runs {
			if r.ID == ag.RunID && r.Budget != nil {
				run += ", run budget " + budgetLine(*r.Budget, " wall time")
			}
		}
		row("Run", run)
	}
	row("Policy", policyString(ag.Policy))
	row("Workspace", ag.Workspace)
	row("Tokens", fmt.Sprintf("%d (%d prompt, %d generated) over all runs", ag.PromptTokens+ag.EvalTokens, ag.PromptTokens, ag.EvalTokens))
	row("Steps", fmt.Sprintf("%d over all runs, busy %s", ag.StepsTotal, busyString(ag.BusyMS)))
	if b := ag.Budget; b != nil {
		row("Budget", agentBudgetString(*b))
		if b.MaxDisk > 0 {
			row("Disk", diskString(ag.DiskBytes, b.MaxDisk))
		}
	}
	row("Created", formatTime(ag.CreatedAt))
	row("Updated", formatTime(ag.UpdatedAt))
	tw.Flush()
}

// agentBudgetString is an agent's budget over all its runs, in one line.
func agentBudgetString(b api.Budget) string {
	s := budgetLine(b, " busy")
	if s != "" {
		s += " over all runs"
	}
	if b.MaxDisk > 0 {
		s = strings.TrimPrefix(s+"; "+display.Size(b.MaxDisk)+" on disk", "; ")
	}
	if s == "" {
		return "none (agentctl budget sets one)"
	}
	return s
}

func writeDirectives(w io.Writer, d api.Directives) {
	if len(d.Constraints)+len(d.Resources)+len(d.BestPractices) == 0 {
		return
	}
	fmt.Fprintln(w, "\nDirectives:")
	for _, sec := range []struct {
		name  string
		items []string
	}{{"constraints", d.Constraints}, {"resources", d.Resources}, {"best practices", d.BestPractices}} {
		if len(sec.items) == 0 {
			continue
		}
		fmt.Fprintf(w, "  %s:\n", sec.name)
		for _, it := range sec.items {
			fmt.Fprintf(w, "    - %s\n", oneParagraph(it))
		}
	}
}

// refOf is how to name an agent on the command line: its name, else its id.
func refOf(ag *api.Agent) string {
	if ag.Name != "" && !strings.ContainsAny(ag.Name, " \t\"'") {
		return line(ag.Name)
	}
	return line(ag.ID)
}
