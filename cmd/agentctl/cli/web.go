package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"

	"github.com/agentd/agentd/api"
)

var webCmd = &command{
	name:  "web",
	args:  "[logout] [--no-open] [--json]",
	short: "open the web console: every agent, live, with the decision buttons",
	long: `Web starts agentd's web console on 127.0.0.1 (if it is not serving yet) and prints a
login URL. The URL holds a one-time token: opening it logs that browser in (a session
cookie) and spends the token, so run agentctl web again for another browser. Anyone who
can read the URL within ten minutes can log in: do not paste it anywhere.

The console shows every agent's state, what waits for you and the budget used, each
agent's live stream, and the buttons to approve (×N), deny, give feedback and answer:
the same decisions as agentctl and chat, bound to the proposal shown.

With a graphical session (DISPLAY or WAYLAND_DISPLAY set, not under CI) it opens the URL
with xdg-open; --no-open only prints it. [web_console] in the config file serves it from
agentd's start and sets its address (default 127.0.0.1:7077). From another machine, use
an SSH tunnel: ssh -L 7077:127.0.0.1:7077 HOST.

agentctl web logout logs every browser out at once (their live streams stop too) and
makes the login URLs not used yet stop working: use it when a URL or a logged-in
machine may be in someone else's hands. Log out in the console ends that browser's
session, in every tab; a session unused for 12 hours ends by itself.`,
	run: verb(daemonVerbs.runWeb),
}

func (a daemonVerbs) runWeb(ctx context.Context, args []string) error {
	fs := a.newFlagSet()
	noOpen := fs.Bool("no-open", false, "print the login URL; do not open a browser")
	pos, err := a.parse(fs, args, -1)
	if err != nil {
		return err
	}
	switch {
	case len(pos) == 1 && pos[0] == "logout":
		return a.webLogout(ctx)
	case len(pos) > 0:
		return usagef("web takes no arguments but logout, got %q", pos[0])
	}
	login, err := api.WebLoginRoute.Do(ctx, a.api(), "", api.None{})
	return printResult(a.app, login, err, func() {
		fmt.Fprintf(a.stdout, "%s\n", login.LoginURL)
		a.note("the web console serves %s; the URL above logs one browser in, once, within 10 minutes", login.URL)
		if !*noOpen && canOpen() {
			if err := openBrowser(login.LoginURL); err != nil {
				a.note("could not open a browser (%v): open the URL yourself", err)
			}
		}
	})
}

// webLogout ends every web console session.
func (a daemonVerbs) webLogout(ctx context.Context) error {
	out, err := api.WebLogoutRoute.Do(ctx, a.api(), "", api.None{})
	return printResult(a.app, out, err, func() {
		fmt.Fprintf(a.stdout, "logged out %d web console session(s); unused login URLs no longer work\n", out.Sessions)
	})
}

// canOpen reports whether a browser can be opened here: a graphical session, not CI,
// and xdg-open installed.
func canOpen() bool {
	if os.Getenv("CI") != "" || (os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "") {
		return false
	}
	_, err := exec.LookPath("xdg-open")
	return err == nil
}

// openBrowser starts xdg-open on url and leaves it running: agentctl exits first.
func openBrowser(url string) error {
	cmd := exec.Command("xdg-open", url)
	if err := cmd.Start(); err != nil {
		return err
	}
	return cmd.Process.Release()
}
