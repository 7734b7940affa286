package bots

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentd/agentd/api"
)

// A rewind from chat: `/agent rewind NAME --to STEP [--run RUN]` (or `--undo ID`) asks in
// the agent's thread what putting its workspace back would change, with buttons as a
// proposal has; an approver's Rewind click does it (the daemon's one Rewind, as agentctl
// and the web console call it), Cancel leaves the workspace alone.

// Rewind buttons.
const (
	ActionRewind       = "rewind"
	ActionRewindCancel = "rewind_cancel"
)

// rewindKind is the ChatMessage kind of a rewind's question: its ProposalID is the id of
// the step (or rewind) whose before state the workspace would get back.
const rewindKind = "rewind"

// rewindUsage is how /agent rewind is typed.
const rewindUsage = "Usage: /agent rewind AGENT --to STEP [--run RUN] | /agent rewind AGENT --run RUN (before the run, a team's turn, changed anything) | /agent rewind AGENT --undo ID (STEP and RUN as `agentctl history AGENT` shows them)"

// rewindClickGuards are what a Rewind or Cancel click passes, in order. The question's
// message must be one the relay asked for that step: a button copied elsewhere rewinds
// nothing.
var rewindClickGuards = []guard{
	{"served_here", served},
	{"first_delivery", firstClickDelivery},
	{"approver_here", approverHere},
	{"message_asks_rewind", messageAsksRewind},
	{"thread_agent", rewindAgent},
	{"agent_approver", agentApprover},
}

// parseRewind reads `NAME --to STEP [--run RUN]` or `NAME --undo ID`.
func parseRewind(text string) (name string, req api.RewindRequest, err error) {
	f := strings.Fields(text)
	if len(f) == 0 {
		return "", req, fmt.Errorf("%s", rewindUsage)
	}
	name = f[0]
	for i := 1; i < len(f); i += 2 {
		if i+1 >= len(f) {
			return "", req, fmt.Errorf("%s has no value. %s", f[i], rewindUsage)
		}
		switch v := f[i+1]; f[i] {
		case "--to":
			if req.To, err = strconv.Atoi(v); err != nil || req.To < 1 {
				return "", req, fmt.Errorf("--to %s: want a step number like 3. %s", cut(v, 40), rewindUsage)
			}
		case "--run":
			req.Run = v
		case "--undo":
			req.Undo = v
		default:
			return "", req, fmt.Errorf("unknown option %s. %s", cut(f[i], 40), rewindUsage)
		}
	}
	if (req.To > 0 || req.Run != "") == (req.Undo != "") {
		return "", req, fmt.Errorf("%s", rewindUsage)
	}
	return name, req, nil
}

// rewindCommand asks, in the agent's thread, whether to rewind as text says; its answer
// is for the person who typed it.
func (r *Relay) rewindCommand(ctx context.Context, ep *endpoint, w Where, u User, text string) string {
	name, req, err := parseRewind(text)
	if err != nil {
		return err.Error()
	}
	a, err := r.channelAgent(ctx, ep, w, u, name)
	if err != nil {
		return err.Error()
	}
	req.DryRun, req.By, req.Source = true, u.ID, ep.a.Platform()
	plan, err := r.opt.Service.Rewind(ctx, a.ID, req)
	if err != nil {
		return "Not rewound: " + err.Error()
	}
	asked := false
	for _, t := range r.posts.targets(a.ID) {
		if t.ep != ep || t.b.Channel != w.Channel {
			continue
		}
		r.posts.askRewind(t, plan, u)
		asked = true
	}
	if !asked {
		return fmt.Sprintf("Agent %s has no thread in this channel to ask in; rewind it with `agentctl rewind %s`.", a.Name, a.Name)
	}
	return fmt.Sprintf("Asked in agent %s's thread: %s. An approver's Rewind click there puts the workspace back.", a.Name, rewindWhat(plan))
}

// askRewind posts the question of a rewind (plan, asked by u) in t's thread, records it
// for the click, and attaches the whole diff when the message shows part of it.
func (po *poster) askRewind(t target, plan *api.Rewind, u User) {
	platform := t.ep.a.Platform()
	posted := false
	po.post(t, "asking to rewind "+plan.Agent, func(ctx context.Context) error {
		id, err := t.ep.a.Post(ctx, t.b.Channel, t.b.Thread, labelled(FormatRewind(RewindView{Plan: plan, By: u.ID}, platform), t.label))
		if err != nil {
			return err
		}
		posted = true
		m := ChatMessage{ProposalID: plan.Restore.ID, Platform: platform, Kind: rewindKind, Channel: t.b.Channel, Message: id}
		if err := po.r.opt.Bindings.SetMessage(ctx, m); err != nil {
			po.r.log.Error("bots: recording a rewind's question", "agent", plan.AgentID, "err", err)
		}
		return nil
	})
	if name, diff := diffFile(plan.Restore.Preview, "rewind-"+plan.Restore.ID); name != "" {
		po.post(t, "uploading the diff of a rewind of "+plan.Agent, func(ctx context.Context) error {
			if !posted {
				return nil
			}
			return t.ep.a.PostFile(ctx, t.b.Channel, t.b.Thread, name, diff, "Full diff of the rewind "+rewindWhat(plan))
		})
	}
}

// messageAsksRewind: the message clicked is a rewind question the relay posted for the
// step the button names; any other is refused and audited.
func messageAsksRewind(ctx context.Context, c *check) bool {
	m, err := c.r.opt.Bindings.MessageAt(ctx, c.ep.a.Platform(), c.w.Channel, c.click.Message)
	if err != nil {
		c.tell(ctx, "Could not read which rewind this message asks, so nothing was rewound; try again.")
		return false
	}
	if m == nil || m.Kind != rewindKind || m.ProposalID != c.ref.ProposalID {
		c.audit(ctx, c.ref.AgentID, c.threadAgentID(ctx), "the rewind button is not on the rewind question it names", 0)
		c.tell(ctx, "This button is not on the rewind question it names, so nothing was rewound. Ask again with /agent rewind.")
		return false
	}
	c.asked = m
	return true
}

// rewindAgent finds the agent a rewind click is for: the thread's, or a helper of it the
// button names. A button naming any other agent is refused, and audited.
func rewindAgent(ctx context.Context, c *check) bool {
	id := c.threadAgentID(ctx)
	switch {
	case id == "":
		c.tell(ctx, "This thread has no agent now, so nothing was rewound.")
		return false
	case c.ref.AgentID != "" && c.ref.AgentID != id && !c.isHelperOf(ctx, c.ref.AgentID, id):
		c.audit(ctx, c.ref.AgentID, id, "the rewind button names another agent than its thread's", 0)
		c.tell(ctx, "This button is not for this thread's agent, so nothing was rewound.")
		return false
	case c.ref.AgentID != "":
		id = c.ref.AgentID
	}
	a, err := c.r.opt.Service.Agent(ctx, id)
	if err != nil {
		c.tell(ctx, "This rewind's agent is gone.")
		return false
	}
	c.a, c.ref.AgentID = a, a.ID
	return true
}

// onRewindClick rewinds (or, for Cancel, does not) once the click passed its guards, and
// shows on the question what came of it.
func (c *check) onRewindClick(ctx context.Context) {
	platform := c.ep.a.Platform()
	view := RewindView{Plan: &api.Rewind{AgentID: c.a.ID, Agent: c.a.Name}, Closer: c.u.ID}
	if c.action == ActionRewind {
		done, err := c.r.opt.Service.Rewind(ctx, c.a.ID, api.RewindRequest{ID: c.ref.ProposalID, By: cmp.Or(c.u.Name, c.u.ID), Source: platform})
		if err != nil {
			c.tell(ctx, "Not rewound: "+err.Error())
			return
		}
		view.Plan = done
	}
	if err := c.ep.a.Update(ctx, c.asked.Channel, c.asked.Message, FormatRewind(view, platform)); err != nil {
		c.r.log.Error("bots: showing a rewind's end", "platform", platform, "agent", c.a.ID, "err", err)
	}
}

// RewindView is what a rewind's question shows: what the rewind would change (Plan, a
// dry run) and who asked, and once clicked, who did (Closer): Plan is then the rewind
// done (Plan.Done), or else it was cancelled.
type RewindView struct {
	Plan   *api.Rewind
	By     string // who asked: a user id of the platform
	Closer string // who clicked: a user id of the platform; "" while it asks
}

// FormatRewind builds a rewind's message for platform: while it asks, what putting the
// workspace back would change (the rendering proposal previews use) and its buttons;
// once done, what it changed and how to undo it; once cancelled, that.
func FormatRewind(v RewindView, platform string) Message {
	p := v.Plan
	switch {
	case p.Done:
		return Message{Summary: fmt.Sprintf("Rewound %s %s", p.Agent, rewindWhat(p)), Parts: []Part{
			{Spans: []Span{{Text: "⏪ Rewound ", Bold: true}, {Text: p.Agent, Bold: true}, {Text: " " + rewindWhat(p) + " by "}, Mention(platform, v.Closer), {Text: ": " + p.Restore.Summary}}},
			{Spans: []Span{{Text: "Undo with:"}}}, {Code: fmt.Sprintf("/agent rewind %s --undo %s", p.Agent, p.Undo)}}}
	case v.Closer != "":
		return Message{Summary: fmt.Sprintf("Rewind of %s cancelled", p.Agent), Parts: []Part{
			{Spans: []Span{{Text: "⏪ Not rewound: ", Bold: true}, {Text: p.Agent + "'s rewind was cancelled by "}, Mention(platform, v.Closer), {Text: "."}}}}}
	}
	m := Message{Summary: fmt.Sprintf("Rewind %s: %s", p.Agent, rewindWhat(p))}
	head := []Span{{Text: "⏪ Rewind ", Bold: true}, {Text: p.Agent, Bold: true}, {Text: ": put the workspace back as it was " + rewindWhat(p)}}
	if v.By != "" {
		head = append(head, Span{Text: " (asked by "}, Mention(platform, v.By), Span{Text: ")"})
	}
	m.Parts = append(m.Parts, Part{Spans: head})
	if p.Restore.Notice != "" {
		m.Parts = append(m.Parts, Part{Spans: []Span{{Text: "Notice: " + p.Restore.Notice}}})
	}
	m.Parts = append(m.Parts, previewParts(p.Restore.Preview, "Would change: ")...)
	ref := Ref{AgentID: p.AgentID, ProposalID: p.Restore.ID}
	m.Buttons = []Button{{Action: ActionRewind, Label: "Rewind", Ref: ref, Style: "danger"}, {Action: ActionRewindCancel, Label: "Cancel", Ref: ref}}
	m.Parts = append(m.Parts, Part{Spans: []Span{{Text: "An approver's Rewind puts the files back; the agent is told on its next step, and the rewind can be undone."}}})
	return m
}

// rewindWhat names what p rewinds to: "before step 3 of run r-1", "before run r-1",
// "before rewind rw-2".
func rewindWhat(p *api.Rewind) string {
	switch p.Restore.Kind {
	case "rewind":
		return "before rewind " + p.Restore.ID
	case "run":
		return "before run " + p.Restore.ID
	}
	if p.Restore.RunID == "" {
		return fmt.Sprintf("before step %d", p.Step)
	}
	return fmt.Sprintf("before step %d of run %s", p.Step, p.Restore.RunID)
}
