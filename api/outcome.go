package api

// RunOutcome is how a run ended, and how a schedule's firing went: the one vocabulary
// the cycle, the supervisor, the scheduler, the store and the wire share.
type RunOutcome string

// How a run ends.
const (
	RunFinished        RunOutcome = "finished"         // the agent called finish
	RunStopped         RunOutcome = "stopped"          // a person stopped it
	RunDenied          RunOutcome = "denied"           // a person answered n
	RunBudgetExhausted RunOutcome = "budget_exhausted" // it hit its step, token or time budget
	RunRemoved         RunOutcome = "removed"          // its agent was deleted
	RunFailed          RunOutcome = "failed"           // it failed, or could not start; the reason says why
)

// How a schedule's firing goes before (or instead of) a run's end.
const (
	RunQueued  RunOutcome = "queued"  // waits for the running run (concurrency queue)
	RunStarted RunOutcome = "started" // a run started; it has not ended
	RunSkipped RunOutcome = "skipped" // not run: a run was still going, or the schedule was paused or removed
	RunMissed  RunOutcome = "missed"  // not run: the daemon was down (or asleep) at the time
	// Not run: the schedule's wake conditions found nothing to do (no model call).
	RunNothingToDo RunOutcome = "nothing_to_do"
	// Not run: the schedule's wake check could not run; the reason says what failed.
	RunCheckFailed RunOutcome = "check_failed"
)

// Final reports whether o is an end state: no later record of the firing follows.
func (o RunOutcome) Final() bool { return o != RunQueued && o != RunStarted }
