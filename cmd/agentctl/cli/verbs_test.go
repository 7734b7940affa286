package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
)

// runHere runs agentctl in process against a socket nothing serves.
func runHere(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	args = append([]string{"--socket", "/nonexistent/agentd.sock"}, args...)
	code = Run(context.Background(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// TestEveryRegisteredVerbShowsItsHelp: each verb in the one list reaches its own run
// through verb(): NAME -h prints its usage, the same as help NAME, and exits 0.
func TestEveryRegisteredVerbShowsItsHelp(t *testing.T) {
	for _, c := range commands {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runHere(c.name, "-h")
			if code != 0 || !strings.HasPrefix(out, "usage: "+c.usageLine()) || errs != "" {
				t.Fatalf("%s -h: exit %d, stdout %q, stderr %q", c.name, code, out, errs)
			}
			if _, help, _ := runHere("help", c.name); help != out {
				t.Errorf("%s -h differs from help %s:\n%s\n%s", c.name, c.name, out, help)
			}
		})
	}
}

// TestArgumentErrorsNameWhatIsMissingOrExtra: the shared parsers (one argument, no
// argument, an action) say what was wrong and how to find a right value, and exit 2.
func TestArgumentErrorsNameWhatIsMissingOrExtra(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"agent_missing", []string{"show"}, "missing AGENT (an agent's name or id; see agentctl ls)"},
		{"agent_extra", []string{"pause", "a", "b"}, `too many arguments: want one AGENT, got ["a" "b"]`},
		{"schedule_name_missing", []string{"schedule", "show"}, "missing NAME (a schedule's name or id; see agentctl schedule ls)"},
		{"schedule_name_extra", []string{"schedule", "rm", "a", "b"}, `too many arguments: want one schedule NAME, got ["a" "b"]`},
		{"team_id_missing", []string{"team", "show"}, "missing ID (a team run's id; see agentctl team ls)"},
		{"schedule_action_missing", []string{"schedule"}, "missing what to do: add, ls, show, edit, rm, pause, resume, run-now or history"},
		{"team_action_unknown", []string{"team", "fly"}, `unknown team action "fly": use run, plan, ls, show or stop`},
		{"no_arguments", []string{"status", "now"}, "status takes no arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runHere(tt.args...)
			first, _, _ := strings.Cut(errs, "\n")
			if code != exitUsage || out != "" || first != "agentctl: "+tt.want {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and agentctl: %s", code, out, errs, tt.want)
			}
		})
	}
}

// TestJSONShowsAnEmptyListAsBrackets: --json output of a list with nothing in it is []
// whatever the client decoded, so a script can iterate it without a null check.
func TestJSONShowsAnEmptyListAsBrackets(t *testing.T) {
	var out bytes.Buffer
	a := &app{raw: &out}
	if err := a.printJSON([]api.Schedule(nil)); err != nil {
		t.Fatal(err)
	}
	if out.String() != "[]\n" {
		t.Errorf("a nil list printed %q, want []", out.String())
	}
}
