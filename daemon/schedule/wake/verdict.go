package wake

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/display"
)

// Outcome is what a firing's check decided.
type Outcome string

const (
	// Wake: there is something to do; start the run, with Observation as its first
	// observation. schedule_runs records the run as usual.
	Wake Outcome = "wake"
	// NothingToDo: no condition found anything; no run, no model call, nothing posted to
	// chat. schedule_runs records the firing as nothing_to_do with Reason.
	NothingToDo Outcome = "nothing_to_do"
	// CheckFailed: a check could not run or did not finish (a path refused or gone, a
	// page unreachable, a command stopped, the sandbox missing). schedule_runs records
	// check_failed with Reason; Wake says whether the failure policy starts the run anyway.
	CheckFailed Outcome = "check_failed"
)

// Verdict is a firing's check: what it decided, why, and what the run starts from.
type Verdict struct {
	ScheduleID string
	Outcome    Outcome
	// Wake says to start the run: Outcome is Wake, or CheckFailed with --when-failed
	// wake after FailAfter failed checks in a row.
	Wake bool
	// Reason is one line for schedule_runs.reason, schedule history and logs: what woke
	// the model, why there was nothing to do, or what failed.
	Reason string
	// Observation is what a waking check found, for the run's first observation: the
	// paths created, deleted and modified with their diffs, the page's change, the check
	// command's output; escaped for people, at most Options.MaxObservation bytes.
	Observation string
	// Failures counts the firings in a row whose check failed, this one included; 0 when
	// every check ran.
	Failures int
	// Surface says this firing's failure is the FailAfter-th in a row: tell the
	// schedule's delivery channel (and schedule show and doctor) once, with Reason.
	Surface bool

	conds   Conditions
	results []result
	pending seen // what Started stores
}

// result is one condition's check.
type result struct {
	cond    string // the condition in the flags' words, for people
	wake    bool
	line    string // one line: what it found, or why there is nothing to do
	text    string // a wake's observation section, several lines
	err     error  // the check failed
	pending seen   // what it saw, for Started
}

// maxReason bounds Verdict.Reason: it is a table cell and a chat line.
const maxReason = 1000

// decide makes the verdict from the conditions' results and counts a failed check
// (or ends a run of them) in the store; w is the schedule's state as Check read it.
func (e *Engine) decide(ctx context.Context, v *Verdict, w *store.WakeState) *Verdict {
	var woke, quiet, failed []result
	v.pending = seen{}
	for _, r := range v.results {
		switch {
		case r.err != nil:
			failed = append(failed, r)
		case r.wake:
			woke = append(woke, r)
		default:
			quiet = append(quiet, r)
		}
		maps.Copy(v.pending, r.pending)
	}
	switch {
	case !v.conds.All && len(woke) > 0:
		v.Outcome = Wake
	case len(failed) > 0:
		v.Outcome = CheckFailed
	case v.conds.All && len(quiet) == 0:
		v.Outcome = Wake
	default:
		v.Outcome = NothingToDo
	}
	if len(failed) > 0 {
		v.Failures = e.countFailure(ctx, v.ScheduleID, failed, w)
		v.Surface = v.Failures == max(v.conds.FailAfter, 1)
	} else if w.Failures > 0 {
		err := e.st.Tx(context.WithoutCancel(ctx), func(tx *store.Tx) error { return tx.WakeCheckPassed(v.ScheduleID) })
		if err != nil {
			e.log.Warn("wake: ending a run of failed checks", "schedule", v.ScheduleID, "err", err)
		}
	}
	failedOver := v.Outcome == CheckFailed && v.conds.OnFailure == OnFailureWake && v.Failures >= v.conds.FailAfter
	v.Wake = v.Outcome == Wake || failedOver

	var reason, obs []string
	switch v.Outcome {
	case Wake:
		for _, r := range woke {
			reason = append(reason, r.line)
			obs = append(obs, r.text)
		}
		if len(failed) > 0 {
			reason = append(reason, "and "+failedLine(failed, v.Failures))
		}
		if v.conds.All {
			v.Reason = "every condition says wake: " + strings.Join(reason, "; ")
		} else {
			v.Reason = "woken: " + strings.Join(reason, "; ")
		}
	case NothingToDo:
		for _, r := range append(quiet, woke...) {
			reason = append(reason, r.line)
		}
		v.Reason = "nothing to do: " + strings.Join(reason, "; ")
	case CheckFailed:
		v.Reason = failedLine(failed, v.Failures)
		if failedOver {
			v.Reason += "; woken anyway (--when-failed wake)"
			obs = append(obs, fmt.Sprintf("The schedule's check failed %d times in a row, and the schedule says to wake you then (--when-failed wake):\n%s",
				v.Failures, errorLines(failed)))
			for _, r := range woke {
				obs = append(obs, r.text)
			}
		}
	}
	v.Reason = display.Cut(display.Escape(v.Reason, display.Line), maxReason, display.Ellipsis)
	if v.Wake {
		v.Observation = display.Cut(strings.Join(obs, "\n\n"), e.maxObs, "\n"+display.Ellipsis+" (cut: the check found more)")
	}
	return v
}

// countFailure counts a failed check in the store and returns the count in a row.
func (e *Engine) countFailure(ctx context.Context, scheduleID string, failed []result, w *store.WakeState) int {
	n := w.Failures + 1
	problem := display.Cut(errorLines(failed), maxReason, display.Ellipsis)
	err := e.st.Tx(context.WithoutCancel(ctx), func(tx *store.Tx) (err error) {
		n, err = tx.WakeCheckFailed(scheduleID, problem)
		return err
	})
	if err != nil {
		e.log.Warn("wake: counting a failed check", "schedule", scheduleID, "err", err)
		n = w.Failures + 1
	}
	return n
}

func failedLine(failed []result, n int) string {
	var parts []string
	for _, r := range failed {
		parts = append(parts, r.cond+": "+r.err.Error())
	}
	s := "check failed"
	if n > 1 {
		s += fmt.Sprintf(" (%d in a row)", n)
	}
	return s + ": " + strings.Join(parts, "; ")
}

func errorLines(failed []result) string {
	var b strings.Builder
	for _, r := range failed {
		fmt.Fprintf(&b, "%s: %s\n", display.Escape(r.cond, display.Line), display.Escape(r.err.Error(), display.Line))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// pend marks what a condition saw under key, for Started.
func (r *result) pend(key string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return // plain structs: cannot happen
	}
	if r.pending == nil {
		r.pending = seen{}
	}
	r.pending[key] = b
}
