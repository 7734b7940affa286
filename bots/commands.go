package bots

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentd/agentd/api"
)

// Slash commands (/agent …) answer approvers only, and show and act on the agents of the
// channel they are typed in: a channel sees the agents bound to it, nothing else.

// OnCommand runs a slash command (/agent run|status|list|stop|pause|resume|rewind|schedule|team) and returns
// the text shown to the person who typed it.
func (r *Relay) OnCommand(ctx context.Context, platform string, w Where, u User, text string) string {
	ep := r.eps.get(platform)
	if ep == nil || u.Bot {
		return ""
	}
	if !ep.rules.Serves(w) {
		return "I do not serve this channel. An admin can add it to the bot's channels in agentd's config."
	}
	verb, rest, _ := strings.Cut(strings.TrimSpace(text), " ")
	// Before anything is read: a refusal shows nothing of the agents, not even whether any
	// exist. run checks the channel's approvers first itself (start) and refuses in a note.
	if verb != "run" && !r.mayCommand(ctx, ep, w, u) {
		r.log.Warn("bots: refused a non-approver", "platform", platform, "user", u.ID, "channel", w.Channel, "action", "command")
		return "You are not an approver here, so I can show or change nothing. Ask an admin to add you to the bot's approvers."
	}
	rest = strings.TrimSpace(rest)
	switch verb {
	case "run":
		if rest == "" {
			return "Usage: /agent run TASK"
		}
		a, err := r.start(ctx, ep, w, u, rest, "")
		if err != nil {
			if errors.Is(err, errNotApprover) {
				return ""
			}
			return "Could not start: " + err.Error()
		}
		return fmt.Sprintf("Started agent %s in a new thread.", a.Name)
	case "list", "ls":
		agents, err := r.visibleAgents(ctx, ep, w, u)
		if err != nil {
			return err.Error()
		}
		return listText(agents)
	case "status":
		if rest == "" {
			agents, err := r.visibleAgents(ctx, ep, w, u)
			if err != nil {
				return err.Error()
			}
			teams := ""
			if r.allowed(ctx, ep, w, "", u) { // team runs are decided by the channel's approvers
				teams = r.teams.runningTeamsText(ctx, platform, w)
			}
			return statusText(agents) + teams
		}
		a, err := r.channelAgent(ctx, ep, w, u, rest)
		if err != nil {
			return err.Error()
		}
		return agentText(a)
	case "stop", "pause", "resume":
		if rest == "" {
			return "Usage: /agent " + verb + " AGENT"
		}
		a, err := r.channelAgent(ctx, ep, w, u, rest)
		if err != nil {
			return err.Error()
		}
		call := map[string]func(context.Context, string) (*api.Agent, error){
			"stop": r.opt.Service.Stop, "pause": r.opt.Service.Pause, "resume": r.opt.Service.Resume}[verb]
		if a, err = call(ctx, a.ID); err != nil {
			return err.Error()
		}
		return fmt.Sprintf("Agent %s is %s.", a.Name, a.State)
	case "schedule", "schedules":
		return r.scheduleCommand(ctx, ep, w, u, rest)
	case "team":
		return r.teams.teamCommand(ctx, ep, w, u, rest)
	case "rewind":
		return r.rewindCommand(ctx, ep, w, u, rest)
	}
	return "Usage: /agent run TASK | status [AGENT] | list | stop AGENT | pause AGENT | resume AGENT | rewind AGENT --to STEP [--run RUN] | schedule ls | schedule run NAME | schedule when NAME --when… | team [FILE TASK | stop ID]"
}

// channelAgents lists the agents a slash command in w sees: those bound to a thread of
// w's channel on platform, their helpers, and the role agents of team runs bound there.
// Every other agent is not there for it.
func (r *Relay) channelAgents(ctx context.Context, platform string, w Where) ([]api.Agent, error) {
	all, err := r.opt.Service.Agents(ctx)
	if err != nil {
		return nil, err
	}
	bs, err := r.opt.Bindings.Bindings(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading chat bindings: %w", err)
	}
	here := map[string]bool{}
	for _, b := range bs {
		if b.Platform == platform && b.Channel == w.Channel {
			here[b.AgentID] = true
		}
	}
	if teams := r.teams.engine; teams != nil {
		for id := range r.channelTeamRuns(ctx, platform, w.Channel) {
			if run, err := teams.Team(ctx, id); err == nil {
				for _, a := range run.Agents {
					here[a] = true
				}
			}
		}
	}
	var out []api.Agent
	for _, a := range under(all, here) {
		out = append(out, *a)
	}
	return out, nil
}

// visibleAgents are the channelAgents u may decide for: who may not decide for an agent
// (its own approvers replace the channel's) does not see its task either.
func (r *Relay) visibleAgents(ctx context.Context, ep *endpoint, w Where, u User) ([]api.Agent, error) {
	agents, err := r.channelAgents(ctx, ep.a.Platform(), w)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(agents, func(a api.Agent) bool { return !r.allowed(ctx, ep, w, a.Name, u) }), nil
}

// channelAgent finds the agent ref (a name or id) among visibleAgents; any other is
// answered as if it did not exist.
func (r *Relay) channelAgent(ctx context.Context, ep *endpoint, w Where, u User, ref string) (*api.Agent, error) {
	agents, err := r.visibleAgents(ctx, ep, w, u)
	if err != nil {
		return nil, err
	}
	for i := range agents {
		if agents[i].ID == ref || agents[i].Name == ref {
			return &agents[i], nil
		}
	}
	return nil, fmt.Errorf("No agent %s in this channel. /agent list shows this channel's agents.", cut(ref, 80))
}

// channelTeamRuns are the team runs bound to threads of channel on platform.
func (r *Relay) channelTeamRuns(ctx context.Context, platform, channel string) map[string]bool {
	bs, err := r.opt.Bindings.TeamBindings(ctx)
	if err != nil {
		r.log.Error("bots: reading team bindings", "err", err)
		return nil
	}
	out := map[string]bool{}
	for _, b := range bs {
		if b.Platform == platform && b.Channel == channel {
			out[b.TeamRunID] = true
		}
	}
	return out
}

func listText(agents []api.Agent) string {
	if len(agents) == 0 {
		return "No agents."
	}
	var b strings.Builder
	for _, a := range agents {
		fmt.Fprintf(&b, "%s  %s  %s\n", a.Name, a.State, cut(taskText(&a), 80))
	}
	return strings.TrimRight(b.String(), "\n")
}

func statusText(agents []api.Agent) string {
	by := map[string]int{}
	for _, a := range agents {
		by[string(a.State)]++
	}
	parts := []string{fmt.Sprintf("%d agents", len(agents))}
	for _, k := range slices.Sorted(maps.Keys(by)) {
		parts = append(parts, fmt.Sprintf("%d %s", by[k], k))
	}
	return strings.Join(parts, ", ")
}

// taskText is what a works on: its task, or for an agent created with goals and no
// task, its goals rather than the stand-in task the daemon gives its run.
func taskText(a *api.Agent) string {
	if a.Task == api.GoalsTask && len(a.Goals) > 0 {
		return "its goals: " + strings.Join(a.Goals, "; ")
	}
	return a.Task
}

func agentText(a *api.Agent) string {
	s := fmt.Sprintf("%s: %s", a.Name, a.State)
	if why := a.ShownReason(); why != "" {
		s += " (" + why + ")"
	}
	if t := taskText(a); t != "" {
		s += "\nTask: " + cut(t, 200)
	}
	if a.Pending != nil {
		s += fmt.Sprintf("\nWaiting for a decision on step %d: %s", a.Pending.Step, a.Pending.Command)
	}
	if a.Question != nil {
		s += "\nWaiting for an answer: " + cut(a.Question.Text, 200)
	}
	return s
}
