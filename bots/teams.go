package bots

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/backoff"
)

// Team runs in chat (/agent team FILE TASK). A team run started from chat is bound to a
// new thread (team_bindings, one per platform); the relay follows the run's own event
// stream and posts each transcript entry there labelled with its role, the phase ends
// and the run's end with their reasons. The role agents (those with commands) are real
// agents without a binding: their proposals, questions and results go to their team's
// thread labelled with the role, and are decided there like any agent's. Which team a
// role agent belongs to is read from the engine's team runs at each of its events
// (teamDesk.roleOf). The binding's seq is the last entry posted, so a restart goes on
// from there.

// Teams is what /agent team needs of the team engine (team.Shelf has it).
type Teams interface {
	// StartTeamFile starts a run of the workflow FILE names in the configured directory:
	// a bare name, or the absolute path of a file there; any file elsewhere is refused.
	StartTeamFile(ctx context.Context, file, task, by string) (*api.TeamRun, error)
	// Workflows lists the workflows in the configured directory (none without one).
	Workflows(ctx context.Context) ([]string, error)
	Teams(ctx context.Context) ([]api.TeamRun, error)
	Team(ctx context.Context, ref string) (*api.TeamRun, error)
	SubscribeTeam(ref string, since int64) (<-chan api.Event, func(), error)
	// StopTeamBy stops a running team run; by ("PLATFORM:USER") is named in its end.
	StopTeamBy(ctx context.Context, ref, by string) (*api.TeamRun, error)
}

// teamRole is a role agent's team run and role.
type teamRole struct{ team, role string }

// SetTeams lets /agent team start team runs and the relay follow them. Call it before Run.
func (r *Relay) SetTeams(t Teams) { r.teams.engine = t }

const teamUsage = "Usage: /agent team FILE TASK (FILE: a workflow name from the teams directory); /agent team stop ID stops a team run; /agent team alone lists the workflows"

// teamStopVerb is the FILE of /agent team that stops a run instead: a workflow named
// stop is started by its absolute path in the teams directory.
const teamStopVerb = "stop"

// teamCommand is /agent team [FILE TASK | stop ID].
func (d *teamDesk) teamCommand(ctx context.Context, ep *endpoint, w Where, u User, text string) string {
	teams, tb := d.engine, d.r.opt.Bindings
	if teams == nil {
		return "Team runs are not available in this agentd."
	}
	file, task, _ := strings.Cut(strings.TrimSpace(text), " ")
	task = strings.TrimSpace(task)
	if file == teamStopVerb {
		return d.teamStop(ctx, ep, w, u, task)
	}
	if file == "" {
		names, err := teams.Workflows(ctx)
		if err != nil {
			return "Could not list the workflows: " + err.Error()
		}
		if len(names) == 0 {
			return "No workflows to list: agentd's [teams] dir is unset or empty. Chat starts only the workflows there: an admin puts NAME.toml in it (agentctl team run FILE TASK starts any file)."
		}
		return "Workflows: " + strings.Join(names, ", ") + "\nStart one with: /agent team NAME TASK; stop a team run with: /agent team stop ID"
	}
	if task == "" {
		return teamUsage
	}
	if !d.r.allowed(ctx, ep, w, "", u) {
		d.r.log.Warn("bots: refused a non-approver", "platform", ep.a.Platform(), "user", u.ID, "channel", w.Channel, "action", "team")
		return "You are not an approver here, so this changed nothing."
	}
	// The run is started before its thread: a bad file is told to the person alone, and
	// the follower reads the stored transcript from its start, so nothing is missed.
	run, err := teams.StartTeamFile(ctx, file, task, ep.a.Platform()+":"+u.ID)
	if err != nil {
		return "Could not start the team: " + err.Error()
	}
	thread, err := ep.a.StartThread(ctx, w.Channel, "", fmt.Sprintf("Team %s: %s", run.Workflow, cut(task, 200)))
	if err != nil {
		d.r.log.Error("bots: starting a team thread", "platform", ep.a.Platform(), "team", run.ID, "err", err)
		return fmt.Sprintf("Team run %s started, but its thread could not be opened: %v. Follow it with `agentctl team show %s`.", run.ID, err, run.ID)
	}
	b := TeamBinding{TeamRunID: run.ID, Platform: ep.a.Platform(), Team: w.Team, Channel: w.Channel, Thread: thread, CreatedBy: u.ID}
	if err := tb.BindTeam(ctx, b); err != nil {
		d.r.log.Error("bots: storing team binding", "team", run.ID, "err", err)
		return fmt.Sprintf("Team run %s started, but its thread could not be recorded: %v", run.ID, err)
	}
	d.r.log.Info("bots: team run started from chat", "platform", ep.a.Platform(), "team", run.ID, "workflow", run.Workflow, "user", u.ID, "channel", w.Channel)
	note := fmt.Sprintf("👥 Team run %s (%s) is on it. Each role's messages appear here labelled [role]; proposals of roles that use commands are decided here. Reply ROLE: text to pick one. Stop it with /agent team stop %s.",
		run.ID, run.Workflow, run.ID)
	d.r.posts.say(target{ep: ep, b: &Binding{Platform: b.Platform, Channel: b.Channel, Thread: thread}}, "posting a team note", FormatNote(note))
	d.followTeam(run.ID, 0)
	return fmt.Sprintf("Started team run %s (%s) in a new thread.", run.ID, run.Workflow)
}

// teamStop is /agent team stop ID: an approver stops a team run; its end, posted in its
// threads, names who.
func (d *teamDesk) teamStop(ctx context.Context, ep *endpoint, w Where, u User, id string) string {
	if id == "" || strings.ContainsAny(id, " \t\n") {
		return "Usage: /agent team stop ID (the team run's id, like t-1a2b3c4d5e6f; /agent status lists the running ones)"
	}
	if !d.r.allowed(ctx, ep, w, "", u) {
		d.r.log.Warn("bots: refused a non-approver", "platform", ep.a.Platform(), "user", u.ID, "channel", w.Channel, "action", "team stop", "team", id)
		return "You are not an approver here, so this changed nothing."
	}
	// Only a running run bound to this channel: one running elsewhere is answered as if
	// it did not exist. (An ended one is left to the engine, which says it has ended.)
	teams := d.engine
	run, err := teams.Team(ctx, id)
	if err != nil || run.Status == api.TeamRunning && !d.r.channelTeamRuns(ctx, ep.a.Platform(), w.Channel)[run.ID] {
		return fmt.Sprintf("Could not stop the team run: there is no team run %q in this channel; /agent status lists the ones running here.", cut(id, 80))
	}
	run, err = teams.StopTeamBy(ctx, run.ID, ep.a.Platform()+":"+u.ID)
	if err != nil {
		return "Could not stop the team run: " + err.Error()
	}
	d.r.log.Info("bots: team run stopped from chat", "platform", ep.a.Platform(), "team", run.ID, "user", u.ID)
	return fmt.Sprintf("Stopped team run %s (%s).", run.ID, run.Workflow)
}

// stoppedBy names, as a mention, the person a team run's end says stopped it, when they
// acted on platform ("stopped by PLATFORM:USER", see teamStop).
func stoppedBy(m *Message, t api.TeamTurn, text, platform string) {
	user, ok := strings.CutPrefix(strings.TrimSpace(text), "stopped by "+platform+":")
	// Only a plain id becomes a mention: the text is the run's, and anything else in it
	// (a ">", "!channel") would be rendered as markup that pings or links.
	if t.Kind != api.TurnEnd || !ok || !MentionID(platform, user) || len(m.Parts) != 1 {
		return
	}
	spans := m.Parts[0].Spans
	m.Parts[0].Spans = append(spans[:len(spans)-1:len(spans)-1], Span{Text: "stopped by "}, Span{User: user})
}

// loadTeams reads the running team runs' threads, posts what their role agents wait for,
// and follows each run from the last entry posted.
func (d *teamDesk) loadTeams(ctx context.Context) {
	if d.engine == nil {
		return
	}
	bs, err := d.r.opt.Bindings.TeamBindings(ctx)
	if err != nil {
		d.r.log.Error("bots: reading team bindings", "err", err)
		return
	}
	since := map[string]int{}
	for _, b := range bs {
		if s, ok := since[b.TeamRunID]; !ok || b.Seq < s {
			since[b.TeamRunID] = b.Seq
		}
	}
	for id, seq := range since {
		if run, err := d.engine.Team(ctx, id); err == nil && run.Status == api.TeamRunning {
			for _, agentID := range run.Agents {
				if a, err := d.r.opt.Service.Agent(ctx, agentID); err == nil {
					d.r.posts.postWaiting(ctx, a)
				}
			}
		}
		d.followTeam(id, seq)
	}
}

// teamForgetAfter bounds how long an ended team run's role agents stay placed in its
// threads waiting for their removal (a removal the relay missed, or agents kept, must
// not keep them there forever); their last events (a proposal closed as the run
// stopped) still belong there.
var teamForgetAfter = time.Minute

// threadsOf reads team run teamID's threads from the store, running or ended.
func (d *teamDesk) threadsOf(ctx context.Context, teamID string) []*TeamBinding {
	bs, err := d.r.opt.Bindings.TeamBindingsOf(ctx, teamID)
	if err != nil {
		d.r.log.Error("bots: reading a team run's threads", "team", teamID, "err", err)
	}
	return bs
}

// teamAgentPrefix is the name prefix of a team run's role agents (see team.AgentName).
func teamAgentPrefix(teamID string) string {
	short := strings.TrimPrefix(teamID, "t-")
	if len(short) > 8 {
		short = short[:8]
	}
	if short == "" {
		return ""
	}
	return "t" + short + "-"
}

// followTeam posts a team run's transcript after entry since in its threads, until the
// run ends or the relay stops; once per run.
func (d *teamDesk) followTeam(teamID string, since int) {
	ctx, teams, ok := d.startFollowing(teamID)
	if !ok {
		return // Run follows every bound running team when it starts
	}
	go func() {
		defer d.followEnded(teamID)
		for ctx.Err() == nil {
			ch, cancel, err := teams.SubscribeTeam(teamID, int64(since))
			if errors.Is(err, api.ErrNotFound) {
				return
			}
			if err != nil {
				d.r.log.Error("bots: following a team run", "team", teamID, "err", err)
				backoff.Sleep(ctx, time.Second)
				continue
			}
			ended := false
			each(ctx, ch, func(hctx context.Context, ev api.Event) {
				if ev.Team == nil {
					return
				}
				d.handleTeam(hctx, ev.Team)
				if t := ev.Team.Turn; t != nil {
					since = max(since, t.Seq)
					ended = ended || t.Kind == api.TurnEnd
				}
			})
			cancel()
			if ended {
				return
			}
		}
	}()
}

// handleTeam posts one team event in the run's threads.
func (d *teamDesk) handleTeam(ctx context.Context, te *api.TeamEvent) {
	t := te.Turn
	if t == nil {
		return
	}
	text := t.Text
	if strings.HasSuffix(text, "…") && utf8.RuneCountInString(text) >= 1000 {
		text = d.fullTurnText(ctx, te.TeamID, t.Seq, text) // events carry the first 1000 characters
	}
	eps := d.r.eps.all()
	for _, b := range d.threadsOf(ctx, te.TeamID) {
		ep, ok := eps[b.Platform]
		if !ok || b.Seq >= t.Seq {
			continue // shown there already
		}
		tg := target{ep: ep, b: &Binding{Platform: b.Platform, Channel: b.Channel, Thread: b.Thread}}
		msg, file := FormatTeamTurn(*t, text, ep.a.MaxText())
		stoppedBy(&msg, *t, text, b.Platform)
		d.r.posts.say(tg, "posting a team turn", msg)
		if file != "" {
			d.r.posts.upload(tg, "uploading a team turn", nil, fmt.Sprintf("%s-turn-%d.txt", te.TeamID, t.Seq), file, "Turn "+fmt.Sprint(t.Seq)+" in full")
		}
		seq := t.Seq
		d.r.posts.post(tg, "recording a team turn posted", func(ctx context.Context) error {
			if err := d.r.opt.Bindings.SetTeamSeq(ctx, te.TeamID, b.Platform, seq); err != nil {
				d.r.log.Error("bots: recording a team turn posted", "team", te.TeamID, "err", err)
			}
			return nil
		})
	}
}

// fullTurnText reads a transcript entry whole from the run, or keeps short.
func (d *teamDesk) fullTurnText(ctx context.Context, teamID string, seq int, short string) string {
	teams := d.engine
	if teams == nil {
		return short
	}
	run, err := teams.Team(ctx, teamID)
	if err != nil {
		return short
	}
	for _, t := range run.Transcript {
		if t.Seq == seq {
			return t.Text
		}
	}
	return short
}

// FormatTeamTurn builds the message for a team run's transcript entry whose text is
// text: a role's message labelled [role], a conclusion, a phase's end or a transition
// with its reason, the run's end with its status and reason. A text longer than maxText
// is shown cut, and returned whole as file.
func FormatTeamTurn(t api.TeamTurn, text string, maxText int) (m Message, file string) {
	text = strings.TrimSpace(text)
	body := func(head []Span, summary string) {
		m.Summary = summary + cut(text, 100)
		if len(text) > maxText {
			m.Parts = []Part{{Spans: append(head, Span{Text: cut(text, 300)})},
				{Spans: []Span{{Text: fmt.Sprintf("Full text (%d bytes) attached.", len(text))}}}}
			file = text
			return
		}
		m.Parts = []Part{{Spans: append(head, Span{Text: text})}}
	}
	where := t.Phase
	if where == "" {
		where = t.State
	}
	switch t.Kind {
	case api.TurnMessage:
		label := "[" + t.Role + "] "
		body([]Span{{Text: label, Bold: true}}, label)
	case api.TurnConclusion:
		head := fmt.Sprintf("📌 %s concluded → %s: ", where, t.Mode)
		body([]Span{{Text: head, Bold: true}}, head)
	case api.TurnPhaseEnd:
		head := fmt.Sprintf("⏹ Phase %s ended (%s): ", where, t.Mode)
		body([]Span{{Text: head, Bold: true}}, head)
	case api.TurnTransition:
		head := "➡️ "
		body([]Span{{Text: head}}, head)
	case api.TurnEnd:
		head := fmt.Sprintf("🏁 Team run %s: ", t.Mode)
		body([]Span{{Text: head, Bold: true}}, head)
	default:
		head := t.Kind + ": "
		body([]Span{{Text: head}}, head)
	}
	return m, file
}

// teamReply handles a message in a team run's thread: an answer or a decision for the
// role agent it names ("ROLE: text"), else for the one whose proposal or question was
// posted last among those waiting, once it passed teamReplyGuards.
func (d *teamDesk) teamReply(ctx context.Context, ep *endpoint, in Incoming, b *TeamBinding) {
	c := &check{r: d.r, ep: ep, w: in.Where, u: in.User, action: "reply", in: &in, team: b, text: in.Text}
	if c.passes(ctx, teamReplyGuards) {
		c.act(ctx)
	}
}

// roleAgents are run's role agents as the daemon has them now, by role.
func (d *teamDesk) roleAgents(ctx context.Context, run *api.TeamRun) []*api.Agent {
	var agents []*api.Agent
	for _, role := range slices.Sorted(maps.Keys(run.Agents)) {
		if a, err := d.r.opt.Service.Agent(ctx, run.Agents[role]); err == nil {
			agents = append(agents, a)
		}
	}
	return agents
}

// runningTeamsText is the line /agent status in w adds for the running team runs bound to
// its channel ("" for none).
func (d *teamDesk) runningTeamsText(ctx context.Context, platform string, w Where) string {
	teams := d.engine
	if teams == nil {
		return ""
	}
	all, err := teams.Teams(ctx)
	if err != nil {
		return ""
	}
	here := d.r.channelTeamRuns(ctx, platform, w.Channel)
	var parts []string
	for _, t := range all {
		if t.Status == api.TeamRunning && here[t.ID] {
			p := fmt.Sprintf("%s (%s, state %s, %d/%d turns)", t.ID, t.Workflow, t.State, t.Turns, t.MaxTurns)
			if t.Waiting != "" {
				p += " waiting for " + t.Waiting
			}
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("\n%d team runs running: %s", len(parts), strings.Join(parts, "; "))
}
