package bots

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentd/agentd/api"
)

// Incoming is a chat message the adapter passes on.
type Incoming struct {
	Platform string
	Where    Where
	User     User
	// Text is the message with the mention of the bot removed.
	Text string
	// ID is the message's id (Slack: its ts; Discord: its snowflake); a run started by it
	// is threaded under it. A redelivered message has the same ID.
	ID string
	// ReplyTo is the id of the message this one explicitly replies to (Discord's
	// message_reference); "" when the platform gives none.
	ReplyTo string
	// ReplyThread, for a message at a channel's top level that replies to another, is the
	// thread started from that other message, on a platform where a thread takes its
	// starting message's id (Discord); "" otherwise. A reply to the message a bound
	// thread hangs off (the bot's "Task: …") is read as said in that thread.
	ReplyThread string
	// Mention is true when the message's text mentions the bot (a reply's ping, which
	// names the replied-to author nowhere in the text, is no mention).
	Mention bool
	// Edited marks an edit of a message sent before (ID is that message's). No edit is
	// read: the person is told to send a new message.
	Edited bool
}

// Click is a button press on a proposal message.
type Click struct {
	Platform string
	Where    Where
	User     User
	Action   string
	Ref      Ref
	// Trigger lets the adapter open a dialog in answer (Slack: trigger_id).
	Trigger string
	// ID is the platform's id of this click (Slack: the action's action_ts with the
	// message; Discord: the interaction id); a redelivered click has the same ID.
	ID string
	// Message is the id of the message whose button was clicked, in the form the
	// adapter's Post returns ids (the relay checks it shows the proposal the button names).
	Message string
}

func (r *Relay) endpoint(platform string) *endpoint { return r.state.endpoint(platform) }

// OnMessage handles a chat message: a reply in a bound thread steers that run, and so
// does a reply at the channel's top level to the message the thread hangs off; a mention
// or a direct message elsewhere starts a new run in a new thread.
func (r *Relay) OnMessage(ctx context.Context, in Incoming) {
	ep := r.endpoint(in.Platform)
	if ep == nil || in.User.Bot || !ep.rules.Serves(in.Where) {
		return
	}
	// Chatter is never remembered as delivered (firstDelivery): only what the relay acts
	// on, so a flood of chatter cannot push a decision's delivery out of memory.
	thread := in.Where.Thread
	if thread == "" {
		thread = in.ReplyThread
	}
	if thread != "" {
		b, t, err := r.threadBindings(ctx, in.Platform, in.Where.Channel, thread)
		if err != nil {
			r.log.Error("bots: reading chat binding", "err", err)
			return
		}
		if in.Edited {
			r.editNotRead(ctx, ep, in, b != nil || t != nil)
			return
		}
		if in.Where.Thread == "" {
			// Answering the thread's starting message is speaking in the thread: bound to
			// what the thread shows by order, like a message there that names none.
			in.ReplyTo = ""
		}
		switch {
		case b != nil:
			if r.firstDelivery(ctx, ep, in) {
				r.reply(ctx, ep, in, b)
			}
			return
		case t != nil:
			if r.firstDelivery(ctx, ep, in) {
				r.teamReply(ctx, ep, in, t)
			}
			return
		}
	}
	if in.Edited {
		r.editNotRead(ctx, ep, in, false)
		return
	}
	if !in.Mention && !in.Where.DM || !r.firstDelivery(ctx, ep, in) {
		return // chatter in a served channel, or a redelivery
	}
	anchor := in.ID
	if in.Where.Thread != "" {
		anchor = in.Where.Thread
	}
	r.start(ctx, ep, in.Where, in.User, in.Text, anchor)
}

// editsNotRead answers an edit of a message the relay reads.
const editsNotRead = "Edits are not read, so no agent saw that change; send a new message instead."

// editNotRead answers in, an edit, with editsNotRead when the message edited is one the
// relay reads (in a bound thread, a direct message, a mention of the bot) and its writer
// may act there: an agent acts on what a message said when it came, and an edit
// (a decision turned around, a task rewritten) would otherwise look read. Once per
// message, however often it is edited; chatter's edits are left alone like chatter.
func (r *Relay) editNotRead(ctx context.Context, ep *endpoint, in Incoming, bound bool) {
	if !bound && !in.Mention && !in.Where.DM || in.ID == "" || !r.mayCommand(ctx, ep, in.Where, in.User) {
		return
	}
	if r.firstTime(ctx, ep, in.Where, in.User, "edit", in.ID, "edit\x00"+in.Where.Channel+"\x00"+in.ID) {
		r.ephemeral(ctx, ep, in.Where, in.User, editsNotRead)
	}
}

// threadBindings returns what thread is bound to: a run (b) or a team run (t); both nil
// when neither.
func (r *Relay) threadBindings(ctx context.Context, platform, channel, thread string) (b *Binding, t *TeamBinding, err error) {
	if b, err = r.opt.Bindings.BindingByThread(ctx, platform, channel, thread); b != nil || err != nil {
		return b, nil, err
	}
	if tb, ok := r.opt.Bindings.(teamBindings); ok {
		t, err = tb.TeamBindingByThread(ctx, platform, channel, thread)
	}
	return nil, t, err
}

// refuse tells a person they may not do that here, and logs it.
func (r *Relay) refuse(ctx context.Context, ep *endpoint, w Where, u User, agent, what string) {
	r.log.Warn("bots: refused a non-approver", "platform", ep.a.Platform(), "user", u.ID, "channel", w.Channel, "agent", agent, "action", what)
	if err := ep.a.Ephemeral(ctx, w.Channel, w.Thread, u.ID, notApproverText); err != nil {
		r.log.Error("bots: ephemeral note", "err", err)
	}
}

// allowed checks the approvers for agent (a name or "") in w.
func (r *Relay) allowed(ctx context.Context, ep *endpoint, w Where, agent string, u User) bool {
	// A helper ("deployer/fetcher") is decided on by its top agent's approvers.
	agent, _, _ = strings.Cut(agent, "/")
	ok, err := ep.rules.Allowed(ctx, ep.a, w.Channel, agent, u.ID)
	if err != nil {
		r.log.Error("bots: checking approvers", "platform", ep.a.Platform(), "err", err)
	}
	return ok
}

func (r *Relay) ephemeral(ctx context.Context, ep *endpoint, w Where, u User, text string) {
	if err := ep.a.Ephemeral(ctx, w.Channel, w.Thread, u.ID, text); err != nil {
		r.log.Error("bots: ephemeral note", "platform", ep.a.Platform(), "err", err)
	}
}

// start creates an agent for task and binds its run to a new thread under anchor.
func (r *Relay) start(ctx context.Context, ep *endpoint, w Where, u User, task, anchor string) (*api.Agent, error) {
	if !r.allowed(ctx, ep, w, "", u) {
		r.refuse(ctx, ep, w, u, "", "start")
		return nil, errNotApprover
	}
	task = strings.TrimSpace(task)
	if task == "" {
		r.ephemeral(ctx, ep, w, u, "Tell me the task, like: @agentd summarize the notes in my workspace")
		return nil, errors.New("empty task")
	}
	if api.IsHelp(task) { // asking how this works is no task for an agent
		r.ephemeral(ctx, ep, w, u, startHelp)
		return nil, errors.New("help asked")
	}
	if note := tooLong("The task", task); note != "" {
		r.ephemeral(ctx, ep, w, u, note)
		return nil, errors.New(note)
	}
	thread, err := ep.a.StartThread(ctx, w.Channel, anchor, "Task: "+cut(task, 200))
	if err != nil {
		r.log.Error("bots: starting a thread", "platform", ep.a.Platform(), "err", err)
		return nil, err
	}
	w.Thread = thread
	// Created idle and bound before its run starts, so its first event finds the thread.
	no := false
	a, err := r.opt.Service.CreateAgent(ctx, api.CreateAgentRequest{Task: task, Start: &no})
	if err != nil {
		r.ephemeral(ctx, ep, w, u, "Could not create the agent: "+err.Error())
		return nil, err
	}
	b := Binding{Platform: ep.a.Platform(), Team: w.Team, Channel: w.Channel, Thread: thread, AgentID: a.ID, CreatedBy: u.ID}
	if err := r.bind(ctx, b); err != nil {
		return nil, err
	}
	if a, err = r.opt.Service.Task(ctx, a.ID, task); err != nil {
		r.ephemeral(ctx, ep, w, u, "Could not start the run: "+err.Error())
		return nil, err
	}
	b.RunID = a.RunID
	r.bind(ctx, b)
	r.rememberChat(ctx, ep.a.Platform(), a.ID, u, task)
	r.log.Info("bots: run started from chat", "platform", ep.a.Platform(), "agent", a.ID, "run", a.RunID, "user", u.ID, "channel", w.Channel)
	ep.a.Post(ctx, w.Channel, thread, FormatNote(fmt.Sprintf("🤖 Agent %s is on it. Its proposals appear in this thread.", a.Name)))
	return a, nil
}

var errNotApprover = errors.New("not an approver")

const notApproverText = "You are not an approver here, so this changed nothing. Ask an approver, or an admin to add you to the bot's approvers."

func (r *Relay) bind(ctx context.Context, b Binding) error {
	if err := r.opt.Bindings.Bind(ctx, b); err != nil {
		r.log.Error("bots: storing chat binding", "err", err)
		return err
	}
	r.state.bind(&b)
	return nil
}

// reply handles a message in a bound thread the way agentctl handles typed input: an
// answer to a pending question, a decision (y, y -N, n, or feedback), or a follow-up task.
func (r *Relay) reply(ctx context.Context, ep *endpoint, in Incoming, b *Binding) {
	a, err := r.opt.Service.Agent(ctx, b.AgentID)
	if err != nil {
		r.ephemeral(ctx, ep, in.Where, in.User, "This thread's agent is gone: "+err.Error())
		return
	}
	if !r.allowed(ctx, ep, in.Where, a.Name, in.User) {
		r.refuse(ctx, ep, in.Where, in.User, a.Name, "reply")
		return
	}
	text := strings.TrimSpace(in.Text)
	if text == "" {
		return
	}
	// The thread's helpers post here too: the reply goes to the one it names, or to the
	// one whose proposal is at the bottom of the thread.
	a, text, named := r.replyTarget(ctx, a, text, func(w *api.Agent) bool { return r.shownBefore(ctx, ep, in, w) })
	if named && a.ParentID != "" && waitingID(a) == "" {
		r.ephemeral(ctx, ep, in.Where, in.User, fmt.Sprintf("Helper %s has nothing waiting for you: it is %s.", a.Name, a.State))
		return
	}
	if text == "" {
		r.ephemeral(ctx, ep, in.Where, in.User, fmt.Sprintf("Say what to tell %s after its name, like: %s: y", a.Name, a.Name[strings.LastIndexByte(a.Name, '/')+1:]))
		return
	}
	// Help first: it decides nothing, whichever proposal the reply was written for.
	if note := helpNote(a, text); note != "" {
		r.ephemeral(ctx, ep, in.Where, in.User, note)
		return
	}
	if waitingID(a) != "" {
		if note := r.bindReply(ctx, ep, in, a); note != "" {
			r.log.Info("bots: refused a reply written for another proposal", "platform", ep.a.Platform(), "agent", a.ID, "user", in.User.ID, "message", in.ID)
			r.ephemeral(ctx, ep, in.Where, in.User, note)
			return
		}
	}
	switch {
	case a.Question != nil:
		if err = errorIf(tooLong("The answer", text)); err != nil {
			break
		}
		err = r.opt.Service.Answer(ctx, a.ID, api.AnswerRequest{ProposalID: a.Question.ProposalID, Text: text, By: in.User.ID, ByName: in.User.Name})
		if err == nil {
			r.answered(ctx, ep, a.ID, a.Question, in.User)
		}
	case a.Pending != nil:
		err = r.decideReply(ctx, ep, in, a, text)
	case a.State == api.StateIdle || a.State == api.StateFailed:
		err = r.followUp(ctx, ep, in, a, b, text)
	default:
		err = fmt.Errorf("agent %s is %s; wait for its next proposal, or /agent pause %s", a.Name, a.State, a.Name)
	}
	if err != nil {
		r.ephemeral(ctx, ep, in.Where, in.User, err.Error())
	}
	r.rememberChat(ctx, ep.a.Platform(), a.ID, in.User, text)
}

// decideReply decides a's pending proposal, the one in was bound to, as text says.
func (r *Relay) decideReply(ctx context.Context, ep *endpoint, in Incoming, a *api.Agent, text string) error {
	req, err := api.ParseDecision(text)
	if err != nil {
		return err
	}
	if req.Kind == api.DecisionFeedback {
		if err := errorIf(tooLong("Feedback", req.Feedback)); err != nil {
			return err
		}
	}
	if r.expired(a.Pending) {
		return errors.New(r.expiredText())
	}
	req.ProposalID, req.By, req.ByName, req.Source, req.Hash = a.Pending.ID, in.User.ID, in.User.Name, ep.a.Platform(), a.Pending.Hash
	_, err = r.opt.Service.Decide(ctx, a.ID, req)
	return err
}

// followUp gives an idle (or failed) agent text as its next task. A bare decision (y, n)
// or a reply to one of its proposals is not a task: it came after its proposal was
// decided.
func (r *Relay) followUp(ctx context.Context, ep *endpoint, in Incoming, a *api.Agent, b *Binding, text string) error {
	if d, err := api.ParseDecision(text); err == nil && d.Kind != api.DecisionFeedback {
		return fmt.Errorf("nothing waits for a decision: agent %s is %s, so that decided nothing. Give it a new task in words", a.Name, a.State)
	}
	if in.ReplyTo != "" {
		m, err := r.opt.Bindings.MessageAt(ctx, ep.a.Platform(), in.Where.Channel, in.ReplyTo)
		if err != nil {
			return fmt.Errorf("could not check which message that reply answers, so it started nothing; send it again: %w", err)
		}
		if m != nil {
			return fmt.Errorf("that reply answers a proposal that is decided already, so it started nothing; agent %s is %s. Send the new task as a message of its own", a.Name, a.State)
		}
	}
	note, err := r.writtenAfterEnd(ctx, ep, in, a.RunID, b)
	if err != nil {
		return err
	}
	if note != "" {
		r.log.Info("bots: a message written before its run's end started nothing", "platform", ep.a.Platform(), "agent", a.ID, "run", a.RunID, "message", in.ID)
		return errors.New(note)
	}
	if step := r.lastShownAfter(ctx, ep, in, a); step > 0 {
		return fmt.Errorf("that message was written before agent %s's proposal at step %d, which is decided now, so it started nothing; send the new task again if you still want it", a.Name, step)
	}
	if err := errorIf(tooLong("The task", text)); err != nil {
		return err
	}
	na, err := r.opt.Service.Task(ctx, a.ID, text)
	if err != nil {
		return err
	}
	r.state.unmarkPosted(endKey(a.RunID)) // the ended run's slot is needed no more
	b.RunID, b.EndPost, b.EndRun = na.RunID, "", ""
	r.bind(ctx, *b)
	ep.a.Post(ctx, b.Channel, b.Thread, FormatNote("🤖 New task taken: "+cut(text, 200)))
	return nil
}

// errorIf is note as an error; nil for "".
func errorIf(note string) error {
	if note == "" {
		return nil
	}
	return errors.New(note)
}

// answered marks a question's message as answered.
func (r *Relay) answered(ctx context.Context, ep *endpoint, agentID string, q *api.Question, u User) {
	platform := ep.a.Platform()
	// When its message is not stored yet, its post is in flight: postQuestion marks it.
	m, err := r.state.answerEarly(q.ProposalID+"|"+platform, u, func() (*ChatMessage, error) {
		return r.opt.Bindings.Message(ctx, q.ProposalID, platform, "question")
	})
	if err != nil || m == nil {
		return
	}
	ep.a.Update(ctx, m.Channel, m.Message, answeredQuestion(q, u, platform))
}

// answeredQuestion is a question's message once u answered it.
func answeredQuestion(q *api.Question, u User, platform string) Message {
	msg := FormatQuestion(q, "")
	msg.Parts[len(msg.Parts)-1] = Part{Spans: []Span{{Text: "✅ Answered by "}, Mention(platform, u.ID)}}
	return msg
}

// OnClick handles a button on a proposal message. Only approvers decide; the daemon lets
// the first valid decision win and refuses the rest, whose clickers get its reason.
func (r *Relay) OnClick(ctx context.Context, c Click) {
	ep := r.endpoint(c.Platform)
	if ep == nil || c.User.Bot || !ep.rules.Serves(c.Where) || !r.firstClick(ctx, ep, c) {
		return
	}
	if !r.approverFirst(ctx, ep, c.Where, c.User, c.Action, c.Ref) {
		return
	}
	if !r.clickedShows(ctx, ep, c) || !r.countShown(ctx, ep, c) {
		return
	}
	a, ok := r.clickTarget(ctx, ep, c.Where, c.User, c.Action, c.Ref)
	if !ok {
		return
	}
	c.Ref.AgentID = a.ID
	if p := a.Pending; p != nil && p.ID == c.Ref.ProposalID && r.expired(p) {
		r.ephemeral(ctx, ep, c.Where, c.User, r.expiredText())
		return
	}
	req := api.DecideRequest{ProposalID: c.Ref.ProposalID, By: c.User.ID, ByName: c.User.Name, Source: c.Platform, Hash: c.Ref.Hash}
	switch c.Action {
	case ActionApprove:
		req.Kind, req.Count = api.DecisionApprove, 1
	case ActionApproveN:
		req.Kind, req.Count = api.DecisionApprove, max(c.Ref.Count, 1)
	case ActionDeny:
		req.Kind = api.DecisionDeny
	case ActionFeedback:
		if a.Pending == nil || a.Pending.ID != c.Ref.ProposalID {
			r.ephemeral(ctx, ep, c.Where, c.User, "This proposal takes no decision now.")
			return
		}
		prompt := fmt.Sprintf("Step %d: %s", a.Pending.Step, a.Pending.Command)
		if err := ep.a.OpenFeedback(ctx, c.Trigger, c.Ref, prompt); err != nil {
			r.log.Error("bots: opening feedback dialog", "platform", c.Platform, "err", err)
			r.ephemeral(ctx, ep, c.Where, c.User, "Could not open the feedback dialog; reply in the thread with your feedback instead.")
		}
		return
	default:
		return
	}
	if _, err := r.opt.Service.Decide(ctx, c.Ref.AgentID, req); err != nil {
		r.ephemeral(ctx, ep, c.Where, c.User, err.Error())
	}
}

// clickTarget resolves the agent a click or dialog in w decides for (clickAgent) and
// checks that u may decide for it and that the button shows what waits. Refusals are
// told to u; ok is false for them.
func (r *Relay) clickTarget(ctx context.Context, ep *endpoint, w Where, u User, action string, ref Ref) (a *api.Agent, ok bool) {
	platform := ep.a.Platform()
	id, note, audit := r.clickAgent(ctx, platform, w, ref)
	if note != "" {
		if audit {
			bound := ""
			if b, err := r.opt.Bindings.BindingByThread(ctx, platform, w.Channel, w.Thread); err == nil && b != nil {
				bound = b.AgentID
			}
			r.audit(ctx, AuditEvent{Platform: platform, Channel: w.Channel, Thread: w.Thread, User: u.ID, Action: action,
				AgentID: ref.AgentID, ThreadAgent: bound, ProposalID: ref.ProposalID, Reason: "the button names another agent than its thread's"})
		}
		r.ephemeral(ctx, ep, w, u, note)
		return nil, false
	}
	a, err := r.opt.Service.Agent(ctx, id)
	if err != nil {
		r.ephemeral(ctx, ep, w, u, "This proposal's agent is gone.")
		return nil, false
	}
	if !r.allowed(ctx, ep, w, a.Name, u) {
		r.refuse(ctx, ep, w, u, a.Name, action)
		return nil, false
	}
	if hashMismatch(a, ref) {
		r.audit(ctx, AuditEvent{Platform: platform, Channel: w.Channel, Thread: w.Thread, User: u.ID, Action: action,
			AgentID: a.ID, ThreadAgent: a.ID, ProposalID: ref.ProposalID, Reason: "the button's hash is not the waiting proposal's"})
		r.ephemeral(ctx, ep, w, u, fmt.Sprintf("This button was made for another command than the one waiting at step %d (%s), so it decided nothing. Decide on the proposal as it is shown now.", a.Pending.Step, a.Pending.Command))
		return nil, false
	}
	return a, true
}

// OnFeedback handles a submitted feedback dialog.
func (r *Relay) OnFeedback(ctx context.Context, platform string, w Where, u User, ref Ref, text string) {
	ep := r.endpoint(platform)
	// Where comes back from the dialog (Slack: its private_metadata): checked like a click's.
	if ep == nil || u.Bot || !ep.rules.Serves(w) || !r.approverFirst(ctx, ep, w, u, ActionFeedback, ref) {
		return
	}
	if note := tooLong("Feedback", text); note != "" {
		r.ephemeral(ctx, ep, w, u, note)
		return
	}
	a, ok := r.clickTarget(ctx, ep, w, u, ActionFeedback, ref)
	if !ok {
		return
	}
	_, err := r.opt.Service.Decide(ctx, a.ID, api.DecideRequest{
		ProposalID: ref.ProposalID, Kind: api.DecisionFeedback, Feedback: text, By: u.ID, ByName: u.Name, Source: platform, Hash: ref.Hash})
	if err != nil {
		r.ephemeral(ctx, ep, w, u, err.Error())
	}
}
