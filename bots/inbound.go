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

// OnMessage handles a chat message: a reply in a bound thread steers that run, and so
// does a reply at the channel's top level to the message the thread hangs off; a mention
// or a direct message elsewhere starts a new run in a new thread.
func (r *Relay) OnMessage(ctx context.Context, in Incoming) {
	ep := r.eps.get(in.Platform)
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
				r.teams.teamReply(ctx, ep, in, t)
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
	t, err = r.opt.Bindings.TeamBindingByThread(ctx, platform, channel, thread)
	return nil, t, err
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
	return nil
}

// reply handles a message in a bound thread the way agentctl handles typed input, once
// it passed replyGuards.
func (r *Relay) reply(ctx context.Context, ep *endpoint, in Incoming, b *Binding) {
	c := &check{r: r, ep: ep, w: in.Where, u: in.User, action: "reply", in: &in, b: b, text: in.Text}
	if c.passes(ctx, replyGuards) {
		c.act(ctx)
	}
}

// act does what a reply that passed its guards says: an answer to a pending question, a
// decision (y, y -N, n, or feedback), or, for an idle agent of a run's thread, a
// follow-up task.
func (c *check) act(ctx context.Context) {
	a, text, in := c.a, c.text, *c.in
	var err error
	switch {
	case a.Question != nil:
		if err = errorIf(tooLong("The answer", text)); err != nil {
			break
		}
		err = c.r.opt.Service.Answer(ctx, a.ID, api.AnswerRequest{ProposalID: a.Question.ProposalID, Text: text, By: in.User.ID, ByName: in.User.Name})
		if err == nil {
			c.answered(ctx, a.ID, a.Question, in.User)
		}
	case a.Pending != nil:
		err = c.decideReply(ctx, a, text)
	case c.b == nil: // a team run's role agent takes no task from its thread
	case a.State == api.StateIdle || a.State == api.StateFailed:
		err = c.followUp(ctx, a, c.b, text)
	default:
		err = fmt.Errorf("agent %s is %s; wait for its next proposal, or /agent pause %s", a.Name, a.State, a.Name)
	}
	if err != nil {
		c.tell(ctx, err.Error())
	}
	c.r.rememberChat(ctx, c.ep.a.Platform(), a.ID, in.User, text)
}

// decideReply decides a's pending proposal, the one in was bound to, as text says.
func (c *check) decideReply(ctx context.Context, a *api.Agent, text string) error {
	req, err := api.ParseDecision(text)
	if err != nil {
		return err
	}
	if req.Kind == api.DecisionFeedback {
		if err := errorIf(tooLong("Feedback", req.Feedback)); err != nil {
			return err
		}
	}
	if c.r.expiry.over(a.Pending) {
		return errors.New(c.r.expiry.note())
	}
	req.ProposalID, req.By, req.ByName, req.Source, req.Hash = a.Pending.ID, c.in.User.ID, c.in.User.Name, c.ep.a.Platform(), c.shownRef(ctx, a.Pending)
	_, err = c.r.opt.Service.Decide(ctx, a.ID, req)
	return err
}

// followUp gives an idle (or failed) agent text as its next task. A bare decision (y, n)
// or a reply to one of its proposals is not a task: it came after its proposal was
// decided.
func (c *check) followUp(ctx context.Context, a *api.Agent, b *Binding, text string) error {
	if d, err := api.ParseDecision(text); err == nil && d.Kind != api.DecisionFeedback {
		return fmt.Errorf("nothing waits for a decision: agent %s is %s, so that decided nothing. Give it a new task in words", a.Name, a.State)
	}
	if c.in.ReplyTo != "" {
		m, err := c.r.opt.Bindings.MessageAt(ctx, c.ep.a.Platform(), c.in.Where.Channel, c.in.ReplyTo)
		if err != nil {
			return fmt.Errorf("could not check which message that reply answers, so it started nothing; send it again: %w", err)
		}
		if m != nil {
			return fmt.Errorf("that reply answers a proposal that is decided already, so it started nothing; agent %s is %s. Send the new task as a message of its own", a.Name, a.State)
		}
	}
	note, err := c.writtenAfterEnd(ctx, a.RunID, b)
	if err != nil {
		return err
	}
	if note != "" {
		c.r.log.Info("bots: a message written before its run's end started nothing", "platform", c.ep.a.Platform(), "agent", a.ID, "run", a.RunID, "message", c.in.ID)
		return errors.New(note)
	}
	if step := c.lastShownAfter(ctx, a); step > 0 {
		return fmt.Errorf("that message was written before agent %s's proposal at step %d, which is decided now, so it started nothing; send the new task again if you still want it", a.Name, step)
	}
	if err := errorIf(tooLong("The task", text)); err != nil {
		return err
	}
	na, err := c.r.opt.Service.Task(ctx, a.ID, text)
	if err != nil {
		return err
	}
	c.r.board.forget(endKey(a.RunID)) // the ended run's slot is needed no more
	b.RunID, b.EndPost, b.EndRun = na.RunID, "", ""
	c.r.bind(ctx, *b)
	c.ep.a.Post(ctx, b.Channel, b.Thread, FormatNote("🤖 New task taken: "+cut(text, 200)))
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
func (c *check) answered(ctx context.Context, agentID string, q *api.Question, u User) {
	platform := c.ep.a.Platform()
	// When its message is not stored yet, its post is in flight: postQuestion marks it.
	m, err := c.r.board.answerEarly(q.ProposalID+"|"+platform, u, func() (*ChatMessage, error) {
		return c.r.opt.Bindings.Message(ctx, q.ProposalID, platform, "question")
	})
	if err != nil || m == nil {
		return
	}
	c.ep.a.Update(ctx, m.Channel, m.Message, answeredQuestion(q, u, platform))
}

// answeredQuestion is a question's message once u answered it.
func answeredQuestion(q *api.Question, u User, platform string) Message {
	msg := FormatQuestion(q, "")
	msg.Parts[len(msg.Parts)-1] = Part{Spans: []Span{{Text: "✅ Answered by "}, Mention(platform, u.ID)}}
	return msg
}
