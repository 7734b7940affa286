// Package watchdog is the agent cycle's one loop detector. Small local models loop, and
// an agent approved for many steps (`y -20`, a schedule) has nobody watching it; the
// watchdog is what stops it.
//
// daemon/agent feeds Check the run's latest steps — each one's command, normalised
// arguments, outcome and effect (Observe builds them from episodes) — with the proposal
// the model just made, before anything authorizes it. Check answers with a Verdict: no
// loop, or the loop's Kind and the steps involved. The supervisor then has the smart
// model think again, or asks a person, pauses the agent and cancels its grant. Check is
// pure: no I/O, no clock, the same steps always give the same verdict.
//
// The shapes: a cycle of period 1 (Repeat) to 4 (Cycle); the same command failing with
// the same class of error Failures times in a row (Failing); IdleSteps steps in a row
// that neither changed anything nor learned anything new (NoProgress); and a file written
// and put back again, or the same text appended again (Undo).
package watchdog

import (
	"fmt"
	"strings"

	"github.com/agentd/agentd/commands"
)

// Kind names a loop shape; it is what the agent's state reason, metrics and the audit
// log call the loop.
type Kind string

// The loop shapes.
const (
	None       Kind = ""
	Repeat     Kind = "repeat"      // the same command and arguments as the step before
	Cycle      Kind = "cycle"       // a cycle of 2 to MaxPeriod steps, seen twice
	Failing    Kind = "failing"     // the same command failing the same way, again and again
	NoProgress Kind = "no_progress" // steps that change nothing and learn nothing new
	Undo       Kind = "undo"        // a file changed and put back, or the same text appended again
	// InvalidReplies is no step at all: the model gave Settings.MaxInvalidReplies replies
	// in a row that were no valid proposal (prose, broken JSON). daemon/agent counts them
	// as the model answers and pauses the agent; it is named here so every loop the
	// agent is stopped for has one name in the metrics and the audit log.
	InvalidReplies Kind = "invalid_replies"
)

// Kinds lists every loop shape Check finds.
var Kinds = []Kind{Repeat, Cycle, Undo, Failing, NoProgress}

// MaxPeriod is the longest cycle Check looks for.
const MaxPeriod = 4

// undoWindow is how many steps back Check looks for a file put back.
const undoWindow = 16

// Config holds the thresholds, both set: daemon/config's [agent] gives them (its
// watchdog_failures and watchdog_idle_steps), and their defaults.
type Config struct {
	// Failures: the same command failing with the same class of error this many times
	// in a row is a loop.
	Failures int
	// IdleSteps: this many steps in a row with no successful command that changed
	// anything or learned anything new is a loop.
	IdleSteps int
}

// Window is how many of the run's latest steps Check needs to see.
func (c Config) Window() int {
	return max(2*MaxPeriod, c.Failures, c.IdleSteps, undoWindow) + 1
}

// Verdict is Check's answer.
type Verdict struct {
	Kind Kind
	// Period is the cycle's length in steps (Repeat: 1, Cycle: 2 to MaxPeriod).
	Period int
	// Steps are the steps involved, oldest first; the proposal under check is the last.
	Steps []int
	// Calls are the loop's calls as a person reads them ("read_file notes.txt").
	Calls []string
	// Detail says what the steps have in common (the error class, the file put back).
	Detail string
}

// Caught reports whether the verdict is a loop.
func (v Verdict) Caught() bool { return v.Kind != None }

// String says which loop was seen and the steps involved, for the agent's state reason
// and the chat thread: "a cycle of 2 steps seen twice (steps 3-6: list_folder ., read_file notes.txt)".
func (v Verdict) String() string {
	if !v.Caught() {
		return "no loop"
	}
	var what string
	switch v.Kind {
	case Repeat:
		what = "the same command with the same arguments as the step before"
	case Cycle:
		what = fmt.Sprintf("a cycle of %d steps seen twice", v.Period)
	case Failing:
		what = fmt.Sprintf("the same command failing %d times in a row with the same error (%s)", len(v.Steps)-1, v.Detail)
	case NoProgress:
		what = fmt.Sprintf("%d steps in a row that changed nothing and learned nothing new", len(v.Steps)-1)
	case Undo:
		what = v.Detail
	}
	return fmt.Sprintf("%s (%s: %s)", what, stepsText(v.Steps), strings.Join(v.Calls, ", "))
}

// stepsText is "steps 3-6" for a run of steps, "steps 2, 5, 7" otherwise.
func stepsText(steps []int) string {
	if len(steps) == 1 {
		return fmt.Sprintf("step %d", steps[0])
	}
	run := true
	for i := 1; i < len(steps); i++ {
		run = run && steps[i] == steps[i-1]+1
	}
	if run {
		return fmt.Sprintf("steps %d-%d", steps[0], steps[len(steps)-1])
	}
	s := make([]string, len(steps))
	for i, n := range steps {
		s[i] = fmt.Sprint(n)
	}
	return "steps " + strings.Join(s, ", ")
}

// Check says whether next, the proposal just made, continues a loop in history, the
// run's executed steps oldest first (the last cfg.Window() are enough). ask_user is
// never a loop: asking a person is the way out of one; finish can only repeat.
func Check(cfg Config, history []Step, next Step) Verdict {
	if next.Command == commands.AskUser {
		return Verdict{}
	}
	if v := undo(history, next); v.Caught() {
		return v // before cycle: "put back again" says more than "a cycle"
	}
	if v := cycle(history, next); v.Caught() {
		return v
	}
	if next.Command == commands.Finish {
		return Verdict{}
	}
	if v := failing(cfg, history, next); v.Caught() {
		return v
	}
	return idle(cfg, history, next)
}

// cycle finds the shortest period p for which the last 2p-1 steps and next are one run
// of p steps seen twice: the same calls, and the same outcomes where both ran.
func cycle(h []Step, next Step) Verdict {
	for p := 1; p <= MaxPeriod; p++ {
		n := len(h)
		if n < 2*p-1 {
			break
		}
		if h[n-p].key() != next.key() {
			continue
		}
		same := true
		for i := 1; i < p && same; i++ {
			same = h[n-i].full() == h[n-i-p].full()
		}
		if !same {
			continue
		}
		v := Verdict{Kind: Cycle, Period: p}
		if p == 1 {
			v.Kind = Repeat
		}
		return involve(v, h[n-(2*p-1):], next, p)
	}
	return Verdict{}
}

// involve fills v's steps from the steps in and next, and its calls from the first
// calls of them (the loop's body when it is a cycle).
func involve(v Verdict, in []Step, next Step, calls int) Verdict {
	for _, s := range in {
		v.Steps = append(v.Steps, s.N)
	}
	v.Steps = append(v.Steps, next.N)
	all := append(append([]Step(nil), in...), next)
	for i := 0; i < calls && i < len(all); i++ {
		v.Calls = append(v.Calls, all[i].Label)
	}
	return v
}

// failing finds next repeating a command that failed the same way cfg.Failures times in a row.
func failing(cfg Config, h []Step, next Step) Verdict {
	n := len(h)
	if n == 0 || h[n-1].Outcome != Failed || h[n-1].Command != next.Command {
		return Verdict{}
	}
	class := h[n-1].Result
	i := n - 1
	for i > 0 && h[i-1].Outcome == Failed && h[i-1].Command == next.Command && h[i-1].Result == class {
		i--
	}
	if n-i < cfg.Failures {
		return Verdict{}
	}
	start := n - cfg.Failures
	return involve(Verdict{Kind: Failing, Detail: strings.TrimPrefix(class, "error:")}, h[start:], next, 1)
}

// idle finds cfg.IdleSteps steps in a row that made no progress, unless next itself
// would change something.
func idle(cfg Config, h []Step, next Step) Verdict {
	n := len(h)
	if n < cfg.IdleSteps || next.changes(h) {
		return Verdict{}
	}
	for i := n - cfg.IdleSteps; i < n; i++ {
		if h[i].progress(h[:i]) {
			return Verdict{}
		}
	}
	v := involve(Verdict{Kind: NoProgress}, h[n-cfg.IdleSteps:], next, 0)
	v.Calls = distinctLabels(h[n-cfg.IdleSteps:], 4)
	return v
}

// distinctLabels are the first max different labels of steps.
func distinctLabels(steps []Step, limit int) []string {
	var out []string
	for _, s := range steps {
		if contains(out, s.Label) {
			continue
		}
		if len(out) == limit {
			return append(out, "…")
		}
		out = append(out, s.Label)
	}
	return out
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
