package cli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/backoff"
)

var teamCmd = &command{
	name:  "team",
	args:  "run|plan|ls|show|stop [ARGS] [--json]",
	short: "SOP workflows: several roles working through states",
	long: `A team run follows a workflow file (TOML): roles, two-role phases in which an
instructor and an assistant take turns until one writes a line starting with <INFO> (the
conclusion, stored into a variable), and states whose next state is chosen by a rule on
the variables or by the model. Examples ship in examples/teams/.

  agentctl team run FILE TASK [--follow] [--keep-agents]
                                           check FILE and start a run of it on TASK
  agentctl team plan TASK [-o FILE]        let the model propose roles and a plan as a
                                           workflow file (checked and revised once)
  agentctl team ls                         every team run, newest first
  agentctl team show ID                    where a run is, its variables and transcript
  agentctl team stop ID                    stop a run (and the role agent's run it waits for)

Roles with commands are agents of the daemon, named like t3f2a9c1-programmer, that may
use only their role's commands (and finish, ask_user): their proposals wait for your
decision like any agent's (agentctl ls, approve, deny); team show names the agent a run
waits for. When the run ends they are removed with their workspaces (the transcript
keeps what they said) unless it was started with --keep-agents. Phases end with a recorded reason: <INFO>, a turn limit, or a
failure of the role-play (role flipping, a repeated instruction, a flake reply, a
loop of thanks or of the same message).

  agentctl team run examples/teams/software_company.toml "a CLI that counts words" --follow`,
	run: verb(teamVerbs.runTeam),
}

// teamActions are team's sub-commands.
var teamActions = map[string]func(teamVerbs, context.Context, []string) error{
	"run": teamVerbs.teamRun, "plan": teamVerbs.teamPlan, "ls": teamVerbs.teamLs, "show": teamVerbs.teamShow, "stop": teamVerbs.teamStop,
}

func (a teamVerbs) runTeam(ctx context.Context, args []string) error {
	return subcommand(a, ctx, args, "team", teamActions, "run, plan, ls, show or stop")
}

// maxWorkflow bounds a workflow file; the daemon refuses larger ones too.
const maxWorkflow = 256 << 10

func (a teamVerbs) teamRun(ctx context.Context, args []string) error {
	fs := a.newFlagSet()
	follow := fs.Bool("follow", false, "stay and show each turn as it happens, until the run ends")
	keep := fs.Bool("keep-agents", false, "keep the role agents and their workspaces after the run ends")
	pos, err := a.parse(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) < 2 {
		return usagef(`want FILE and TASK, e.g. agentctl team run team.toml "a CLI that counts words"`)
	}
	file := pos[0]
	task := strings.TrimSpace(strings.Join(pos[1:], " "))
	info, err := os.Stat(file)
	if err != nil {
		return fmt.Errorf("workflow file: %w", err)
	}
	if info.Size() > maxWorkflow {
		return fmt.Errorf("workflow file %s is %d bytes: at most %d", file, info.Size(), maxWorkflow)
	}
	src, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("workflow file: %w", err)
	}
	r, err := api.StartTeamRoute.Do(ctx, a.api(), "", api.TeamRunRequest{Workflow: string(src), File: filepath.Base(file), Task: task, By: os.Getenv("USER"), KeepAgents: *keep})
	if err != nil {
		return err
	}
	if a.json && !*follow {
		return a.printJSON(r)
	}
	if !a.json {
		fmt.Fprintf(a.stdout, "%s %s: started in state %s\n", r.ID, r.Workflow, r.State)
	}
	if !*follow {
		a.note("see it with agentctl team show %s, or stop it with agentctl team stop %s", r.ID, r.ID)
		return nil
	}
	return a.followTeam(ctx, r.ID)
}

func (a teamVerbs) teamPlan(ctx context.Context, args []string) error {
	fs := a.newFlagSet()
	out := fs.String("o", "", "write the workflow to `FILE` (refused if it exists) instead of stdout")
	pos, err := a.parse(fs, args, -1)
	if err != nil {
		return err
	}
	task := strings.TrimSpace(strings.Join(pos, " "))
	if task == "" {
		return usagef(`missing TASK, e.g. agentctl team plan "a report on SQLite's WAL mode" -o report.toml`)
	}
	p, err := api.PlanTeamRoute.Do(ctx, a.api(), "", api.TeamPlanRequest{Task: task})
	if err != nil {
		return err
	}
	if a.json {
		return a.printJSON(p)
	}
	if p.Revised {
		a.note("the observer found problems in the first plan; the model revised it:\n  %s", strings.Join(p.Problems, "\n  "))
	}
	if *out == "" {
		_, err := io.WriteString(a.stdout, p.Workflow)
		return err
	}
	f, err := os.OpenFile(*out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("writing the workflow: %w", err)
	}
	if _, err := io.WriteString(f, p.Workflow); err != nil {
		f.Close()
		return fmt.Errorf("writing the workflow: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing the workflow: %w", err)
	}
	fmt.Fprintf(a.stdout, "wrote %s\n", *out)
	a.note("read it, edit it, then: agentctl team run %s %q", *out, task)
	return nil
}

// followTeam prints a team run's transcript as it grows, until the run ends, from the
// daemon's team event stream (which starts with the transcript so far). A stream that
// breaks off before the end (the daemon restarted, this follower fell behind) is
// resumed after the last entry printed, so nothing is missed or printed twice.
func (a teamVerbs) followTeam(ctx context.Context, id string) error {
	seen, waiting, attempt := 0, "", 1
	var prev *api.TeamTurn
	for {
		ended := false
		err := a.api().TeamEvents(ctx, id, seen, func(ev api.Event) error {
			attempt = 1
			if ev.Team == nil {
				return nil
			}
			if w := ev.Team.Waiting; w != "" && w != waiting {
				waiting = w
				a.note("waiting for the role agent %s: decide its proposals with agentctl ls / approve / deny", waiting)
			}
			t := ev.Team.Turn
			if t == nil || t.Seq <= seen {
				return nil
			}
			if a.json {
				if err := a.printJSON(t); err != nil {
					return err
				}
			} else {
				writeTurn(a.stdout, t, prev)
			}
			seen, prev = t.Seq, t
			ended = t.Kind == api.TurnEnd
			return nil
		})
		switch {
		case ctx.Err() != nil:
			return nil // the run goes on
		case err != nil:
			return err
		case ended:
			return nil
		}
		if !backoff.Sleep(ctx, streamBackoff.Next(attempt)) {
			return nil
		}
		attempt++
	}
}

func (a teamVerbs) teamLs(ctx context.Context, args []string) error {
	pos, err := a.parse(a.newFlagSet(), args, -1)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("team ls takes no arguments, got %q", pos)
	}
	list, err := api.TeamsRoute.Do(ctx, a.api(), "", api.None{})
	if err != nil {
		return err
	}
	return printList(a.app, list, "no team runs: start one with agentctl team run FILE TASK (see agentctl help team)",
		"ID\tWORKFLOW\tSTATUS\tSTATE\tTURNS\tTASK", func(r *api.TeamRun) string {
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%d/%d\t%s", r.ID, r.Workflow, r.Status, r.State, r.Turns, r.MaxTurns, truncate(r.Task, 50))
		})
}

func (a teamVerbs) teamShow(ctx context.Context, args []string) error {
	return refVerb(teamRef, api.TeamRoute, writeTeamRun)(a.app, ctx, args)
}

// writeTeamRun prints a team run: its workflow, task, state, agents, variables and transcript.
func writeTeamRun(a *app, _ string, r *api.TeamRun) {
	w := a.stdout
	fmt.Fprintf(w, "team run %s: workflow %s", r.ID, r.Workflow)
	if r.File != "" {
		fmt.Fprintf(w, " (%s)", r.File)
	}
	fmt.Fprintf(w, "\ntask:    %s\nstatus:  %s", oneParagraph(r.Task), line(r.Status))
	if r.Reason != "" {
		fmt.Fprintf(w, ": %s", oneParagraph(r.Reason))
	}
	fmt.Fprintf(w, "\nstate:   %s", r.State)
	if r.Phase != "" {
		fmt.Fprintf(w, ", phase %s", r.Phase)
	}
	fmt.Fprintf(w, "\nturns:   %d of %d\n", r.Turns, r.MaxTurns)
	if r.Waiting != "" {
		fmt.Fprintf(w, "waiting: for agent %s (agentctl show %s)\n", r.Waiting, r.Waiting)
	}
	if len(r.Agents) > 0 {
		fmt.Fprintln(w, "agents:")
		for _, role := range slices.Sorted(maps.Keys(r.Agents)) {
			fmt.Fprintf(w, "  %s: %s\n", role, r.Agents[role])
		}
	}
	fmt.Fprintln(w, "variables:")
	for _, k := range slices.Sorted(maps.Keys(r.Vars)) {
		v := r.Vars[k]
		if v == "" {
			v = "(empty)"
		}
		fmt.Fprintf(w, "  %s: %s\n", k, truncate(v, 100))
	}
	if len(r.Transcript) > 0 {
		fmt.Fprintln(w, "transcript:")
		var prev *api.TeamTurn
		for i := range r.Transcript {
			writeTurn(w, &r.Transcript[i], prev)
			prev = &r.Transcript[i]
		}
	}
}

func (a teamVerbs) teamStop(ctx context.Context, args []string) error {
	return refVerb(teamRef, api.StopTeamRoute, func(a *app, _ string, r *api.TeamRun) {
		fmt.Fprintf(a.stdout, "%s stopped in state %s after %d turns\n", r.ID, r.State, r.Turns)
	})(a.app, ctx, args)
}

// writeTurn prints one transcript entry, each message labelled with its role; a header
// line (state / phase) comes before the first message of each phase.
func writeTurn(w io.Writer, t, prev *api.TeamTurn) {
	if t.Kind == api.TurnMessage && (prev == nil || prev.Kind != api.TurnMessage || prev.Phase != t.Phase || prev.Cycle != t.Cycle) {
		fmt.Fprintf(w, "  %s / %s", t.State, t.Phase)
		if t.Cycle > 0 {
			fmt.Fprintf(w, " (cycle %d)", t.Cycle)
		}
		fmt.Fprintln(w)
	}
	switch t.Kind {
	case api.TurnMessage:
		label := "[" + t.Role + "] "
		lines := strings.Split(strings.TrimRight(t.Text, "\n"), "\n")
		fmt.Fprintf(w, "    %s%s\n", label, lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(w, "    %s%s\n", strings.Repeat(" ", len(label)), l)
		}
		if t.RunID != "" { // a role agent's run: what the turn changed, by its run
			fmt.Fprintf(w, "    %s(its changes: agentctl diff %s --run %s)\n", strings.Repeat(" ", len(label)), t.AgentID, t.RunID)
		}
	case api.TurnConclusion:
		fmt.Fprintf(w, "    %s = %s\n", t.Mode, truncate(t.Text, 100))
	case api.TurnPhaseEnd:
		fmt.Fprintf(w, "    phase %s ended (%s): %s\n", t.Phase, t.Mode, t.Text)
	case api.TurnTransition:
		fmt.Fprintf(w, "  -> %s\n", t.Text)
	case api.TurnEnd:
		fmt.Fprintf(w, "  run %s: %s\n", t.Mode, t.Text)
	default:
		fmt.Fprintf(w, "    (%s) %s\n", t.Kind, t.Text)
	}
}
