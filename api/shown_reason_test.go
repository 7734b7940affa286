package api

import "testing"

// An agent marked with an unchecked change is shown so, beside the reason of its state,
// once: a reason that says so already (a pause on it) is shown as it is.
func TestShownReasonTellsAnUncheckedChangeOnce(t *testing.T) {
	const mark = "step 1 (execute_shell) of run r-1: could not put back lib"
	for _, c := range []struct {
		name string
		a    Agent
		want string
	}{
		{"unmarked", Agent{StateReason: "finished: done"}, "finished: done"},
		{"marked_idle", Agent{StateReason: "finished: done", Unchecked: mark}, "finished: done; " + UncheckedReason(mark)},
		{"marked_no_reason", Agent{Unchecked: mark}, UncheckedReason(mark)},
		{"paused_on_it", Agent{StateReason: UncheckedReason(mark), Unchecked: mark}, UncheckedReason(mark)},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.a.ShownReason(); got != c.want {
				t.Errorf("shown reason %q, want %q", got, c.want)
			}
		})
	}
}
