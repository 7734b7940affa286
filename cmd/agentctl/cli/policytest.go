package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"regexp"
	"strings"

	"github.com/agentd/agentd/api"
)

// policyTestFlags are the flags of policy AGENT test.
type policyTestFlags struct {
	command string // --command NAME
	args    string // --args JSON
	grant   grantFlags
}

func (t *policyTestFlags) flagSet(a *app) *flag.FlagSet {
	fs := a.newFlagSet()
	fs.StringVar(&t.command, "command", "", "with test: the command to test (default execute_shell)")
	fs.StringVar(&t.args, "args", "", "with test: the command's args as a JSON object")
	t.grant.add(fs)
	return fs
}

// leading reads --command, --args and --json given right after "test", before the words
// taken verbatim; "--" ends them.
func (t *policyTestFlags) leading(a *app, words []string) ([]string, error) {
	for len(words) > 0 && strings.HasPrefix(words[0], "--") {
		name, val, hasVal := strings.Cut(words[0][2:], "=")
		if name == "" {
			return words[1:], nil
		}
		switch name {
		case "json":
			a.json = true
			words = words[1:]
			continue
		case "command", "args":
		default:
			return words, nil
		}
		words = words[1:]
		if !hasVal {
			if len(words) == 0 {
				return nil, usagef("--%s needs a value", name)
			}
			val, words = words[0], words[1:]
		}
		if name == "command" {
			t.command = val
		} else {
			t.args = val
		}
	}
	return words, nil
}

// subjectForm is `name(subject)`: a command name and the value of its subject arg.
var subjectForm = regexp.MustCompile(`^([a-z0-9_.-]+)\((.*)\)$`)

// runPolicyTest shows how the agent's patterns decide one proposal: a shell line by
// default, `name(subject)`, or --command NAME with --args JSON or a subject.
func (a policyVerbs) runPolicyTest(ctx context.Context, ref string, f policyTestFlags, words []string) error {
	words, err := f.leading(a.app, words)
	if err != nil {
		return err
	}
	req := api.PolicyTestRequest{Command: f.command, Subject: strings.Join(words, " ")}
	switch {
	case f.args != "":
		if len(words) > 0 {
			return usagef("give --args or a subject, not both")
		}
		if !json.Valid([]byte(f.args)) {
			return usagef("--args is not valid JSON: give an object such as '{\"query\":\"go\"}'")
		}
		req.Args = json.RawMessage(f.args)
	case len(words) == 0:
		return usagef("missing COMMAND: give a shell line (policy AGENT test git status), name(subject) or --command NAME --args JSON")
	case f.command == "":
		if m := subjectForm.FindStringSubmatch(req.Subject); m != nil {
			req.Command, req.Subject = m[1], m[2]
		}
	}
	req.Command = cmp.Or(req.Command, "execute_shell")
	v, err := api.TestPolicyRoute.Do(ctx, a.api(), ref, req)
	if err != nil {
		return agentErr(ref, err)
	}
	if a.json {
		return a.printJSON(v)
	}
	tw := table(a.stdout)
	fmt.Fprintf(tw, "effect\t%s\n", v.Effect)
	fmt.Fprintf(tw, "command\t%s\n", v.Command)
	fmt.Fprintf(tw, "subject\t%s\n", line(v.Subject))
	fmt.Fprintf(tw, "by\t%s\n", decidedBy(v))
	if g := v.Grant; g != nil && len(g.Files) > 0 {
		for i, f := range g.Files {
			label := ""
			if i == 0 {
				label = "bound"
			}
			fmt.Fprintf(tw, "%s\t%s, unchanged since granted (sha256 %s)\n", label, line(f.Path), line(shortHash(f.SHA256)))
		}
	}
	fmt.Fprintf(tw, "pattern\t%s\n", cmp.Or(v.Pattern, "-"))
	fmt.Fprintf(tw, "from\t%s\n", cmp.Or(v.Source, "-"))
	fmt.Fprintf(tw, "reason\t%s\n", line(v.Reason))
	if d := v.Decision; d != nil && api.ProfileText(d.Profile) != "" {
		fmt.Fprintf(tw, "runs\t%s\n", api.ProfileText(d.Profile))
	}
	if err := tw.Flush(); err != nil || len(v.Commands) == 0 {
		return err
	}
	fmt.Fprintln(a.stdout)
	tw = table(a.stdout, "COMMAND\tEFFECT\tPATTERN\tFROM\tREASON")
	for _, c := range v.Commands {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", line(c.Command), c.Effect, cmp.Or(c.Pattern, "-"), cmp.Or(c.Source, "-"), line(c.Reason))
	}
	return tw.Flush()
}

// decidedBy says what would decide a tested proposal: a person, a grant, a pattern or
// the mode, from the decision the daemon would record.
func decidedBy(v *api.PolicyTest) string {
	d := v.Decision
	switch {
	case d == nil && v.Effect == "ask":
		return "a person (it asks)"
	case d == nil:
		return "-"
	case d.Grant != "":
		return "grant " + line(d.Grant) + ": " + line(d.GrantLabel)
	case d.Pattern != "":
		return "pattern " + line(d.Pattern)
	}
	return line(d.By)
}

// shortHash is a hash's first 12 characters, as people compare them.
func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
