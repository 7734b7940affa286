package bots

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentd/agentd/api"
)

// poster posts the daemon's agent events to the threads they belong in, through the
// outbox: proposals with their buttons (and their files), decisions, results,
// questions, state notes and ends of runs; and closes what no decision can reach any
// more.
type poster struct{ r *Relay }

// targets returns the adapters and threads an agent's events go to: its own, or for a
// helper its nearest bound parent's, labelled with the helper's name, or for a team's
// role agent its team's, labelled with the role.
func (po *poster) targets(ctx context.Context, agentID string) []target {
	bs, err := po.r.opt.Bindings.ThreadsOf(ctx, agentID)
	if err != nil {
		po.r.log.Error("bots: reading an agent's chat threads", "agent", agentID, "err", err)
	}
	return po.targetsIn(ctx, agentID, bs, nil)
}

// targetsIn returns the targets of bs, the threads agentID's events go to (a parent's
// when agentID is a helper: a, or the daemon, names it), else its team's.
func (po *poster) targetsIn(ctx context.Context, agentID string, bs []*Binding, a *api.Agent) []target {
	eps := po.r.eps.all()
	if len(bs) == 0 {
		return po.r.teams.targets(ctx, agentID, a, eps)
	}
	label := ""
	if bs[0].AgentID != agentID {
		if a == nil {
			a, _ = po.r.opt.Service.Agent(ctx, agentID)
		}
		if a != nil {
			label = a.Name
		}
	}
	var out []target
	for _, b := range bs {
		if ep, ok := eps[b.Platform]; ok {
			out = append(out, target{ep: ep, b: b, label: label})
		}
	}
	return out
}

type target struct {
	ep    *endpoint
	b     *Binding
	label string // the helper's name when the thread is its parent's
}

// post queues a post for t's thread in the outbox: in order with the thread's other
// posts, retried while the platform is down.
func (po *poster) post(t target, what string, do func(ctx context.Context) error) {
	po.r.out.add(t.ep.a.Platform()+"\x00"+t.b.Channel+"\x00"+t.b.Thread, what, do)
}

// say queues msg, labelled for t, as a new message in t's thread.
func (po *poster) say(t target, what string, msg Message) {
	po.post(t, what, func(ctx context.Context) error {
		_, err := t.ep.a.Post(ctx, t.b.Channel, t.b.Thread, labelled(msg, t.label))
		return err
	})
}

// upload queues content as a file named name in t's thread, with comment. With posted,
// only once *posted holds: the message the file belongs to went up earlier in the queue,
// so a retried upload never posts that message again.
func (po *poster) upload(t target, what string, posted *bool, name, content, comment string) {
	po.post(t, what, func(ctx context.Context) error {
		if posted != nil && !*posted {
			return nil
		}
		return t.ep.a.PostFile(ctx, t.b.Channel, t.b.Thread, name, content, comment)
	})
}

// resync posts what waits for a person in bound threads but was never posted there (the
// daemon restarted, or chat was down when it was asked): the bound agents' first, then
// their helpers'.
func (po *poster) resync(ctx context.Context) {
	bs, err := po.r.opt.Bindings.Bindings(ctx)
	if err != nil {
		po.r.log.Error("bots: reading chat bindings", "err", err)
	}
	seen := map[string]bool{}
	for _, b := range bs {
		if a, err := po.r.opt.Service.Agent(ctx, b.AgentID); err == nil && !seen[a.ID] {
			seen[a.ID] = true
			po.postWaiting(ctx, a)
		}
	}
	all, err := po.r.opt.Service.Agents(ctx)
	if err != nil {
		return
	}
	for i := range all {
		if all[i].ParentID != "" {
			po.postWaiting(ctx, &all[i])
		}
	}
}

// postWaiting posts what a waits for: its proposal or its question.
func (po *poster) postWaiting(ctx context.Context, a *api.Agent) {
	if a.Pending != nil {
		po.postProposal(ctx, a.Pending)
	}
	if a.Question != nil {
		po.postQuestion(ctx, a.ID, a.Question)
	}
}

// handle posts one event to the agent's threads.
func (po *poster) handle(ctx context.Context, ev api.Event) {
	switch ev.Type {
	case api.EventProposal:
		if ev.Proposal != nil {
			po.postProposal(ctx, ev.Proposal)
		}
	case api.EventDecision:
		if ev.Decision != nil && ev.Decided != nil {
			po.decided(ctx, ev.AgentID, ev.Decision, ev.Decided)
		}
	case api.EventResult:
		if ev.Episode != nil {
			po.r.board.forget(ev.Episode.ProposalID)
			po.postResult(ctx, ev.AgentID, ev.Episode)
		}
	case api.EventQuestion:
		if ev.Question != nil {
			po.postQuestion(ctx, ev.AgentID, ev.Question)
		}
	case api.EventFinish:
		po.closeOpen(ctx, ev.AgentID, runEndedText)
		if _, ok := po.r.teams.roleOf(ctx, ev.AgentID, ev.Agent); !ok { // a role's finish is its team turn, posted as such
			po.endNote(ctx, ev.AgentID, runOf(ev), "🏁 "+finishText(ev))
		}
	case api.EventState:
		if ev.Agent != nil && !ev.Unchanged { // the daemon says when it shows the state as it was
			po.stateChanged(ctx, ev.Agent)
		}
	case api.EventRemoved:
		po.removed(ctx, ev)
	}
}

// removed closes a removed agent's open proposals and tells its threads, which the
// event names: the store deleted them with the agent. A message the event shows decided,
// or its run ended on, says so: the relay had not shown that yet.
func (po *poster) removed(ctx context.Context, ev api.Event) {
	ts := po.targetsIn(ctx, ev.AgentID, ev.Threads, ev.Agent)
	for _, t := range ts {
		po.post(t, "closing the proposals of "+ev.AgentID, func(ctx context.Context) error {
			return po.closeShown(ctx, t, ev.Messages, removedWhy)
		})
	}
	if _, ok := po.r.teams.roleOf(ctx, ev.AgentID, ev.Agent); !ok { // role agents go when their team ends
		for _, t := range ts {
			po.say(t, "posting a note", FormatNote("🗑 The agent was removed."))
		}
	}
}

// removedWhy is what a removed agent's open message says closed it: the run's end when
// its proposal was superseded, the removal when it still waited for a decision, and
// nothing when it was decided or ran (its message loses its buttons only).
func removedWhy(m *ChatMessage) string {
	switch {
	case m.Proposal.Status == api.ProposalSuperseded:
		return runEndedText
	case m.Proposal.Status.Decidable():
		return "The agent was removed before a decision."
	}
	return ""
}

// runOf is the run an event's agent was on; "" when the event does not say.
func runOf(ev api.Event) string {
	if ev.Agent != nil {
		return ev.Agent.RunID
	}
	return ""
}

func finishText(ev api.Event) string {
	if ev.Message != "" {
		return "Finished: " + ev.Message
	}
	return "Finished."
}

// postProposal posts a proposal with its buttons, once per platform, and records its
// message with the Ref it shows.
func (po *poster) postProposal(ctx context.Context, p *api.Proposal) {
	if p.Command == "ask_user" {
		return // the question is posted instead
	}
	files := proposalFiles(p)
	for _, t := range po.targets(ctx, p.AgentID) {
		platform := t.ep.a.Platform()
		posted := false // set when this post made the message: only then are its files uploaded
		po.post(t, "posting proposal "+p.ID, func(ctx context.Context) error {
			m, err := po.r.opt.Bindings.Message(ctx, p.ID, platform, "proposal")
			if err != nil {
				return err // the store is failing: retried, never posted twice
			}
			if m != nil && p.Status != api.ProposalInterrupted {
				if p.Status.Decidable() {
					po.r.board.messageShown(p.ID, platform, m.Message)
				}
				return nil // posted already
			}
			view := ProposalView{Proposal: p, ApproveN: po.r.opt.ApproveN}
			if m == nil && po.r.expiry.over(p) {
				view.Closed = po.r.expiry.note()
			}
			msg := labelled(FormatProposal(view, platform), t.label)
			if m != nil {
				// Asked again (its preview went stale and was run again): the message shows
				// the proposal as it is asked now, and its files go up again.
				err = t.ep.a.Update(ctx, m.Channel, m.Message, msg)
			} else {
				m = &ChatMessage{ProposalID: p.ID, Platform: platform, Kind: "proposal", Channel: t.b.Channel}
				m.Message, err = t.ep.a.Post(ctx, t.b.Channel, t.b.Thread, msg)
			}
			if err != nil {
				return err
			}
			posted = true
			if p.Status.Decidable() {
				po.r.board.messageShown(p.ID, platform, m.Message)
			}
			m.Ref, m.Closed, m.Proposal = p.Ref(), !p.Status.Decidable(), p
			if err := po.r.opt.Bindings.SetMessage(ctx, *m); err != nil {
				if _, aerr := po.r.opt.Service.Agent(ctx, p.AgentID); errors.Is(aerr, api.ErrNotFound) {
					// Removed while the post was in flight: the removal found no row of this
					// message to close (the store keeps none of a removed agent), so it is closed here.
					return po.closeShown(ctx, t, []*ChatMessage{m}, removedWhy)
				}
				po.r.log.Error("bots: recording proposal message", "proposal", p.ID, "err", err)
			}
			return nil
		})
		for _, f := range files {
			po.upload(t, "uploading the "+f.what+" of proposal "+p.ID, &posted, f.name, f.content, f.comment)
		}
	}
	if p.Status.Decidable() {
		po.r.board.markPosted(p.ID)
		po.armExpiry(ctx, p)
	}
}

// proposalFile is a file uploaded after a proposal's message: what FormatProposal cut
// from it, whole.
type proposalFile struct{ what, name, content, comment string }

// proposalFiles are the files a proposal's message says are attached: its arguments
// when they were cut (ArgsFile), then its diff when it was (PreviewFile).
func proposalFiles(p *api.Proposal) []proposalFile {
	var out []proposalFile
	if name, args := ArgsFile(p); name != "" {
		out = append(out, proposalFile{"arguments", name, args, fmt.Sprintf("Full arguments of step %d (%s)", p.Step, p.Command)})
	}
	if name, diff := PreviewFile(p); name != "" {
		out = append(out, proposalFile{"diff", name, diff, fmt.Sprintf("Full diff of step %d (%s)", p.Step, p.Command)})
	}
	return out
}

// decided edits the messages of p, the proposal d decided as it was asked, to show the
// decision and who made it, and closes them. Messages the store no longer has (the agent
// was removed meanwhile) are closed by the removal, which shows d too.
func (po *poster) decided(ctx context.Context, agentID string, d *api.Decision, p *api.Proposal) {
	po.r.board.forget(d.ProposalID)
	ts := po.targets(ctx, agentID)
	if len(ts) == 0 {
		return
	}
	grantSource := po.grantSource(ctx, agentID, d) // once, not per thread and retry
	for _, t := range ts {
		platform := t.ep.a.Platform()
		po.post(t, "showing the decision on "+d.ProposalID, func(ctx context.Context) error {
			m, err := po.r.opt.Bindings.Message(ctx, d.ProposalID, platform, "proposal")
			if err != nil || m == nil {
				return err
			}
			view := ProposalView{Proposal: p, Decision: d, GrantSource: grantSource}
			if err := t.ep.a.Update(ctx, m.Channel, m.Message, labelled(FormatProposal(view, platform), t.label)); err != nil {
				return err
			}
			po.closed(ctx, m)
			return nil
		})
	}
}

// closed records that m takes no decision any more; a failure is logged.
func (po *poster) closed(ctx context.Context, m *ChatMessage) {
	if _, err := po.r.opt.Bindings.CloseMessage(ctx, m.ProposalID, m.Platform); err != nil {
		po.r.log.Error("bots: recording a proposal's message closed", "proposal", m.ProposalID, "err", err)
	}
}

// grantLister is the part of the daemon's service that lists an agent's grants; the
// relay's Service need not have it (then grant makers show as text).
type grantLister interface {
	Grants(ctx context.Context, ref string) (*api.GrantList, error)
}

// grantSource is where the grant that made the automatic approval d was made (slack,
// agentctl…); "" when d is no grant's or the grant cannot be read.
func (po *poster) grantSource(ctx context.Context, agentID string, d *api.Decision) string {
	gl, ok := po.r.opt.Service.(grantLister)
	if d.Source != "grant" || d.Grant == "" || !ok {
		return ""
	}
	list, err := gl.Grants(ctx, agentID)
	if err != nil {
		po.r.log.Warn("bots: reading grants to name a grant's maker", "agent", agentID, "err", err)
		return ""
	}
	for _, g := range list.Grants {
		if g.ID == d.Grant {
			return g.Source
		}
	}
	return ""
}

// postResult posts a step's result; a step that changed the workspace says so, with the
// first lines of its diff and the whole diff attached when they are not all of it.
func (po *poster) postResult(ctx context.Context, agentID string, ep *api.Episode) {
	if ep.Outcome != "succeeded" && ep.Outcome != "failed" {
		return // denials and feedback show on the proposal message
	}
	if ep.Command == "ask_user" || ep.Command == "finish" {
		return // the answer is in the thread already; finish has its own message
	}
	change := po.resultChange(ctx, agentID, ep)
	for _, t := range po.targets(ctx, agentID) {
		msg, file := FormatResult(ep, t.ep.a.MaxText())
		msg.Parts = append(msg.Parts, ChangeParts(change)...)
		po.say(t, "posting a result", msg)
		if file != "" {
			po.upload(t, "uploading a result", nil, fmt.Sprintf("step-%d-%s.txt", ep.Step, ep.Command), file, "Output of step "+fmt.Sprint(ep.Step))
		}
		if change == nil {
			continue
		}
		if name, diff := diffFile(change.Preview, fmt.Sprintf("step-%d-%s", ep.Step, ep.Command)); name != "" {
			po.upload(t, "uploading the diff of a result", nil, name, diff, fmt.Sprintf("Full diff of step %d (%s)", ep.Step, ep.Command))
		}
	}
}

// resultChange is what ep's step changed in the workspace; nil when it changed nothing,
// was not checkpointed (a read, checkpoints off) or its change cannot be read.
func (po *poster) resultChange(ctx context.Context, agentID string, ep *api.Episode) *api.StepChange {
	c, err := po.r.opt.Service.Diff(ctx, agentID, api.DiffRequest{Run: ep.RunID, Step: ep.Step})
	if err != nil {
		po.r.log.Debug("bots: no workspace change for a result", "agent", agentID, "step", ep.Step, "err", err)
		return nil
	}
	if c.ID != ep.ProposalID || c.Files == 0 {
		return nil
	}
	return c
}

func (po *poster) postQuestion(ctx context.Context, agentID string, q *api.Question) {
	po.r.board.markPosted(q.ProposalID)
	for _, t := range po.targets(ctx, agentID) {
		platform := t.ep.a.Platform()
		po.r.words.swap(platform, agentID, q.Text) // the answer's context
		po.post(t, "posting a question", func(ctx context.Context) error {
			if m, err := po.r.opt.Bindings.Message(ctx, q.ProposalID, platform, "question"); err != nil || m != nil {
				if m != nil {
					po.r.board.messageShown(q.ProposalID, platform, m.Message)
				}
				return err
			}
			id, err := t.ep.a.Post(ctx, t.b.Channel, t.b.Thread, labelled(FormatQuestion(q, ""), t.label))
			if err != nil {
				return err
			}
			po.r.board.messageShown(q.ProposalID, platform, id)
			u, answered := po.r.board.questionPosted(q.ProposalID+"|"+platform, func() {
				po.r.opt.Bindings.SetMessage(ctx, ChatMessage{ProposalID: q.ProposalID, Platform: platform, Kind: "question", Channel: t.b.Channel, Message: id})
			})
			if answered {
				t.ep.a.Update(ctx, t.b.Channel, id, labelled(answeredQuestion(q, u, platform), t.label))
			}
			return nil
		})
	}
}

// stateChanged tells the thread when the agent pauses or fails on its own.
func (po *poster) stateChanged(ctx context.Context, a *api.Agent) {
	why := a.ShownReason() // an unchecked change waiting for a person is told too
	switch a.State {
	case api.StateIdle:
		po.closeOpen(ctx, a.ID, "The run ended before a decision: "+orDash(why))
	case api.StatePaused:
		po.note(ctx, a.ID, "⏸ Paused: "+orDash(why))
	case api.StateFailed:
		po.endNote(ctx, a.ID, a.RunID, "⚠️ Failed: "+orDash(why))
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// note posts a line in every thread the agent is bound to.
func (po *poster) note(ctx context.Context, agentID, text string) {
	for _, t := range po.targets(ctx, agentID) {
		po.say(t, "posting a note", FormatNote(text))
	}
}

// armExpiry edits p's messages when it expires undecided.
func (po *poster) armExpiry(ctx context.Context, p *api.Proposal) {
	if po.r.opt.Expiry <= 0 {
		return
	}
	left := po.r.opt.Expiry - po.r.opt.Now().Sub(p.CreatedAt)
	po.r.board.armTimer(p.ID, max(left, 0), func() {
		po.r.board.timerFired(p.ID)
		for _, t := range po.targets(context.WithoutCancel(ctx), p.AgentID) {
			po.post(t, "showing expiry of "+p.ID, func(ctx context.Context) error {
				m, err := po.r.opt.Bindings.Message(ctx, p.ID, t.ep.a.Platform(), "proposal")
				if err != nil || m == nil || m.Closed {
					return err
				}
				if po.r.opt.OnExpired != nil {
					po.r.opt.OnExpired(t.ep.a.Platform())
				}
				return t.ep.a.Update(ctx, m.Channel, m.Message, labelled(FormatProposal(ProposalView{Proposal: p, Closed: po.r.expiry.note()}, t.ep.a.Platform()), t.label))
			})
		}
	})
}

// runEndedText closes a proposal's message when its run ended before a decision.
const runEndedText = "The run ended before a decision."

// closeOpen takes the buttons off an agent's undecided proposals, which no decision can
// reach any more (the run was stopped, or moved on to a new task): those whose messages
// the store has open when the thread's earlier posts are done.
func (po *poster) closeOpen(ctx context.Context, agentID, why string) {
	for _, t := range po.targets(ctx, agentID) {
		po.post(t, "closing the proposals of "+agentID, func(ctx context.Context) error {
			open, err := po.r.opt.Bindings.OpenMessages(ctx, agentID)
			if err != nil {
				return err
			}
			return po.closeShown(ctx, t, open, func(*ChatMessage) string { return why })
		})
	}
}

// closeShown edits the messages of open that are on t's platform to show the decision
// their proposal got, else why they take none, and closes them.
func (po *poster) closeShown(ctx context.Context, t target, open []*ChatMessage, why func(*ChatMessage) string) error {
	platform := t.ep.a.Platform()
	for _, m := range open {
		if m.Platform != platform || m.Proposal == nil {
			continue
		}
		po.r.board.forget(m.ProposalID)
		view := ProposalView{Proposal: m.Proposal, Decision: m.Decision, Closed: why(m)}
		if err := t.ep.a.Update(ctx, m.Channel, m.Message, labelled(FormatProposal(view, platform), t.label)); err != nil {
			return err
		}
		po.closed(ctx, m)
	}
	return nil
}

// endNote posts text, the note showing that agentID's run runID ended, to the agent's
// threads, and records the post on the binding of each thread that is the agent's own.
func (po *poster) endNote(ctx context.Context, agentID, runID, text string) {
	for _, t := range po.targets(ctx, agentID) {
		platform := t.ep.a.Platform()
		own := runID != "" && t.label == "" && t.b.AgentID == agentID
		if own {
			po.r.board.markPosted(endKey(runID)) // a reply meanwhile waits for the post (endShown)
		}
		po.post(t, "posting the end of run "+runID, func(ctx context.Context) error {
			id, err := t.ep.a.Post(ctx, t.b.Channel, t.b.Thread, labelled(FormatNote(text), t.label))
			if err != nil || !own {
				return err
			}
			po.recordEnd(ctx, t, runID, id)
			po.r.board.messageShown(endKey(runID), platform, id)
			return nil
		})
	}
}

// recordEnd stores post as the one showing run runID's end on t's binding, read afresh so
// that what else changed on it (its run) is kept.
func (po *poster) recordEnd(ctx context.Context, t target, runID, post string) {
	b, err := po.r.opt.Bindings.BindingByThread(ctx, t.ep.a.Platform(), t.b.Channel, t.b.Thread)
	if err != nil || b == nil {
		po.r.log.Error("bots: reading a binding to record its run's end", "platform", t.ep.a.Platform(), "thread", t.b.Thread, "err", err)
		return
	}
	b.EndPost, b.EndRun = post, runID
	po.r.bind(ctx, *b)
}

// labelled prefixes msg with the helper's name when label is set.
func labelled(msg Message, label string) Message {
	if label == "" {
		return msg
	}
	msg.Summary = "[" + label + "] " + msg.Summary
	msg.Parts = append([]Part{{Spans: []Span{{Text: "🤖 " + label, Bold: true}}}}, msg.Parts...)
	return msg
}
