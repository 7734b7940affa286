package bots

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands/permission"
)

// ScheduleWhen is the part of the schedules' manager /agent schedule when uses (the
// daemon's Manager has it; Schedules without it answer that conditions cannot be set here).
type ScheduleWhen interface {
	SetScheduleWhen(ctx context.Context, ref string, when api.WakeConditions) (*api.Schedule, error)
}

const scheduleWhenUsage = "Usage: /agent schedule when NAME --when-changed PATH | --when-url URL | --when 'COMMAND' [--when-network] [--when-all] [--when-failed skip|wake] [--when-failed-after N] | --when-none"

// scheduleWhen is /agent schedule when NAME FLAGS: an approver of the channel sets or
// clears the wake conditions of a schedule delivering there, with agentctl's flags read
// by the one shell parser and checked by the daemon as agentctl's are.
func (r *Relay) scheduleWhen(ctx context.Context, s Schedules, ep *endpoint, w Where, u User, text string) string {
	set, ok := s.(ScheduleWhen)
	if !ok {
		return "Wake conditions cannot be set from chat in this agentd: use agentctl schedule edit."
	}
	cmds, problem := permission.ParseShell(text)
	if problem != "" || len(cmds) != 1 || len(cmds[0]) < 2 {
		return scheduleWhenUsage
	}
	name, args := cmds[0][0], cmds[0][1:]
	if !r.allowed(ctx, ep, w, "", u) {
		r.log.Warn("bots: refused a non-approver", "platform", ep.a.Platform(), "user", u.ID, "schedule", name, "action", "schedule when")
		return "You are not an approver here, so this changed nothing."
	}
	fs := flag.NewFlagSet("when", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var f api.WhenFlags
	f.Register(fs, true)
	if err := fs.Parse(args); err != nil {
		return err.Error() + "\n" + scheduleWhenUsage
	}
	if fs.NArg() > 0 {
		return fmt.Sprintf("%q is not a flag (quote a command with spaces: --when 'test -s inbox/new')\n%s", cut(fs.Arg(0), 80), scheduleWhenUsage)
	}
	c, err := f.Conditions()
	if err != nil {
		return err.Error()
	}
	if c == nil {
		return scheduleWhenUsage
	}
	found, problem := r.channelSchedule(ctx, s, ep, w, name)
	if found == nil {
		return problem
	}
	sc, err := set.SetScheduleWhen(ctx, found.ID, *c)
	if err != nil {
		return err.Error()
	}
	r.log.Info("bots: schedule conditions set from chat", "platform", ep.a.Platform(), "schedule", sc.Name, "user", u.ID)
	return fmt.Sprintf("Schedule %s now wakes the model %s.", sc.Name, whenText(sc.When))
}

// whenText says when a schedule's firings wake the model.
func whenText(c *api.WakeConditions) string {
	if c == nil {
		return "at every firing"
	}
	return "when " + strings.TrimSpace(c.String())
}
