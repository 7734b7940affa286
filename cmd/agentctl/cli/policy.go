package cli

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/agentd/agentd/api"
)

var policyCmd = &command{
	name:  "policy",
	args:  "AGENT [add PATTERN [--yes] | revoke GRANT | allow|deny|rm [allow|deny] PATTERN | test COMMAND] [--json]",
	short: "view, edit and test an agent's permission patterns and grants",
	long: `Policy shows what decides the agent's proposals without asking: the permission
patterns — those stored for the agent (by "n!" decisions or by this command), those of its
[agents.NAME] config section, and the global [permissions] ones; a deny always wins — and
the agent's grants: each "y -N" (the next N-1 proposals of this run), each "y!" (this exact
command with these args; on execute_shell and execute_python_file also the workspace files
its line names, as they were: a rewritten check.py asks again; and since a program runs
code its line does not name, such a y! ends once another step of the agent or its
helpers changes the workspace, or may have: a change the checkpoints cannot see, a step
whose end a restart lost, any writing step while checkpoints are off),
each pattern added with "add", and a run's auto steps (--auto N, a schedule's autonomy),
with who made it, where, and how much of it is left. Every proposal a grant approves
names it, in follow, show, why, replay, the audit log and chat.

  agentctl policy AGENT                       list the patterns and grants
  agentctl policy AGENT add 'write_file(notes/*)'   preview what the pattern would have
                                              approved among the agent's last proposals,
                                              then store it as a grant if you answer y
      --yes          store it without asking     --preview N   look back over N proposals (20)
      --count N      approve at most N proposals --expires D   end it after D (e.g. 8h)
      --run          end it with the agent's current run
  agentctl policy AGENT revoke g-1a2b3c       revoke a grant: it approves nothing from the
                                              agent's next proposal on
  agentctl policy AGENT allow 'read_file(*)'  the same as add (a pattern that approves is a grant)
  agentctl policy AGENT deny 'delete_file(*)' refuse them (the model is told why)
  agentctl policy AGENT rm allow 'read_file(*)'  remove a stored pattern (allow patterns
                                              stored before grants existed; revoke grants)
  agentctl policy AGENT test git status -s    how a shell line would be decided if the agent
                                              proposed it next — by a pattern, a grant or
                                              the mode, as a real proposal is — and why
  agentctl policy AGENT test 'read_file(./secrets/k)'   another command, by its subject
  agentctl policy AGENT test --command web.search --args '{"query":"go"}'

A pattern is command(glob): * matches anything, ? one character, \ escapes. For execute
commands the command must be named literally. An execute_shell glob matches the parsed
line word by word: 'execute_shell(git status*)' approves 'git status -s' (program git,
first argument status, any more), never 'git status-x', 'git -c k=v status' or
'git status; rm -rf ~' — a line with substitutions, variables, globs or other shell syntax
always asks, and a wildcard never approves sh, env, xargs, sudo, find -exec, git -c and
other forms that run something else. Path patterns match the cleaned workspace path.
A program a pattern approves runs bounded: the workspace read-only, no network, an
empty HOME. A pattern ending in +write ('execute_shell(make fmt)+write') keeps the
workspace writable, and then whatever code the line runs — a Makefile, a conftest.py,
package.json's scripts, any file the agent wrote — may change any file there that no
deny rule protects, unasked (still nothing outside it, and never with the network).
Patterns from the config file are changed there.`,
	run: verb(policyVerbs.runPolicy),
}

func (a policyVerbs) runPolicy(ctx context.Context, args []string) error {
	var test policyTestFlags
	// A shell line after "test" is taken verbatim, so its own -flags stay its own.
	pos, err := a.parse(test.flagSet(a.app), args, 2)
	if err != nil {
		return err
	}
	if len(pos) < 2 || pos[1] != "test" {
		test = policyTestFlags{}
		if pos, err = a.parse(test.flagSet(a.app), args, -1); err != nil {
			return err
		}
	}
	if len(pos) == 0 {
		return usagef("missing %s", agentArg)
	}
	ref, rest := pos[0], pos[1:]
	if len(rest) > 0 && rest[0] == "test" {
		return a.runPolicyTest(ctx, ref, test, rest[1:])
	}
	if test.command != "" || test.args != "" {
		return usagef("--command and --args go with policy AGENT test")
	}
	switch {
	case len(rest) > 0 && (rest[0] == "add" || rest[0] == "allow"):
		// allow is add by its older name: a pattern that approves is a grant, shown
		// against the agent's last proposals before it is stored.
		if len(rest) != 2 {
			return usagef("want: policy AGENT %s PATTERN, e.g. policy %s %s 'write_file(notes/*)'", rest[0], ref, rest[0])
		}
		return a.runGrantAdd(ctx, ref, rest[1], test.grant)
	case test.grant != (grantFlags{}):
		return usagef("--yes, --count, --expires, --run and --preview go with policy AGENT add (or allow)")
	case len(rest) > 0 && rest[0] == "revoke":
		if len(rest) != 2 {
			return usagef("want: policy AGENT revoke GRANT (policy %s lists the grants' ids)", ref)
		}
		return a.runGrantRevoke(ctx, ref, rest[1])
	}
	var v *api.PolicyView
	switch {
	case len(rest) == 0:
		v, err = api.PolicyRoute.Do(ctx, a.api(), ref, api.None{})
	case len(rest) == 2 && rest[0] == "deny":
		v, err = api.AddPermissionRoute.Do(ctx, a.api(), ref, api.PermissionRequest{Effect: rest[0], Pattern: rest[1], By: user()})
	case len(rest) == 3 && rest[0] == "rm" && (rest[1] == "allow" || rest[1] == "deny"):
		v, err = api.RemovePermissionRoute.Do(ctx, a.api(), ref, api.PermissionRequest{Effect: rest[1], Pattern: rest[2], By: user()})
	default:
		return usagef("want: policy AGENT, policy AGENT add PATTERN, policy AGENT revoke GRANT, policy AGENT allow|deny PATTERN, policy AGENT rm allow|deny PATTERN or policy AGENT test COMMAND; got %q", strings.Join(rest, " "))
	}
	if err != nil {
		return agentErr(ref, err)
	}
	gl, err := api.GrantsRoute.Do(ctx, a.api(), ref, api.None{})
	if err != nil {
		return agentErr(ref, err)
	}
	if a.json {
		return a.printJSON(policyJSON{v, gl.Grants})
	}
	return a.printPolicy(v, gl.Grants)
}

// printPolicy shows an agent's permission patterns, then its grants.
func (a policyVerbs) printPolicy(v *api.PolicyView, grants []api.Grant) error {
	if v.AutoRead {
		fmt.Fprintln(a.stdout, "read commands run without asking (auto_read)")
	}
	if len(v.Permissions) == 0 {
		a.note("no permission patterns: every proposal asks unless a grant approves it (see agentctl help policy)")
	} else {
		tw := table(a.stdout, "EFFECT\tPATTERN\tFROM\tBY\tMEANS")
		for _, p := range v.Permissions {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", line(p.Effect), line(p.Pattern), line(p.Source), cmp.Or(line(p.CreatedBy), "-"), reach(p))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	a.warn(v.Warnings)
	return a.printGrants(grants)
}

// warn prints the policy view's warnings (write-deny rules while checkpoints are off)
// to stderr, where policy AGENT and create show them.
func (a *app) warn(warnings []string) {
	for _, w := range warnings {
		a.note("warning: %s", w)
	}
}

// policyJSON is policy AGENT --json: the patterns' view with the grants beside them.
type policyJSON struct {
	*api.PolicyView
	Grants []api.Grant `json:"grants"`
}

// reach says what a pattern means beyond the commands it names: how the programs an
// allow pattern approves run, and that a deny on paths holds for every program.
func reach(p api.Permission) string {
	switch {
	case p.Profile != "":
		return "runs " + api.ProfileText(p.Profile)
	case p.Paths:
		return "the paths are kept from every program too"
	}
	return "-"
}
