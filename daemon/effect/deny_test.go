package effect

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/commands/permission"
	"github.com/agentd/agentd/commands/shell"
	"github.com/agentd/agentd/internal/testutil"
)

// The preview checks its change against the deny rules with the step's end's own check
// (checkpoint.Diff.Denied), past the changes a diff lists: a change of more files than
// that which no rule denies is applied, and a denied file past them is still found.
func TestPreviewChecksEveryChangeAgainstTheDenyRulesAsTheStepsEndDoes(t *testing.T) {
	testutil.AsRootAndNot(t, func(t *testing.T) {
		r, err := permission.ParseRules("agent", nil, []string{"write_file(*.toml)"})
		if err != nil {
			t.Fatal(err)
		}
		f := newFixture(t, shell.Options{})
		run := func(line string) (string, bool) {
			args, _ := json.Marshal(map[string]string{"command_line": line})
			env := commands.Env{Workspace: f.ws, AgentID: "a-1", Profile: commands.Profile{Paths: permission.Denied(r)}}
			eff, _ := f.p.Run(context.Background(), f.sh, env, args, commands.Limits{Timeout: time.Minute}, f.room)
			return eff.None, eff.Appliable()
		}
		many := `mkdir many && cd many && i=0; while [ $i -lt 2100 ]; do : > f$i; i=$((i+1)); done`
		if none, ok := run(many); !ok {
			t.Errorf("a change of 2,100 files no rule denies is not applied: %s", none)
		}
		if none, ok := run(many + `; cd .. && echo x > zz.toml`); ok || !strings.Contains(none, "zz.toml: write_file(*.toml) denies writing it") {
			t.Errorf("a denied file past the changes the diff lists: appliable %v, %q", ok, none)
		}
	})
}
