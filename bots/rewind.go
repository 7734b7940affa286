package bots

import (
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
	for _, t := range r.posts.targets(ctx, a.ID) {
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
		po.upload(t, "uploading the diff of a rewind of "+plan.Agent, &posted, name, diff, "Full diff of the rewind "+rewindWhat(plan))
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
	// The buttons name the workspace shown (Rewind.From), which the rewind applies to.
	ref := Ref{AgentID: p.AgentID, ProposalID: p.Restore.ID, Hash: p.From[:min(len(p.From), HashLen)]}
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
