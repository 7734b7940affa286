package cli

import (
	"context"
	"flag"
	"fmt"

	"github.com/agentd/agentd/api"
)

// The verbs, grouped by what they act on. Each group is a type over the one app (its
// client, flags and output), so a verb's file reads `a.api()`, `a.parse`, `a.stdout` as
// app's own, and a group holds only its verbs and their helpers.
type (
	agentVerbs    struct{ *app } // run, create, task, pause, resume, stop, rm, budget, ls, show, history, why, diff, rewind, commands
	decisionVerbs struct{ *app } // follow, approve, deny, feedback, answer
	scheduleVerbs struct{ *app } // schedule and its actions
	teamVerbs     struct{ *app } // team and its actions
	memoryVerbs   struct{ *app } // memory and its actions
	policyVerbs   struct{ *app } // policy: patterns, tests and grants
	daemonVerbs   struct{ *app } // status, doctor, reload, web, audit, replay
	helpVerbs     struct{ *app } // help, completion and the hidden __complete
)

// verb turns a group's method into a command's run: `run: verb(agentVerbs.runLs)`.
func verb[V ~struct{ *app }](run func(V, context.Context, []string) error) func(*app, context.Context, []string) error {
	return func(a *app, ctx context.Context, args []string) error { return run(V{a}, ctx, args) }
}

// subcommand runs the action args[0] of a verb that has actions (schedule, team): its
// help for -h, a usage error listing the actions (names) when it is missing or unknown.
func subcommand[V ~struct{ *app }](v V, ctx context.Context, args []string, name string, actions map[string]func(V, context.Context, []string) error, names string) error {
	a := struct{ *app }(v).app
	if len(args) == 0 {
		return usagef("missing what to do: %s", names)
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
		a.printHelp(a.stdout, a.cmd, nil)
		return errHelpShown
	}
	fn := actions[args[0]]
	if fn == nil {
		return usagef("unknown %s action %q: use %s", name, args[0], names)
	}
	return fn(v, ctx, args[1:])
}

// agentAction is the run of a command that takes one AGENT, calls route on it and prints the
// agent it returns: its JSON with --json, else "NAME: STATE" (pause, resume, stop).
func agentAction(route api.Route[api.None, *api.Agent]) func(*app, context.Context, []string) error {
	return refVerb(agentRef, route, func(a *app, _ string, ag *api.Agent) {
		fmt.Fprintf(a.stdout, "%s: %s\n", refOf(ag), stateString(ag))
	})
}

// refArg is the one argument a verb that reads one thing takes: how a missing one is
// named (missing), an extra one (want), and a not-found said (notFound: nil keeps the
// daemon's words). The zero refArg is a verb that takes no argument.
type refArg struct {
	missing, want string
	notFound      func(ref string, err error) error
}

var (
	agentRef    = refArg{agentArg, "AGENT", agentErr}
	scheduleRef = refArg{"NAME (a schedule's name or id; see agentctl schedule ls)", "schedule NAME", nil}
	teamRef     = refArg{"ID (a team run's id; see agentctl team ls)", "team run ID", nil}
)

// parse parses a command that takes exactly r.
func (r refArg) parse(a *app, fs *flag.FlagSet, args []string) (string, error) {
	if r.want == "" {
		return "", a.parseNone(args)
	}
	pos, err := a.parse(fs, args, -1)
	switch {
	case err != nil:
		return "", err
	case len(pos) == 0:
		return "", usagef("missing %s", r.missing)
	case len(pos) > 1:
		return "", usagef("too many arguments: want one %s, got %q", r.want, pos)
	}
	return pos[0], nil
}

// oneRef turns the run of a verb that takes exactly arg, and no flags of its own, into
// the run of a command or an action: `run: verb(oneRef(agentRef, agentVerbs.runShow))`.
func oneRef[V ~struct{ *app }](arg refArg, run func(V, context.Context, string) error) func(V, context.Context, []string) error {
	return func(v V, ctx context.Context, args []string) error {
		a := struct{ *app }(v).app
		ref, err := arg.parse(a, a.newFlagSet(), args)
		if err != nil {
			return err
		}
		return run(v, ctx, ref)
	}
}

// refVerb is the run of a command that takes arg, calls route on it and prints what it
// returns: its JSON with --json, else text.
func refVerb[Out any](arg refArg, route api.Route[api.None, Out], text func(a *app, ref string, out Out)) func(*app, context.Context, []string) error {
	return verb(oneRef(arg, func(v struct{ *app }, ctx context.Context, ref string) error {
		out, err := route.Do(ctx, v.api(), ref, api.None{})
		if arg.notFound != nil {
			err = arg.notFound(ref, err)
		}
		return printResult(v.app, out, err, func() { text(v.app, ref, out) })
	}))
}
