package cli

import (
	"cmp"
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
	run: refVerb(refArg{}, api.ReloadRoute, writeReload),
}

// writeReload says what a reload applied and what waits for a restart.
func writeReload(a *app, _ string, res *api.ReloadResult) {
	where := cmp.Or(res.Config, "(defaults, no config file)")
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
}
