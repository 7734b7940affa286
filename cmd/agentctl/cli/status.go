package cli

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/agentd/agentd/api"
)

var statusCmd = &command{
	name:  "status",
	args:  "[--json]",
	short: "is agentd up, can it reach Ollama, what are agents doing",
	long: `Status shows the daemon (version, pid, where it keeps its state), the Ollama server it
uses (address, whether it answers and when the daemon last heard from it, version, model
and its context length; with more than one [[ollama.hosts]], each host: up or down, slots
busy, models; when the daemon's last word is over 2s old it asks them again first), the
queue of model calls
(waiting now and how long calls waited, for agents a person waits on and for scheduled
and team work) and how many
agents are in each state, the chat bots' connections (Slack, Discord) and the TCP
listener ([http]: the address bound, and whether it serves metrics and the Agent
Protocol, or off) and the sandbox execute_shell runs in ([shell], or off). When something
is wrong it says how to fix it.`,
	run: refVerb(refArg{}, api.StatusRoute, func(a *app, _ string, st *api.Status) { writeStatus(a.stdout, st) }),
}

func writeStatus(w io.Writer, st *api.Status) {
	tw := table(w)
	fmt.Fprintf(tw, "agentd:\t%s, pid %d, started %s\n", st.Version, st.PID, formatTime(st.Started))
	fmt.Fprintf(tw, "state:\t%s\n", st.StateDir)
	o := st.Ollama
	if o.Reachable {
		fmt.Fprintf(tw, "ollama:\t%s, version %s%s\n", o.Host, o.Version, checkedAgo(o.CheckedAt, time.Now()))
		if o.Error != "" && o.ModelPresent {
			fmt.Fprintf(tw, "\tlast error: %s\n", o.Error)
		}
	} else {
		why := ""
		if o.Error != "" {
			why = ": " + o.Error
		}
		fmt.Fprintf(tw, "ollama:\t%s unreachable%s%s\n", o.Host, why, checkedAgo(o.CheckedAt, time.Now()))
		fmt.Fprintf(tw, "\t%s\n", ollamaHostHint(o.HostFrom))
	}
	model := o.Model
	if o.ContextLength > 0 {
		model += fmt.Sprintf(", context %d tokens", o.ContextLength)
	}
	fmt.Fprintf(tw, "model:\t%s\n", model)
	if len(o.Capabilities) > 0 {
		fmt.Fprintf(tw, "capabilities:\t%s\n", strings.Join(o.Capabilities, ", "))
	}
	if o.Reachable && !o.ModelPresent {
		fmt.Fprintf(tw, "\tmodel not found: run `ollama pull %s`\n", o.Model)
	}
	if o.SmartModel != "" {
		fmt.Fprintf(tw, "smart model:\t%s\n", o.SmartModel)
	}
	writePool(tw, o)
	fmt.Fprintf(tw, "agents:\t%s\n", agentCounts(st.Agents))
	for _, b := range st.Bots {
		fmt.Fprintf(tw, "%s:\t%s\n", b.Platform, botState(b))
	}
	fmt.Fprintf(tw, "http:\t%s\n", httpState(st.HTTP))
	if st.Web.URL != "" {
		fmt.Fprintf(tw, "web console:\t%s (`agentctl web` logs a browser in)\n", st.Web.URL)
	} else {
		fmt.Fprintf(tw, "web console:\toff (`agentctl web` starts it)\n")
	}
	switch sh := st.Shell; {
	case !sh.Enabled:
		fmt.Fprintf(tw, "shell:\toff\n")
	default:
		fmt.Fprintf(tw, "shell:\t%s\n", sh.Sandbox)
		if !sh.Confined {
			fmt.Fprintf(tw, "\tnot sandboxed: `agentctl doctor` says how to fix it\n")
		}
		if sh.Limits != "" {
			fmt.Fprintf(tw, "limits:\t%s\n", sh.Limits)
		}
	}
	tw.Flush()
}

// httpState renders the TCP listener: "127.0.0.1:7070 (metrics, agent protocol)" or "off".
func httpState(h api.HTTPStatus) string {
	if !h.Listening {
		return "off"
	}
	var serves []string
	if h.Metrics {
		serves = append(serves, "metrics")
	}
	if h.AgentProtocol {
		serves = append(serves, "agent protocol")
	}
	s := h.Addr
	if len(serves) > 0 {
		s += " (" + strings.Join(serves, ", ") + ")"
	}
	if h.Remote {
		s += ", reachable from other machines"
	}
	return s
}

// botState renders a bot's connection: "connected since …", "reconnecting (attempt 3): err".
func botState(b api.BotStatus) string {
	s := b.State
	if b.Attempt > 0 {
		s += fmt.Sprintf(" (attempt %d)", b.Attempt)
	}
	if b.Error != "" {
		s += ": " + b.Error
	}
	return s + " since " + formatTime(b.Since)
}

// agentCounts renders {"idle": 2, "thinking": 1} as "3 (1 thinking, 2 idle)", busiest
// states first.
func agentCounts(m map[string]int) string {
	total := 0
	states := make([]string, 0, len(m))
	for s, n := range m {
		if n > 0 {
			total += n
			states = append(states, s)
		}
	}
	if total == 0 {
		return "none yet (start one with: agentctl run \"TASK\")"
	}
	rank := map[string]int{
		string(api.StateAwaitingDecision): 0, string(api.StateFailed): 1,
		string(api.StateWaitingForModel): 2, string(api.StateThinking): 3,
		string(api.StateExecuting): 4, string(api.StatePaused): 5, string(api.StateIdle): 6,
	}
	sort.Slice(states, func(i, j int) bool {
		ri, oki := rank[states[i]]
		rj, okj := rank[states[j]]
		if oki != okj {
			return oki
		}
		if ri != rj {
			return ri < rj
		}
		return states[i] < states[j]
	})
	parts := make([]string, len(states))
	for i, s := range states {
		parts[i] = fmt.Sprintf("%d %s", m[s], s)
	}
	return fmt.Sprintf("%d (%s)", total, strings.Join(parts, ", "))
}

// checkedAgo tells how old the daemon's view of Ollama is: it probes about once a
// minute, so "reachable" may be up to a minute stale.
func checkedAgo(at, now time.Time) string {
	if at.IsZero() {
		return "" // a daemon from before checked_at
	}
	age := now.Sub(at).Round(time.Second)
	if age < 2*time.Second {
		return " (checked just now)"
	}
	return fmt.Sprintf(" (checked %s ago)", age)
}

// ollamaHostHint says how to reach an Ollama server agentd cannot: start one where agentd
// looks, or change where it looks, there where agentd took the address from.
func ollamaHostHint(from string) string {
	switch from {
	case "config":
		return "start it there with `ollama serve`, or fix [[ollama.hosts]] url in agentd's config and restart agentd"
	case "OLLAMA_HOST":
		return "start it there with `ollama serve`, or fix agentd's $OLLAMA_HOST (or set [[ollama.hosts]] url in its config) and restart agentd"
	}
	return "start it with `ollama serve`, or point agentd at a running one: [[ollama.hosts]] url in its config (or $OLLAMA_HOST), then restart agentd"
}
