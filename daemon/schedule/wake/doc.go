// Package wake decides, at each firing of a schedule and before any model call, whether
// there is something for the model to do: a schedule with wake conditions costs an idle
// machine a deterministic check, not a run.
//
// # Conditions
//
// Conditions (agentctl's --when-changed PATH, --when-url URL, --when 'LINE',
// --when-any|--when-all, --when-failed skip|wake, --when-failed-after N; the same names
// in the config file and the API) are read by Parse (flags) or Conditions.Check (JSON),
// which check their form and name the fix, and by Engine.Validate, which checks them
// against the schedule's agent as it stands (a path exists and stays inside, a URL's
// host is not refused, a check command has a workspace and a shell).
//
//   - changed PATH...: a file or folder (in the agent's workspace, or under one of its
//     read-only paths when absolute) whose content changed since the last run that
//     started. Each watched folder (a file's: the folder holding it) has a checkpoint
//     store of the schedule's (daemon/checkpoint, under Options.Dir): a check is one
//     checkpoint, which rereads only files whose size, times or inode moved and writes
//     nothing when nothing did, and a change is the checkpoint diff from the one the last
//     run saw: paths created, deleted and modified, with their line diffs. Paths are
//     resolved by the file commands' resolver (commands.ResolveLinks: no "..", no symlink
//     leading out) and walked without following a symlink (the checkpoint engine).
//   - url URL: a page whose text, as read_webpage's fetcher reads it (web.Fetcher, and
//     its network guard), changed since the last run that started. The ETag and
//     Last-Modified the last run saw go back with the request, so an unchanged page can
//     cost a 304; the page's text (up to 32 KiB) is kept to show the next run its diff.
//   - command 'LINE': a shell line run by the agent's execute_shell (shell.Checker) in its
//     sandbox, as a pattern-approved command runs (read-only workspace, an empty HOME, the
//     agent's box), offline unless the schedule says --when-network (then with the network
//     the agent's config grants: a check may run a file the agent rewrote). Exit 0 wakes
//     the model and its output (capped) is what the run starts from; exit 1 is nothing
//     to do; any other status, or a line stopped for its time or its output, is a
//     failed check.
//
// Any condition saying wake wakes the model (--when-any, the default); with --when-all
// every one must. Each condition's check is bounded by Options.Timeout, and a command's
// output by the shell's cap.
//
// # Verdicts and state
//
// Engine.Check returns a Verdict: Wake (Observation says what changed, for the run's
// first observation), NothingToDo (Reason says why), or CheckFailed (Reason says what
// failed). Failed checks are counted in a row; the FailAfter-th sets Surface (tell the
// delivery channel once) and from then on --when-failed says whether to skip or wake.
//
// What the conditions saw (per watched path the checkpoint its run started from; per URL
// the validators, hash and text) is stored in the schedule_wake table by
// Engine.Started, only once a run has started: a firing whose run never started (skipped,
// failed to start, the daemon killed) swallows no change, and the next firing sees it
// again. The count of failed checks is written at each failed check. Both survive a
// restart, and a missed firing's catch-up is checked like any other.
//
// # How the scheduler calls it
//
// daemon/schedule's Starter (Manager.start, called off the firing loop by launch in
// daemon/schedule/cron/fire.go, one goroutine per firing) checks first:
//
//	v := engine.Check(ctx, row.ID, conds, target) // before any model call
//	if !v.Wake {
//		return &cron.NotStarted{Outcome: nothing_to_do or check_failed, Reason: v.Reason}
//	}
//	// start the run from the goal and v.Observation; once it has started:
//	engine.Started(ctx, v)
//
// The firing is recorded with NotStarted's outcome and reason; chat hears of a failed
// check only when v.Surface. A run-now (a person asked) starts whatever the check says.
// docs/schedule-conditions.md has the rest: the API, agentctl, chat, the web form.
package wake
