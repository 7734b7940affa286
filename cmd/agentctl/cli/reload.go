package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentd/agentd/api"
)

var reloadCmd = &command{
	name:  "reload",
	args:  "[--json]",
	short: "make agentd re-read its config file, without stopping agents",
	long: `Reload makes agentd re-read its config file, as SIGHUP does (systemctl reload agentd).
A bad file is refused with every problem, and agentd keeps running on the config it had.

Applied at once: models, directives, command and component lists, permission patterns,
[agents.NAME] tables, limits, [schedules], the log level, and the chat bots (restarted
when their settings changed). Agents keep running: a step under way finishes with the old
settings, the next step uses the new ones. Everything else (state directory, socket,
ollama.hosts, [memory], [web_commands], [shell], [mcp], …) is listed as needing a restart.`,
	run: verb(daemonVerbs.runReload),
}

func (a daemonVerbs) runReload(ctx context.Context, args []string) error {
	if err := a.parseNone(args); err != nil {
		return err
	}
	res, err := api.ReloadRoute.Do(ctx, a.api(), "", api.None{})
	return printResult(a.app, res, err, func() {
		where := res.Config
		if where == "" {
			where = "(defaults, no config file)"
		}
		switch {
		case len(res.Applied) == 0:
			fmt.Fprintf(a.stdout, "reloaded %s: nothing to apply\n", where)
		default:
			fmt.Fprintf(a.stdout, "reloaded %s: applied %s\n", where, strings.Join(res.Applied, ", "))
		}
		if res.BotsRestarted {
			fmt.Fprintln(a.stdout, "chat bots restarted")
		}
		if len(res.NeedsRestart) > 0 {
			fmt.Fprintf(a.stdout, "needs a restart to apply: %s\n", strings.Join(res.NeedsRestart, ", "))
		}
		for _, w := range res.Warnings {
			fmt.Fprintf(a.stdout, "warning: %s\n", w)
		}
	})
}
