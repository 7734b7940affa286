package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/agentd/agentd/api"
)

var doctorCmd = &command{
	name:  "doctor",
	args:  "[--json]",
	short: "check everything agentd needs, and say how to fix what is wrong",
	long: `Doctor checks, in order: the daemon's socket (there, a socket, private to its owner),
the daemon itself, the Ollama server (reachable, its version), the model (on the server,
its context length), the smart model if one is set, the SQLite store (its integrity, and
that agentd.db and its -wal and -shm files are 0600), free disk space where the state
lives, that the state directory is private (0700, its files 0600), that new workspaces
can be made, and every configured integration (the shell sandbox, each MCP server, the
chat bots' connections and token files, the TCP listener: that it answers, whether
other machines reach it, that its token file is private and the token long enough).
Each finding is ok, warn or fail; a problem comes with the command or setting that
fixes it: a file or directory others may read fails, with its mode and the chmod.

The exit code is 1 when any check fails, so scripts and monitoring can use it.`,
	run: verb(daemonVerbs.runDoctor),
}

// errChecksFailed makes the exit code 1 after the report was printed.
var errChecksFailed = errors.New("some checks failed")

func (a daemonVerbs) runDoctor(ctx context.Context, args []string) error {
	if err := a.parseNone(args); err != nil {
		return err
	}
	checks := []api.Check{checkSocket(a.socket)}
	if checks[0].Status != api.CheckFail {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		st, err := api.StatusRoute.Do(cctx, a.api(), "", api.None{})
		cancel()
		if err != nil {
			checks = append(checks, daemonCheck(err))
		} else {
			checks = append(checks, api.Check{Name: "daemon", Status: api.CheckOK,
				Detail: fmt.Sprintf("agentd %s, pid %d, started %s, %d agents", st.Version, st.PID, formatTime(st.Started), total(st.Agents))})
			cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			rep, err := api.DoctorRoute.Do(cctx, a.api(), "", api.None{})
			cancel()
			if err != nil {
				checks = append(checks, api.Check{Name: "daemon", Status: api.CheckFail, Detail: "the daemon's checks failed: " + err.Error(),
					Fix: "upgrade agentctl and agentd together; see the daemon's log"})
			} else {
				checks = append(checks, rep.Checks...)
			}
		}
	}
	if err := printResult(a.app, api.DoctorReport{Checks: checks}, nil, func() { writeChecks(a.stdout, checks) }); err != nil {
		return err
	}
	if slices.ContainsFunc(checks, func(c api.Check) bool { return c.Status == api.CheckFail }) {
		return errChecksFailed
	}
	return nil
}

func writeChecks(w io.Writer, checks []api.Check) {
	tw := table(w)
	for _, c := range checks {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Status, c.Name, c.Detail)
		if c.Fix != "" {
			fmt.Fprintf(tw, "\t\tfix: %s\n", c.Fix)
		}
	}
	tw.Flush()
}

// checkSocket looks at the socket file before anything dials it, so a missing daemon and
// a socket others could use are told apart from other failures.
func checkSocket(path string) api.Check {
	c := api.Check{Name: "socket", Status: api.CheckOK}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		c.Status, c.Detail = api.CheckFail, "no socket at "+path+" (from "+socketSource(path)+"): agentd is not running, or listens elsewhere"
		c.Fix = "start agentd (`systemctl --user start agentd`, or `agentd`); if it uses another socket, pass --socket or set " + api.SocketEnv
		if _, found := lookElsewhere(path); found != nil {
			c.Detail += "; agentd answers at " + found.Path + " (" + found.From + ")"
			c.Fix = "agentctl --socket " + found.Path + " doctor, or export " + api.SocketEnv + "=" + found.Path
		}
		return c
	case errors.Is(err, os.ErrPermission):
		c.Status, c.Detail = api.CheckFail, "cannot reach "+path+": permission denied"
		c.Fix = "run agentctl as the user agentd runs as (for the system service: sudo agentctl)"
		return c
	case err != nil:
		c.Status, c.Detail = api.CheckFail, err.Error()
		return c
	case fi.Mode()&os.ModeSocket == 0:
		c.Status, c.Detail = api.CheckFail, path+" is not a socket"
		c.Fix = "remove it and restart agentd, or point --socket at agentd's socket"
		return c
	}
	c.Detail = fmt.Sprintf("%s (mode %04o)", path, fi.Mode().Perm())
	if fi.Mode().Perm()&0o077 != 0 {
		c.Status = api.CheckWarn
		c.Fix = "others on this machine can steer your agents: chmod 600 " + path + " (agentd makes it 0600; something changed it)"
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() && os.Getuid() != 0 {
		c.Status = api.CheckWarn
		c.Detail += fmt.Sprintf(", owned by uid %d, not you", st.Uid)
		if c.Fix == "" {
			c.Fix = "run agentctl as the user agentd runs as"
		}
	}
	return c
}

func daemonCheck(err error) api.Check {
	c := api.Check{Name: "daemon", Status: api.CheckFail, Detail: err.Error()}
	var down *api.DaemonNotRunningError
	switch {
	case errors.As(err, &down) && errors.Is(err, syscall.EACCES):
		c.Detail = "permission denied on " + down.Socket
		c.Fix = "run agentctl as the user agentd runs as (for the system service: sudo agentctl)"
	case errors.As(err, &down):
		c.Detail = "nothing answers on " + down.Socket + " (a stale socket?)"
		c.Fix = "start agentd (`systemctl --user start agentd`, or `agentd`); it replaces a stale socket"
	default:
		c.Fix = "see the daemon's log (journalctl --user -u agentd)"
	}
	return c
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
