package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/agentd/agentd/api"
)

// socketPlaces lists where agentd may listen on this machine; tests replace it so that
// what they print does not depend on the machine they run on.
var socketPlaces = api.SocketPlaces

// probeTimeout bounds asking one socket whether agentd answers there.
const probeTimeout = 2 * time.Second

// probe says what is at one socket path; answers is true when agentd answered there.
func probe(path string) (state string, answers bool) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "no socket", false
	case errors.Is(err, os.ErrPermission):
		return "cannot look: permission denied (private to the user agentd runs as: try sudo agentctl)", false
	case err != nil:
		return err.Error(), false
	case fi.Mode()&os.ModeSocket == 0:
		return "not a socket", false
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	st, err := api.StatusRoute.Do(ctx, &api.Client{Socket: path}, "", api.None{})
	switch {
	case err == nil:
		return fmt.Sprintf("agentd %s answers (pid %d)", st.Version, st.PID), true
	case errors.Is(err, syscall.EACCES):
		return "a socket, permission denied (private to the user agentd runs as: try sudo agentctl)", false
	case errors.Is(err, syscall.ECONNREFUSED):
		return "a socket nothing answers on (left by an agentd that stopped)", false
	}
	return "a socket that did not answer: " + err.Error(), false
}

// lookElsewhere probes every place agentd may listen but tried, and returns a line for
// each and the first where agentd answers (nil: none).
func lookElsewhere(tried string) (lines []string, found *api.SocketPlace) {
	for _, p := range socketPlaces() {
		if p.Path == tried {
			continue
		}
		state, ok := probe(p.Path)
		lines = append(lines, fmt.Sprintf("  %s (%s): %s", p.Path, p.From, state))
		if ok && found == nil {
			found = &p
		}
	}
	return lines, found
}

// socketSource names what picked the socket agentctl tried.
func socketSource(tried string) string {
	if places := socketPlaces(); len(places) > 0 && places[0].Path == tried {
		return places[0].From
	}
	return "--socket"
}

// notRunning explains that nothing answered at the socket agentctl tried: where that
// socket came from, what is at the other places agentd may listen, and what to do.
func (a *app) notRunning(dnr *api.DaemonNotRunningError) string {
	var b strings.Builder
	fmt.Fprintf(&b, "agentd is not running at %s (from %s): ", dnr.Socket, socketSource(dnr.Socket))
	stale := errors.Is(dnr.Err, syscall.ECONNREFUSED)
	if stale {
		b.WriteString("a socket is there, but nothing answers (left by an agentd that stopped)")
	} else {
		b.WriteString("no socket there")
	}
	lines, found := lookElsewhere(dnr.Socket)
	if len(lines) > 0 {
		b.WriteString("\nalso looked at:\n" + strings.Join(lines, "\n"))
	}
	cmd := "COMMAND"
	if a.cmd != nil {
		cmd = a.cmd.name
	}
	if found != nil {
		fmt.Fprintf(&b, "\nagentd runs at %s: use it with `agentctl --socket %s %s ...`, or `export %s=%s` for this shell",
			found.Path, found.Path, cmd, api.SocketEnv, found.Path)
	} else {
		b.WriteString("\nstart it with `agentd` (or `systemctl --user start agentd`, or `scripts/run.sh` in the agentd source folder, which leaves it running where plain agentctl looks)")
		if stale {
			b.WriteString(", which replaces the stale socket")
		}
		fmt.Fprintf(&b, "; if it listens elsewhere, point --socket or %s at its socket (agentd --socket PATH sets it)", api.SocketEnv)
	}
	return b.String()
}
