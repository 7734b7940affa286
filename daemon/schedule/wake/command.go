package wake

import (
	"context"
	"errors"
	"fmt"
	"github.com/agentd/agentd/api"
	"strings"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/internal/display"
)

// checkProfileOf is how a check command runs: as a pattern-approved execute_shell runs
// (read-only workspace, an empty HOME, no agent config that runs code), without the paths
// t's deny rules keep from programs, and offline unless the schedule says --when-network
// (then with the network the agent's config grants).
func checkProfileOf(t Target, network bool) commands.Profile {
	return commands.Profile{Bounded: true, Network: network, Paths: t.Denied}
}

// offlineNote ends a failed check that ran offline: schedules made before checks ran
// offline by default may need the network they had.
const offlineNote = "(it ran offline: if it needs the network, give the schedule's conditions again with --when-network, e.g. agentctl schedule edit NAME --when 'COMMAND' --when-network)"

// checkCommand runs one command condition in the agent's sandbox: exit 0 wakes, with its
// output as what it found; exit 1 is nothing to do; anything else, or a program stopped
// for its time or its output, is a failed check.
func (e *Engine) checkCommand(ctx context.Context, line string, t Target, network bool) result {
	r := result{cond: "--when " + api.QuoteWord(line)}
	shown := display.Escape(line, display.Line)
	switch {
	case t.Workspace == "":
		r.err = errors.New("a check command runs in the agent's workspace, and this schedule makes a fresh agent per run: target an agent")
		return r
	case t.Shell == nil:
		r.err = errors.New("the agent has no execute_shell to run it with: enable [shell] in the config")
		return r
	}
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	res, err := t.Shell.Check(ctx, commands.Env{Workspace: t.Workspace, AgentID: t.AgentID, Profile: checkProfileOf(t, network)}, line)
	if err != nil {
		r.err = err
		return r
	}
	out := strings.TrimSpace(res.Output)
	if res.Bytes > int64(len(res.Output)) {
		out += fmt.Sprintf("\n[output cut at %d of %d bytes]", len(res.Output), res.Bytes)
	}
	switch {
	case res.Stopped == "its time ran out":
		r.err = fmt.Errorf("stopped with everything it started: it ran longer than %v", e.timeout)
	case res.Stopped != "":
		r.err = fmt.Errorf("stopped with everything it started: %s", res.Stopped)
	case res.Exit == 0:
		r.wake = true
		r.line = "`" + shown + "` exited 0"
		if out == "" {
			r.text = "The check command `" + shown + "` exited 0 (it printed nothing)."
		} else {
			r.text = "The check command `" + shown + "` exited 0; its output:\n" + display.Escape(out, display.Text)
		}
	case res.Exit == 1:
		r.line = "`" + shown + "` exited 1"
		if first, _, _ := strings.Cut(out, "\n"); first != "" {
			r.line += ": " + display.Cut(display.Escape(first, display.Line), 200, display.Ellipsis)
		}
	default:
		r.err = fmt.Errorf("exited %d (0 wakes the model, 1 is nothing to do, anything else a failed check)", res.Exit)
		if first, _, _ := strings.Cut(out, "\n"); first != "" {
			r.err = fmt.Errorf("%w: %s", r.err, display.Cut(display.Escape(first, display.Line), 200, display.Ellipsis))
		}
	}
	if res.Note != "" && r.err != nil {
		r.err = fmt.Errorf("%w %s", r.err, display.Escape(res.Note, display.Line))
	}
	if r.err != nil && !network {
		r.err = fmt.Errorf("%w %s", r.err, offlineNote)
	}
	return r
}
