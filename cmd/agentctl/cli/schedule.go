package cli

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agentd/agentd/api"
)

var scheduleCmd = &command{
	name:  "schedule",
	args:  "add|ls|show|edit|rm|pause|resume|run-now|history [ARGS] [--json]",
	short: "recurring goals: cron schedules that wake agents",
	long: `A schedule gives an agent a goal on a timetable: "every weekday at 9, summarize what
changed in ~/notes". Each time it fires, either an existing agent gets the goal as a new
task, or (with --template) a fresh agent is created for the run. Every firing is recorded:
run, finished, failed, budget exhausted, skipped (the last run was still going), missed
(agentd was not running then), nothing_to_do or check_failed (wake conditions, below).

  agentctl schedule add NAME SPEC --goal TEXT (--agent AGENT | --template PREFIX) [flags]
  agentctl schedule ls                  every schedule with its next fire time
  agentctl schedule show NAME           settings, status, next fire times, recent runs
  agentctl schedule history NAME        every firing and how its run ended
  agentctl schedule edit NAME --when…   change its wake conditions (--when-none: remove them)
  agentctl schedule run-now NAME        fire it now (paused or not)
  agentctl schedule pause NAME          stop it firing; resume NAME starts it again
  agentctl schedule rm NAME             remove it and its records (runs going on stay)

SPEC is a cron spec in quotes: five fields, minute hour day-of-month month day-of-week.
  "0 9 * * 1-5"                     every weekday at 09:00
  "*/30 * * * *"                    every 30 minutes
  "0 18 * * fri"                    Fridays at 18:00
  "@every 90m"                      every 90 minutes, counted from when it was added
  "@daily", "@weekly", "@hourly"    at midnight, Sunday midnight, every hour
  "CRON_TZ=Europe/Berlin 30 2 * * *"   02:30 Berlin time, whatever agentd's zone
Times are agentd's local time unless the spec starts with CRON_TZ= or --tz is given.
A time skipped by a daylight-saving jump (02:30 on the spring-forward night) runs at
the first minute after the jump; a time repeated in autumn runs once. add prints the
next five fire times, so you can check a spec before it matters.

Wake conditions (checked at each firing before any model call; an idle schedule then
costs a check, not a run):
  --when-changed PATH   a file or folder in the agent's workspace changed since the last
                        run started (content hashes; repeatable, all paths are one condition)
  --when-url URL        the page's text changed (fetched and guarded as read_webpage;
                        ETag and Last-Modified honoured)
  --when 'COMMAND'      a shell line run in the agent's sandbox (read-only workspace)
                        exits 0; its output is what the run starts from. Exit 1: nothing to do
  --when-network        let the --when commands use the network the agent's config grants
                        (they run offline without it: a check may run a script the agent wrote)
  --when-any | --when-all     any condition wakes (default), or only all of them
  --when-failed skip|wake     once checks keep failing: skip firings (default) or wake
  --when-failed-after N       failures in a row before they are told (default 3)
A firing with nothing to do is recorded as nothing_to_do with the reason and posts
nothing to chat; a check that cannot run is check_failed, and the N-th in a row is
shown by schedule show, doctor and the delivery channel. The run a change wakes starts
from what changed (the paths and their diffs, the page's change, the command's output).

Autonomy (what runs without you):
  --autonomy ask        every proposal waits for you (the default): see agentctl ls
  --autonomy auto --steps N   the first N proposals run unasked (N defaults to --max-steps)
  --allow PATTERN       only proposals matching the permission pattern run unasked,
                        e.g. --allow 'read_file(*)' --allow 'write_file(digest.md)'
Budgets stop a run cleanly (outcome budget_exhausted): --max-steps, --max-tokens, --max-time.
Execute commands (shells) always ask unless an --allow pattern names them.

Examples:
  agentctl schedule add notes-digest "0 9 * * 1-5" --template digest \
      --goal "summarize what changed in ~/notes into digest.md" \
      --autonomy auto --max-steps 10 --max-time 15m
  agentctl schedule add tidy "@every 90m" --agent janitor --goal "tidy the inbox folder" \
      --allow 'list_folder(*)' --allow 'read_file(*)'
  agentctl schedule add backup "CRON_TZ=Europe/Berlin 30 2 * * *" --agent ops \
      --goal "check last night's backup log" --missed run_once
  agentctl schedule add triage "*/15 * * * *" --agent janitor --goal "triage new mail in inbox" \
      --when-changed inbox

Results and pending approvals are seen with agentctl (ls, show, follow). With
--delivery slack:CHANNEL_ID or discord:CHANNEL_ID each run gets a thread in that channel
(served by the Slack or Discord bot): its proposals are decided there, its end and
skipped or missed firings are posted.`,
	run: verb(scheduleVerbs.runSchedule),
}

// scheduleActions are schedule's sub-commands.
var scheduleActions = map[string]func(scheduleVerbs, context.Context, []string) error{
	"add": scheduleVerbs.scheduleAdd, "ls": scheduleVerbs.scheduleLs, "show": oneRef(scheduleRef, scheduleVerbs.scheduleShow), "rm": oneRef(scheduleRef, scheduleVerbs.scheduleRm),
	"pause": scheduleVerbs.schedulePause, "resume": scheduleVerbs.scheduleResume, "run-now": oneRef(scheduleRef, scheduleVerbs.scheduleRunNow),
	"history": scheduleVerbs.scheduleHistory, "edit": scheduleVerbs.scheduleEdit,
}

func (a scheduleVerbs) runSchedule(ctx context.Context, args []string) error {
	return subcommand(a, ctx, args, "schedule", scheduleActions, "add, ls, show, edit, rm, pause, resume, run-now or history")
}

// parseSchedule parses an action that takes exactly one schedule NAME. The daemon's
// errors about a NAME say which schedule and how to find one, so they pass on as they are.
func (a scheduleVerbs) parseSchedule(fs *flag.FlagSet, args []string) (string, error) {
	return scheduleRef.parse(a.app, fs, args)
}

func (a scheduleVerbs) scheduleAdd(ctx context.Context, args []string) error {
	fs := a.newFlagSet()
	var req api.ScheduleRequest
	var allow []string
	fs.StringVar(&req.Goal, "goal", "", "`TEXT`: what each run should do (required)")
	fs.StringVar(&req.Agent, "agent", "", "give the goal to this existing `AGENT` each time")
	fs.StringVar(&req.Template, "template", "", "create a fresh agent named `PREFIX`-xxxxxx for each run")
	fs.StringVar(&req.Description, "description", "", "`TEXT`: the template agents' role, one sentence")
	fs.StringVar(&req.TimeZone, "tz", "", "read the spec in this IANA time `ZONE` (e.g. America/New_York)")
	fs.StringVar(&req.Autonomy.Mode, "autonomy", "", "`MODE`: ask, auto or patterns (default ask; auto with --steps, patterns with --allow)")
	fs.IntVar(&req.Autonomy.Steps, "steps", 0, "with auto: how many (`N`) proposals run without asking (default --max-steps)")
	fs.Func("allow", "a permission `PATTERN` whose matches run unasked (repeatable)", func(v string) error { allow = append(allow, v); return nil })
	fs.IntVar(&req.Budget.MaxSteps, "max-steps", 0, "stop each run after `N` steps")
	fs.Int64Var(&req.Budget.MaxTokens, "max-tokens", 0, "stop each run after `N` model tokens")
	fs.StringVar(&req.Budget.MaxTime, "max-time", "", "stop each run after this `DURATION` (e.g. 15m)")
	fs.StringVar(&req.Concurrency, "concurrency", "", "`POLICY` while the last run still goes: skip (default), queue or parallel")
	fs.StringVar(&req.Missed, "missed", "", "`POLICY` for firings missed while agentd was down: skip (default), run_once or run_if_within=DURATION")
	fs.StringVar(&req.Delivery, "delivery", "", "`WHERE` results and approvals go: agentctl (default), slack:CHANNEL_ID or discord:CHANNEL_ID")
	fs.BoolVar(&req.Paused, "paused", false, "add it paused")
	var when api.WhenFlags
	when.Register(fs, false)
	pos, err := a.parse(fs, args, -1)
	if err != nil {
		return err
	}
	if req.When, err = when.Conditions(); err != nil {
		return usagef("%v", err)
	}
	if len(pos) != 2 {
		return usagef(`want NAME and SPEC (quote the spec: "0 9 * * 1-5"), got %q`, pos)
	}
	req.Name, req.Spec = pos[0], pos[1]
	if strings.TrimSpace(req.Goal) == "" {
		return usagef("missing --goal: what should each run do?")
	}
	req.Autonomy.Allow = allow
	if req.Autonomy.Mode == "" {
		switch {
		case len(allow) > 0:
			req.Autonomy.Mode = api.AutonomyPatterns
		case req.Autonomy.Steps > 0:
			req.Autonomy.Mode = api.AutonomyAuto
		}
	}
	s, err := api.AddScheduleRoute.Do(ctx, a.api(), "", req)
	return printResult(a.app, s, err, func() {
		fmt.Fprintf(a.stdout, "schedule %s added: %s (%s)\n", s.Name, s.Spec, s.TimeZone)
		if s.When != nil {
			fmt.Fprintf(a.stdout, "it wakes the model %s\n", whenString(s.When))
		}
		writeNextTimes(a.stdout, s)
	})
}

// zoneOf is the schedule's zone, for showing its times as its owner reads them.
func zoneOf(s *api.Schedule) *time.Location {
	if loc, err := time.LoadLocation(s.TimeZone); err == nil && s.TimeZone != "" {
		return loc
	}
	return time.Local
}

func writeNextTimes(w io.Writer, s *api.Schedule) {
	switch {
	case s.Paused:
		fmt.Fprintln(w, "paused: it fires again after agentctl schedule resume "+s.Name)
	case len(s.NextTimes) == 0:
		fmt.Fprintln(w, "it will not fire again")
	default:
		fmt.Fprintln(w, "next fire times:")
		for _, t := range s.NextTimes {
			fmt.Fprintf(w, "  %s\n", t.In(zoneOf(s)).Format("Mon 2006-01-02 15:04 MST"))
		}
	}
}

func target(s *api.Schedule) string {
	if s.Template != "" {
		return "new agent " + s.Template + "-…"
	}
	return "agent " + s.Agent
}

func scheduleState(s *api.Schedule) string {
	var parts []string
	if s.Paused {
		parts = append(parts, "paused")
	}
	if n := len(s.Running); n > 0 {
		parts = append(parts, fmt.Sprintf("running (%d)", n))
	}
	if s.Queued {
		parts = append(parts, "queued")
	}
	if len(parts) == 0 {
		return "waiting"
	}
	return strings.Join(parts, ", ")
}

func (a scheduleVerbs) scheduleLs(ctx context.Context, args []string) error {
	pos, err := a.parse(a.newFlagSet(), args, -1)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("schedule ls takes no arguments, got %q", pos)
	}
	list, err := api.SchedulesRoute.Do(ctx, a.api(), "", api.None{})
	if err != nil {
		return err
	}
	return printList(a.app, list, "no schedules: add one with agentctl schedule add (see agentctl help schedule)",
		"NAME\tSPEC\tZONE\tTARGET\tNEXT\tSTATE", func(s *api.Schedule) string {
			next := "-"
			if !s.Next.IsZero() {
				next = s.Next.In(zoneOf(s)).Format("Mon 2006-01-02 15:04")
			}
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", s.Name, s.Spec, s.TimeZone, target(s), next, scheduleState(s))
		})
}

func (a scheduleVerbs) scheduleShow(ctx context.Context, ref string) error {
	s, err := api.ScheduleRoute.Do(ctx, a.api(), ref, api.None{})
	if err != nil {
		return err
	}
	if a.json {
		return a.printJSON(s)
	}
	w := a.stdout
	fmt.Fprintf(w, "schedule %s (%s)\n", s.Name, s.ID)
	fmt.Fprintf(w, "  spec:        %s (%s)\n", s.Spec, s.TimeZone)
	fmt.Fprintf(w, "  target:      %s\n", target(s))
	fmt.Fprintf(w, "  goal:        %s\n", oneParagraph(s.Goal))
	fmt.Fprintf(w, "  autonomy:    %s\n", autonomyString(s.Autonomy, s.Budget))
	fmt.Fprintf(w, "  budget:      %s\n", budgetString(s.Budget))
	fmt.Fprintf(w, "  totals:      runs %d, steps %d, tokens %d\n", s.Runs, s.Steps, s.Tokens)
	fmt.Fprintf(w, "  concurrency: %s; missed: %s; delivery: %s\n", s.Concurrency, s.Missed, s.Delivery)
	writeWake(w, s)
	fmt.Fprintf(w, "  status:      %s\n", scheduleState(s))
	if len(s.Running) > 0 {
		fmt.Fprintf(w, "  running:     %s\n", strings.Join(s.Running, ", "))
	}
	last := "never"
	if !s.LastFired.IsZero() {
		last = s.LastFired.In(zoneOf(s)).Format("Mon 2006-01-02 15:04 MST")
	}
	fmt.Fprintf(w, "  last fired:  %s\n", last)
	writeNextTimes(w, s)
	runs, err := api.ScheduleHistoryRoute.Do(ctx, a.api(), s.ID, api.ScheduleHistoryQuery{Limit: 5})
	if err != nil {
		return err
	}
	if len(runs) > 0 {
		fmt.Fprintln(w, "recent runs (agentctl schedule history "+s.Name+" for all):")
		writeRuns(w, runs)
	}
	return nil
}

func autonomyString(au api.Autonomy, b api.Budget) string {
	switch au.Mode {
	case api.AutonomyAuto:
		n := au.Steps
		if n == 0 {
			n = b.MaxSteps
		}
		if n == 1 {
			return "auto (the first proposal runs without asking)"
		}
		return fmt.Sprintf("auto (the first %d proposals run without asking)", n)
	case api.AutonomyPatterns:
		return "proposals matching " + strings.Join(au.Allow, " ") + " run without asking; the rest ask"
	}
	return "ask before every command"
}

func budgetString(b api.Budget) string {
	if s := budgetLine(b, ""); s != "" {
		return s + " per run"
	}
	return "none"
}

func writeRuns(w io.Writer, runs []api.ScheduleRun) {
	tw := table(w, "  SCHEDULED\tOUTCOME\tSTEPS\tTOKENS\tAGENT\tREASON")
	for _, r := range runs {
		when := formatTime(r.Scheduled)
		if r.Manual {
			when += " (run-now)"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%d\t%s\t%s\n", when, r.Outcome, r.Steps, r.Tokens, cmp.Or(r.AgentID, "-"), truncate(r.Reason, 100))
	}
	tw.Flush()
}

func (a scheduleVerbs) scheduleHistory(ctx context.Context, args []string) error {
	fs := a.newFlagSet()
	limit := fs.Int("n", 0, "show only the newest `N` records")
	ref, err := a.parseSchedule(fs, args)
	if err != nil {
		return err
	}
	if *limit < 0 {
		return usagef("-n %d: want a number of records, 1 or more", *limit)
	}
	runs, err := api.ScheduleHistoryRoute.Do(ctx, a.api(), ref, api.ScheduleHistoryQuery{Limit: *limit})
	return printResult(a.app, runs, err, func() {
		if len(runs) == 0 {
			a.note("schedule %s has not fired yet", ref)
			return
		}
		writeRuns(a.stdout, runs)
	})
}

func (a scheduleVerbs) scheduleRm(ctx context.Context, ref string) error {
	err := api.RemoveScheduleRoute.Send(ctx, a.api(), ref, api.None{})
	return printResult(a.app, map[string]string{"removed": ref}, err, func() {
		fmt.Fprintf(a.stdout, "schedule %s removed\n", ref)
	})
}

func (a scheduleVerbs) schedulePause(ctx context.Context, args []string) error {
	return a.scheduleChange(ctx, args, api.PauseScheduleRoute)
}

func (a scheduleVerbs) scheduleResume(ctx context.Context, args []string) error {
	return a.scheduleChange(ctx, args, api.ResumeScheduleRoute)
}

func (a scheduleVerbs) scheduleChange(ctx context.Context, args []string, route api.Route[api.None, *api.Schedule]) error {
	return refVerb(scheduleRef, route, func(a *app, _ string, s *api.Schedule) {
		fmt.Fprintf(a.stdout, "schedule %s: %s\n", s.Name, scheduleState(s))
		writeNextTimes(a.stdout, s)
	})(a.app, ctx, args)
}

func (a scheduleVerbs) scheduleRunNow(ctx context.Context, ref string) error {
	r, err := api.RunScheduleRoute.Do(ctx, a.api(), ref, api.None{})
	if err != nil {
		return err
	}
	if a.json {
		return a.printJSON(r)
	}
	switch {
	case r.RunID != "":
		fmt.Fprintf(a.stdout, "schedule %s fired: run %s on agent %s\n", ref, r.RunID, r.AgentID)
		a.note("watch it with: agentctl follow %s", r.AgentID)
	case r.Reason != "":
		fmt.Fprintf(a.stdout, "schedule %s fired: %s: %s\n", ref, line(string(r.Outcome)), oneParagraph(r.Reason))
	default:
		fmt.Fprintf(a.stdout, "schedule %s fired: %s\n", ref, r.Outcome)
	}
	if r.Outcome == api.RunFailed {
		return fmt.Errorf("the run could not start: %s", r.Reason)
	}
	return nil
}
