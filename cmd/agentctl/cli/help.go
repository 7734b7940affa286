package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

var helpCmd = &command{
	name:  "help",
	args:  "[COMMAND]",
	short: "explain agentctl or one command",
	long: `Without a command, help explains what agentctl is and lists the commands.
With one, it shows that command's usage, what it does and its flags; 'agentctl COMMAND -h'
shows the same.`,
	run: verb(helpVerbs.runHelp),
}

func (a helpVerbs) runHelp(ctx context.Context, args []string) error {
	pos, err := a.parse(a.newFlagSet(), args, -1)
	if err != nil {
		return err
	}
	switch len(pos) {
	case 0:
		a.printOverview(a.stdout)
		return nil
	case 1:
	default:
		return usagef("too many arguments: want at most one COMMAND")
	}
	c := lookup(pos[0])
	if c == nil {
		return usagef("unknown command %q", pos[0])
	}
	// The command prints its own help, flags included, when asked with -h.
	a.cmd, a.fs = c, nil
	return c.run(a.app, ctx, []string{"-h"})
}

const overview = `agentctl controls agentd, the daemon that runs autonomous agents on your local
Ollama models. An agent works on a task one step at a time: it thinks, proposes exactly
one command, and runs it only once you approve. Everything runs on this machine.

Start an agent and steer it from this terminal:

  agentctl run "list the largest files in my workspace" --follow

  Each proposal shows what the agent wants to run and why, then asks you:
    y       run it              y -3   run it and the next 2 without asking
    n       don't run it; the agent stops and waits for a new task
    other   anything else you type goes back to the agent as feedback

Check on agents working in the background:

  agentctl ls                 what every agent is doing
  agentctl show NAME          its pending proposal or question
  agentctl approve NAME       run it (or: deny NAME, feedback NAME TEXT, answer NAME TEXT)
  agentctl follow NAME        watch it live and decide as it goes

`

func (a *app) printOverview(w io.Writer) {
	io.WriteString(w, overview)
	fmt.Fprintln(w, "Commands:")
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	for _, c := range commands {
		fmt.Fprintf(tw, "  %s\t%s\n", c.name, c.short)
	}
	tw.Flush()
	fmt.Fprintf(w, `
Global flags (before or after the command):
  --socket PATH   agentd's unix socket, now %s
                  (from $AGENTD_SOCKET if set, else agentd's runtime directory:
                  $XDG_RUNTIME_DIR/agentd/ for a user, /run/agentd/ for the system service)
  --json          print results as JSON, for scripts (follow prints one event per line)

Run 'agentctl help COMMAND' or 'agentctl COMMAND -h' for more about a command.
`, a.socket)
}

// printHelp writes c's full help: usage, description and flags.
func (a *app) printHelp(w io.Writer, c *command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: %s\n\n%s\n", c.usageLine(), strings.TrimSpace(c.long))
	if fs != nil {
		printFlags(w, fs, "\n")
	}
	fmt.Fprintln(w, "\nGlobal flags --socket PATH and --json work with every command; see 'agentctl help'.")
}

func isGlobalFlag(name string) bool { return name == "socket" || name == "json" }

// printFlags lists a command's own flags (not the global ones), long names with "--",
// after lead; it prints nothing, lead included, for a command without flags.
func printFlags(w io.Writer, fs *flag.FlagSet, lead string) {
	var lines []string
	fs.VisitAll(func(f *flag.Flag) {
		if isGlobalFlag(f.Name) {
			return
		}
		name, usage := flag.UnquoteUsage(f)
		dash := "--"
		if len(f.Name) == 1 {
			dash = "-"
		}
		head := dash + f.Name
		if name != "" {
			head += " " + name
		}
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		lines = append(lines, "  "+head+"\t"+usage)
	})
	if len(lines) == 0 {
		return
	}
	fmt.Fprint(w, lead+"Flags:\n")
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	for _, l := range lines {
		fmt.Fprintln(tw, l)
	}
	tw.Flush()
}
