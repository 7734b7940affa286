// Package cli is agentctl, the terminal front end to agentd. It reaches the daemon only
// through api over the local unix socket, so anything agentctl does a script,
// a chat bot or a test can do the same way.
//
// Each subcommand is one file holding its help text, its flags and a runX(ctx, args)
// method on the type of its verb group (verbs.go), or runX(ctx, ref) for one that takes
// one agent (or schedule) and no flags (oneRef parses it), save pause, resume and stop,
// which differ only in the call they make and share lifecycle.go; the commands list in
// init is the one place a verb is registered. Run parses the global flags, dispatches,
// and turns errors into exit codes and messages that say how to fix the problem.
package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	osuser "os/user"
	"syscall"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/display"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// command is one subcommand.
type command struct {
	name  string
	args  string                                                 // what follows the name in the usage line
	short string                                                 // one line for the command list
	long  string                                                 // the help text, for a newcomer
	run   func(a *app, ctx context.Context, args []string) error // verb(group.runX)
}

func (c *command) usageLine() string {
	if c.args == "" {
		return "agentctl " + c.name
	}
	return "agentctl " + c.name + " " + c.args
}

// commands lists the subcommands in the order help shows them: the one place a verb
// is registered. A new verb is a file of its own holding `var xCmd = &command{...,
// run: verb(groupVerbs.runX)}` and runX on its group's type (verbs.go), plus its name
// here. completeCmd is the hidden one the completion scripts call. Both are set in init
// because help's and completion's runs refer back to them.
var commands []*command

var completeCmd *command

func init() {
	commands = []*command{
		runCmd, followCmd, lsCmd, showCmd, statusCmd, doctorCmd, webCmd, reloadCmd,
		approveCmd, denyCmd, feedbackCmd, answerCmd,
		createCmd, taskCmd, pauseCmd, resumeCmd, stopCmd, budgetCmd, rmCmd, historyCmd, whyCmd, diffCmd, rewindCmd,
		commandsCmd, policyCmd, scheduleCmd, teamCmd, memoryCmd, auditCmd, replayCmd,
		completionCmd, helpCmd,
	}
	completeCmd = &command{name: "__complete", run: verb(helpVerbs.runComplete)}
}

// lookup finds a subcommand by name, including the hidden __complete.
func lookup(name string) *command {
	if name == "__complete" {
		return completeCmd
	}
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

// app is one invocation of agentctl: its streams, global flags and the command being run.
type app struct {
	stdin  io.Reader
	stdout io.Writer // escapes what it shows (display.Text): model text reaches it
	stderr io.Writer // the terminal itself, for the spinner; messages go through note and exit
	raw    io.Writer // stdout unescaped, for JSON that printJSON escapes its own way

	socket string // --socket
	json   bool   // --json

	cmd *command      // the subcommand being run
	fs  *flag.FlagSet // its flags, for usage messages
	c   *api.Client
}

// Run runs agentctl with args (without the program name) and returns the exit code:
// 0 on success, 1 on errors, 2 on usage errors.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	out := display.NewWriter(stdout, display.Text)
	a := &app{stdin: stdin, stdout: out, stderr: stderr, raw: stdout, socket: api.DefaultSocketPath()}
	code := a.exit(a.run(ctx, args))
	out.Flush()
	return code
}

func (a *app) run(ctx context.Context, args []string) error {
	fs := a.flagSet("agentctl")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			a.printOverview(a.stdout)
			return nil
		}
		return &usageError{err.Error()}
	}
	rest := fs.Args()
	if len(rest) == 0 {
		a.printOverview(a.stderr)
		return errUsageShown
	}
	a.cmd = lookup(rest[0])
	if a.cmd == nil {
		return &usageError{fmt.Sprintf("unknown command %q", rest[0])}
	}
	return a.cmd.run(a, ctx, rest[1:])
}

// flagSet returns a flag set named name that holds the global flags and prints nothing:
// exit and printHelp say what is wrong and how to use it.
func (a *app) flagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.StringVar(&a.socket, "socket", a.socket, "agentd's unix `socket`")
	fs.BoolVar(&a.json, "json", a.json, "print results as JSON")
	return fs
}

// api returns the client for the daemon at --socket.
func (a *app) api() *api.Client {
	if a.c == nil {
		a.c = &api.Client{Socket: a.socket}
	}
	return a.c
}

// usageError is a mistake in the command line; it exits 2 and shows the usage.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// errHelpShown ends a run that printed help because it was asked for; it exits 0.
// errUsageShown ends one that printed help because the command line was incomplete; it exits 2.
var (
	errHelpShown  = errors.New("help shown")
	errUsageShown = errors.New("usage shown")
)

func (a *app) exit(err error) int {
	var ue *usageError
	switch {
	case err == nil, errors.Is(err, errHelpShown):
		return exitOK
	case errors.Is(err, errUsageShown):
		return exitUsage
	case errors.As(err, &ue):
		fmt.Fprintf(a.stderr, "agentctl: %s\n", display.Escape(ue.msg, display.Text))
		if a.cmd == nil {
			fmt.Fprintf(a.stderr, "Run 'agentctl help' for the commands.\n")
			return exitUsage
		}
		fmt.Fprintf(a.stderr, "usage: %s\n", a.cmd.usageLine())
		if a.fs != nil {
			printFlags(a.stderr, a.fs, "")
		}
		fmt.Fprintf(a.stderr, "Run 'agentctl help %s' for details.\n", a.cmd.name)
		return exitUsage
	}
	fmt.Fprintf(a.stderr, "agentctl: %s\n", display.Escape(a.explain(err), display.Text))
	return exitError
}

// explain turns an error into a message that says what to do about it.
func (a *app) explain(err error) string {
	var dnr *api.DaemonNotRunningError
	var ue *url.Error
	switch {
	case errors.As(err, &dnr):
		return a.notRunning(dnr)
	case errors.Is(err, syscall.EACCES):
		return fmt.Sprintf("cannot reach agentd at %s: permission denied (the socket is private to the user agentd runs as; run agentctl as that user)", a.socket)
	case errors.As(err, &ue):
		return fmt.Sprintf("cannot reach agentd at %s: %v", a.socket, ue.Err)
	}
	return err.Error()
}

// agentErr turns "not found" from a call that names an agent into the way to find it; a
// call that names none (ref "": every agent's memories, the config's commands) keeps err.
func agentErr(ref string, err error) error {
	var e *api.APIError
	if ref != "" && errors.Is(err, api.ErrNotFound) && !errors.As(err, &e) {
		return fmt.Errorf("no agent %q: see `agentctl ls`", ref)
	}
	return err // the daemon's own words: the agent, the closest name to a typo, agentctl ls
}

// newFlagSet returns the current command's flag set with the global flags on it, so they
// may come after the command too.
func (a *app) newFlagSet() *flag.FlagSet {
	a.fs = a.flagSet(a.cmd.name)
	return a.fs
}

// parse parses flags placed anywhere among the positional arguments and returns those.
// Once verbatimAfter positionals are read (when >= 0) the rest is taken as is, so free
// text like `feedback bob use ls -la` needs no quoting. `--` ends the flags.
func (a *app) parse(fs *flag.FlagSet, args []string, verbatimAfter int) ([]string, error) {
	var pos []string
	for {
		if verbatimAfter >= 0 && len(pos) >= verbatimAfter {
			if len(args) > 0 && args[0] == "--" {
				args = args[1:]
			}
			return append(pos, args...), nil
		}
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				a.printHelp(a.stdout, a.cmd, fs)
				return nil, errHelpShown
			}
			return nil, &usageError{err.Error()}
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if i := len(args) - len(rest) - 1; i >= 0 && args[i] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// parseAgent parses a command that takes exactly one AGENT.
func (a *app) parseAgent(fs *flag.FlagSet, args []string) (string, error) {
	return agentRef.parse(a, fs, args)
}

// agentArg is an AGENT argument, as the error for a missing one names it.
const agentArg = "AGENT (an agent's name or id; see agentctl ls)"

// parseNone parses a command that takes flags and no arguments.
func (a *app) parseNone(args []string) error {
	pos, err := a.parse(a.newFlagSet(), args, -1)
	if err == nil && len(pos) > 0 {
		err = usagef("%s takes no arguments", a.cmd.name)
	}
	return err
}

// printJSON writes v to stdout as indented JSON; --json output is the client's stable types,
// an empty list as [] rather than null.
func (a *app) printJSON(v any) error {
	b, err := json.MarshalIndent(api.NonNil(v), "", "  ")
	if err != nil {
		return err
	}
	return a.writeJSON(b)
}

// printList prints a listing: list as JSON with --json; else the note empty when it has
// no item; else a table under header, with a line of tab-separated cells (row) per item.
func printList[T any](a *app, list []T, empty, header string, row func(*T) string) error {
	if a.json {
		return a.printJSON(list)
	}
	if len(list) == 0 {
		a.note("%s", empty)
		return nil
	}
	tw := table(a.stdout, header)
	for i := range list {
		fmt.Fprintln(tw, row(&list[i]))
	}
	return tw.Flush()
}

// jsonArray prints a JSON array an item at a time, as printJSON prints the whole array:
// a long list shows as it is read, and is never held whole.
type jsonArray struct {
	a *app
	w *bufio.Writer
	n int
}

func (a *app) jsonArray() *jsonArray { return &jsonArray{a: a, w: bufio.NewWriter(a.raw)} }

// add prints v as the array's next item.
func (j *jsonArray) add(v any) error {
	b, err := json.MarshalIndent(v, "  ", "  ")
	if err != nil {
		return err
	}
	sep := ",\n  "
	if j.n == 0 {
		sep = "[\n  "
	}
	j.n++
	if _, err := j.w.WriteString(sep + display.Escape(string(b), display.JSON)); err != nil {
		return err
	}
	if j.n%api.ListPage == 0 {
		return j.w.Flush()
	}
	return nil
}

// close ends the array: [] when it had no item.
func (j *jsonArray) close() error {
	end := "\n]\n"
	if j.n == 0 {
		end = "[]\n"
	}
	j.w.WriteString(end)
	return j.w.Flush()
}

// writeJSON writes one encoded JSON value and a newline, its invisible characters as JSON
// escapes: the document decodes to the same value and shows safely on a terminal.
func (a *app) writeJSON(b []byte) error {
	_, err := io.WriteString(a.raw, display.Escape(string(b), display.JSON)+"\n")
	return err
}

// note prints information (not a result) to stderr, escaped like stdout.
func (a *app) note(format string, args ...any) {
	io.WriteString(a.stderr, display.Escape(fmt.Sprintf(format, args...), display.Text)+"\n")
}

// user names the person deciding, for the audit log: $USER, else the login name of
// this uid (a container's shell often has no $USER), else "uid N", which agentd turns
// into the name it finds (it also records the uid the kernel reports).
func user() string {
	for _, k := range []string{"USER", "LOGNAME"} {
		if u := os.Getenv(k); u != "" {
			return u
		}
	}
	if u, err := osuser.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return fmt.Sprintf("uid %d", os.Getuid())
}

// printResult prints v, what a call returned, unless the call failed (err is returned as
// it is): as JSON with --json, else as text writes it.
func printResult[T any](a *app, v T, err error, text func()) error {
	if err != nil {
		return err
	}
	if a.json {
		return a.printJSON(v)
	}
	text()
	return nil
}
