package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/agentd/agentd/api"
)

// scheduleEdit is schedule edit NAME: it changes a schedule's wake conditions.
func (a scheduleVerbs) scheduleEdit(ctx context.Context, args []string) error {
	fs := a.newFlagSet()
	var when api.WhenFlags
	when.Register(fs, true)
	ref, err := a.parseSchedule(fs, args)
	if err != nil {
		return err
	}
	c, err := when.Conditions()
	if err != nil {
		return usagef("%v", err)
	}
	if c == nil {
		return usagef("nothing to change: give the conditions (--when-changed PATH, --when-url URL, --when 'COMMAND', …) or --when-none to remove them")
	}
	s, err := api.SetScheduleWhenRoute.Do(ctx, a.api(), ref, *c)
	return printResult(a.app, s, err, func() {
		fmt.Fprintf(a.stdout, "schedule %s: wakes the model %s\n", s.Name, whenString(s.When))
	})
}

// whenString says when a schedule's firings wake the model.
func whenString(c *api.WakeConditions) string {
	if c == nil {
		return "at every firing"
	}
	return "when " + c.String()
}

// writeWake writes a schedule's conditions and what their checks left, for show.
func writeWake(w io.Writer, s *api.Schedule) {
	fmt.Fprintf(w, "  wakes:       %s\n", whenString(s.When))
	k := s.Wake
	if k == nil {
		return
	}
	if !k.SeenAt.IsZero() {
		fmt.Fprintf(w, "  compared to: what the run of %s started from\n", k.SeenAt.In(zoneOf(s)).Format("Mon 2006-01-02 15:04 MST"))
	} else {
		fmt.Fprintln(w, "  compared to: nothing yet (the next firing wakes the model once)")
	}
	if k.Failures > 0 {
		state := "failed"
		if k.Failing {
			state = "FAILING"
		}
		fmt.Fprintf(w, "  check:       %s %d times in a row, last at %s: %s\n", state, k.Failures,
			k.FailedAt.In(zoneOf(s)).Format("Mon 2006-01-02 15:04 MST"), oneParagraph(k.LastError))
	}
}
