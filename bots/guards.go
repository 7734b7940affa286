package bots

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentd/agentd/api"
)

// The checks a chat action passes before it reaches the daemon, listed once, in the order
// they run: clickGuards for a button (a proposal's or a rewind question's),
// dialogGuards for a submitted feedback dialog, replyGuards for a typed reply in a bound
// thread. A guard that refuses has told the person why (and audited what must be); the
// walk stops there. What passes every guard is the decision (or rewind) the daemon
// gets, and the daemon still refuses a stale or second one.

// check is one chat action on its way through the guards: what they read, and what they
// find on the way (the agent it is for, and for a reply its text for that agent).
type check struct {
	r      *Relay
	ep     *endpoint // nil when no adapter serves the platform
	w      Where
	u      User
	action string
	ref    Ref
	click  *Click    // the button, for a click
	in     *Incoming // the message, for a reply
	b      *Binding  // the thread's binding, for a reply in a run's thread
	team   *TeamBinding
	run    *api.TeamRun // the thread's team run, for a reply in a team's thread
	text   string       // feedback or reply text
	named  bool         // the reply named its helper ("fetcher: y")
	a      *api.Agent
	asked  *ChatMessage // the rewind question clicked, for a rewind click
}

// guard is one named check; pass reports whether the action goes on.
type guard struct {
	name string
	pass func(ctx context.Context, c *check) bool
}

// clickGuards are what a button press passes, in order. A proposal's button and a
// rewind question's (Rewind, Cancel) each pass the guards for their kind: the message
// shows the proposal, or asks the rewind, the button names; the agent is the thread's,
// or the one whose step the rewind button names; a rewind question is answered once.
var clickGuards = []guard{
	{"served_here", served},
	{"first_delivery", firstClickDelivery},
	{"approver_here", approverHere},
	{"message_shows_proposal", messageShowsProposal},
	{"message_asks_rewind", messageAsksRewind},
	{"count_shown", countShown},
	{"thread_agent", threadAgent},
	{"rewind_agent", rewindAgent},
	{"agent_approver", agentApprover},
	{"hash_matches", hashMatches},
	{"not_expired", notExpired},
	{"rewind_unanswered", rewindUnanswered},
}

// dialogGuards are what a submitted feedback dialog passes, in order. Where comes back
// from the dialog (Slack: its private_metadata), so it is checked like a click's; a
// dialog opened before its proposal expired is submitted after it, so expiry is too.
var dialogGuards = []guard{
	{"served_here", served},
	{"approver_here", approverHere},
	{"feedback_fits", feedbackFits},
	{"thread_agent", threadAgent},
	{"agent_approver", agentApprover},
	{"hash_matches", hashMatches},
	{"not_expired", notExpired},
}

// replyGuards are what a typed reply in a bound thread passes, in order, once it is known
// to be no redelivery (OnMessage).
var replyGuards = []guard{
	{"thread_agent_exists", replyAgent},
	{"agent_approver", agentApprover},
	{"says_something", saysSomething},
	{"helper_named_waits", replyHelper},
	{"not_help", notHelp},
	{"written_for_what_waits", writtenForWhatWaits},
}

// teamReplyGuards are what a typed reply in a team run's thread passes, in order, once it
// is known to be no redelivery (OnMessage).
var teamReplyGuards = []guard{
	{"says_something", saysSomething},
	{"team_run_exists", teamRun},
	{"channel_approver", channelApprover},
	{"role_named_waits", replyRole},
	{"not_help", notHelp},
	{"written_for_what_waits", writtenForWhatWaits},
}

// passes runs guards in order and reports whether c passed all of them.
func (c *check) passes(ctx context.Context, guards []guard) bool {
	for _, g := range guards {
		if !g.pass(ctx, c) {
			return false
		}
	}
	return true
}

// OnClick handles a button on a proposal message. Only approvers decide; the daemon lets
// the first valid decision win and refuses the rest, whose clickers get its reason.
func (r *Relay) OnClick(ctx context.Context, cl Click) {
	c := &check{r: r, ep: r.eps.get(cl.Platform), w: cl.Where, u: cl.User, action: cl.Action, ref: cl.Ref, click: &cl}
	if !c.passes(ctx, clickGuards) {
		return
	}
	req := api.DecideRequest{ProposalID: c.ref.ProposalID, By: c.u.ID, ByName: c.u.Name, Source: cl.Platform, Hash: c.ref.Hash}
	switch c.action {
	case ActionRewind, ActionRewindCancel:
		c.answerRewind(ctx)
		return
	case ActionApprove:
		req.Kind, req.Count = api.DecisionApprove, 1
	case ActionApproveN:
		req.Kind, req.Count = api.DecisionApprove, max(c.ref.Count, 1)
	case ActionDeny:
		req.Kind = api.DecisionDeny
	case ActionFeedback:
		c.openFeedback(ctx)
		return
	default:
		return
	}
	if _, err := r.opt.Service.Decide(ctx, c.a.ID, req); err != nil {
		c.tell(ctx, err.Error())
	}
}

// openFeedback opens the feedback dialog for the proposal waiting; its submission comes
// back as OnFeedback.
func (c *check) openFeedback(ctx context.Context) {
	p := c.a.Pending
	if p == nil || p.ID != c.ref.ProposalID {
		c.tell(ctx, "This proposal takes no decision now.")
		return
	}
	if err := c.ep.a.OpenFeedback(ctx, c.click.Trigger, c.ref, fmt.Sprintf("Step %d: %s", p.Step, p.Command)); err != nil {
		c.r.log.Error("bots: opening feedback dialog", "platform", c.ep.a.Platform(), "err", err)
		c.tell(ctx, "Could not open the feedback dialog; reply in the thread with your feedback instead.")
	}
}

// OnFeedback handles a submitted feedback dialog.
func (r *Relay) OnFeedback(ctx context.Context, platform string, w Where, u User, ref Ref, text string) {
	c := &check{r: r, ep: r.eps.get(platform), w: w, u: u, action: ActionFeedback, ref: ref, text: text}
	if !c.passes(ctx, dialogGuards) {
		return
	}
	_, err := r.opt.Service.Decide(ctx, c.a.ID, api.DecideRequest{
		ProposalID: ref.ProposalID, Kind: api.DecisionFeedback, Feedback: text, By: u.ID, ByName: u.Name, Source: platform, Hash: ref.Hash})
	if err != nil {
		c.tell(ctx, err.Error())
	}
}

// served: an adapter serves the platform, the action is a person's, and the bot serves
// the channel. Anything else is ignored without a word.
func served(_ context.Context, c *check) bool {
	return c.ep != nil && !c.u.Bot && c.ep.rules.Serves(c.w)
}

// firstClickDelivery: the click is no redelivery of one handled already (firstTime).
func firstClickDelivery(ctx context.Context, c *check) bool {
	return c.click.ID == "" || c.r.firstTime(ctx, c.ep, c.w, c.u, "click", c.click.ID, "click\x00"+c.click.ID)
}

// approverHere, before anything else about the action is read: u may decide something in
// w (mayCommand). A refusal is audited at most once a minute per person (strangers.go).
func approverHere(ctx context.Context, c *check) bool {
	if c.r.mayCommand(ctx, c.ep, c.w, c.u) {
		return true
	}
	platform := c.ep.a.Platform()
	if n, audit := c.r.strangers.allow(platform, c.u.ID, c.r.opt.Now()); audit {
		c.audit(ctx, c.ref.AgentID, "", "not an approver here", n)
	} else {
		c.r.log.Debug("bots: a non-approver's refused action not audited again this minute", "platform", platform, "user", c.u.ID, "unaudited", n)
	}
	return c.unless(ctx, notApproverText)
}

// messageShowsProposal: the message clicked shows the proposal its button names, as far
// as the relay recorded it; a button whose value was forged or copied onto another
// proposal's message is refused and audited. A message the relay has no record of (a
// post in flight) is left to the guards after it.
func messageShowsProposal(ctx context.Context, c *check) bool {
	if c.click.Message == "" || c.rewinding() {
		return true
	}
	m, err := c.r.opt.Bindings.MessageAt(ctx, c.ep.a.Platform(), c.w.Channel, c.click.Message)
	if err != nil || m == nil || m.ProposalID == c.ref.ProposalID {
		return true
	}
	// A Discord button names no agent: the audit row goes under the thread's agent.
	c.audit(ctx, c.ref.AgentID, c.threadAgentID(ctx), "the button names another proposal than the message it is on", 0)
	return c.unless(ctx, "This button names another proposal than the one its message shows, so it decided nothing. Decide on the proposal as it is shown.")
}

// countShown: an Approve ×N click carries the N the relay shows on that button
// (Options.ApproveN): a forged value must not approve a thousand steps. An older button
// made under a larger N is refused too, with a note saying what to do.
func countShown(ctx context.Context, c *check) bool {
	n := c.r.opt.ApproveN
	if c.action != ActionApproveN || n >= 2 && c.ref.Count >= 2 && c.ref.Count <= n {
		return true
	}
	c.audit(ctx, c.ref.AgentID, "", fmt.Sprintf("the button approves %d steps, not the %d shown", c.ref.Count, n), 0)
	return c.unless(ctx, fmt.Sprintf("This button approves %d steps, which is not what agentd shows (×%d), so it decided nothing. Use the proposal's buttons as shown now, or reply y -N.", c.ref.Count, n))
}

// threadAgent finds the agent the click or dialog decides for (clickAgent): the thread's
// agent, a helper of it, or a role agent of the thread's team run — never simply the one
// the button names. A button naming any other agent is refused, and audited.
func threadAgent(ctx context.Context, c *check) bool {
	if c.rewinding() {
		return true
	}
	id, note, audit := c.clickAgent(ctx, c.ep.a.Platform(), c.w, c.ref)
	if note != "" {
		if audit {
			c.audit(ctx, c.ref.AgentID, c.threadAgentID(ctx), "the button names another agent than its thread's", 0)
		}
		return c.unless(ctx, note)
	}
	a, err := c.r.opt.Service.Agent(ctx, id)
	if err != nil {
		return c.unless(ctx, "This proposal's agent is gone.")
	}
	c.a, c.ref.AgentID = a, a.ID
	return true
}

// agentApprover: u may decide for the agent found (its own approvers, else the channel's).
func agentApprover(ctx context.Context, c *check) bool {
	if c.r.allowed(ctx, c.ep, c.w, c.a.Name, c.u) {
		return true
	}
	c.r.refuse(ctx, c.ep, c.w, c.u, c.a.Name, c.action)
	return false
}

// hashMatches: a button naming the waiting proposal was made for the command that waits
// (its hash is a prefix of the proposal's); one made for another is refused and audited.
// A rewind button's hash names a workspace, which the daemon's Rewind checks.
func hashMatches(ctx context.Context, c *check) bool {
	if c.rewinding() || !hashMismatch(c.a, c.ref) {
		return true
	}
	c.audit(ctx, c.a.ID, c.a.ID, "the button's hash is not the waiting proposal's", 0)
	return c.unless(ctx, fmt.Sprintf("This button was made for the proposal at step %d (%s) as it was shown before: the preview changed since, so it decided nothing. Look again at the proposal as it is shown now and decide on it.", c.a.Pending.Step, c.a.Pending.Command))
}

// hashMismatch reports whether ref names a's pending proposal with a hash that is not
// the proposal's Ref: the button was made for it as shown before its preview changed.
func hashMismatch(a *api.Agent, ref Ref) bool {
	p := a.Pending
	return p != nil && p.ID == ref.ProposalID && ref.Hash != "" && !strings.HasPrefix(p.Ref(), ref.Hash)
}

// notExpired: chat may still decide the proposal the button names (Options.Expiry).
func notExpired(ctx context.Context, c *check) bool {
	if p := c.a.Pending; !c.rewinding() && p != nil && p.ID == c.ref.ProposalID && c.r.expiry.over(p) {
		return c.unless(ctx, c.r.expiry.note())
	}
	return true
}

// rewinding reports whether the click answers a rewind question (Rewind or Cancel).
func (c *check) rewinding() bool {
	return c.action == ActionRewind || c.action == ActionRewindCancel
}

// messageAsksRewind: a rewind button is on a rewind question the relay posted for the
// step the button names; any other is refused and audited.
func messageAsksRewind(ctx context.Context, c *check) bool {
	if !c.rewinding() {
		return true
	}
	m, err := c.r.opt.Bindings.MessageAt(ctx, c.ep.a.Platform(), c.w.Channel, c.click.Message)
	if err != nil {
		return c.unless(ctx, "Could not read which rewind this message asks, so nothing was rewound; try again.")
	}
	if m == nil || m.Kind != rewindKind || m.ProposalID != c.ref.ProposalID {
		c.audit(ctx, c.ref.AgentID, c.threadAgentID(ctx), "the rewind button is not on the rewind question it names", 0)
		return c.unless(ctx, "This button is not on the rewind question it names, so nothing was rewound. Ask again with /agent rewind.")
	}
	c.asked = m
	return true
}

// rewindAgent: a rewind button acts on the agent it names (its step's: the daemon
// refuses a step of another agent), whatever agent the thread shows now; the question
// it is on was asked here (messageAsksRewind). A button naming none is from before
// buttons named it.
func rewindAgent(ctx context.Context, c *check) bool {
	if !c.rewinding() {
		return true
	}
	if c.ref.AgentID == "" {
		return c.unless(ctx, "This rewind button was made before buttons named their agent, so nothing was rewound. Ask again with /agent rewind.")
	}
	a, err := c.r.opt.Service.Agent(ctx, c.ref.AgentID)
	if err != nil {
		return c.unless(ctx, "This rewind's agent is gone.")
	}
	c.a = a
	return true
}

// rewindUnanswered: a rewind question takes one answer, the first click that got this
// far (a double click, or a second approver's, finds it answered); recorded on the
// question's own row in the store (Bindings.Answer), for as long as it is kept.
func rewindUnanswered(ctx context.Context, c *check) bool {
	if !c.rewinding() {
		return true
	}
	first, err := c.r.opt.Bindings.Answer(ctx, c.ep.a.Platform(), c.asked.Channel, c.asked.Message)
	switch {
	case err != nil:
		c.r.log.Error("bots: recording a rewind's answer; not acting on it", "platform", c.ep.a.Platform(), "err", err)
		c.tell(ctx, "I could not record that answer, so nothing was rewound; click again.")
	case !first:
		c.tell(ctx, "This rewind was already answered, so this click did nothing. Ask again with /agent rewind to rewind again.")
	}
	return err == nil && first
}

// answerRewind rewinds (or, for Cancel, does not) once the click passed its guards, and
// shows on the question what came of it. The rewind names the workspace the question
// showed (the button's hash): the daemon applies nothing to a workspace changed since.
func (c *check) answerRewind(ctx context.Context) {
	platform := c.ep.a.Platform()
	view := RewindView{Plan: &api.Rewind{AgentID: c.a.ID, Agent: c.a.Name}, Closer: c.u.ID}
	if c.action == ActionRewind {
		done, err := c.r.opt.Service.Rewind(ctx, c.a.ID, api.RewindRequest{ID: c.ref.ProposalID, Shown: c.ref.Hash, By: cmp.Or(c.u.Name, c.u.ID), Source: platform})
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

// feedbackFits: the dialog's text is within the daemon's cap.
func feedbackFits(ctx context.Context, c *check) bool {
	return c.unless(ctx, tooLong("Feedback", c.text))
}

// replyAgent reads the agent of the reply's thread.
func replyAgent(ctx context.Context, c *check) bool {
	a, err := c.r.opt.Service.Agent(ctx, c.b.AgentID)
	return keep(ctx, c, "agent", &c.a, a, err)
}

// keep sets *into to what a read of the thread's what returned, or tells the person
// that it is gone.
func keep[T any](ctx context.Context, c *check, what string, into *T, v T, err error) bool {
	if err != nil {
		return c.unless(ctx, "This thread's "+what+" is gone: "+err.Error())
	}
	*into = v
	return true
}

// saysSomething: an empty reply is ignored.
func saysSomething(_ context.Context, c *check) bool {
	c.text = strings.TrimSpace(c.text)
	return c.text != ""
}

// replyHelper picks the agent the reply is for (replyTarget): the thread's helpers post
// there too, so a reply goes to the one it names, or to the one whose proposal is at the
// bottom of the thread. A helper named must wait for something, and be told something.
func replyHelper(ctx context.Context, c *check) bool {
	c.a, c.text, c.named = c.replyTarget(ctx, c.a, c.text, func(w *api.Agent) bool { return c.shownBefore(ctx, w) })
	a := c.a
	if c.named && a.ParentID != "" && waitingID(a) == "" {
		return c.unless(ctx, fmt.Sprintf("Helper %s has nothing waiting for you: it is %s.", a.Name, a.State))
	}
	if c.text == "" {
		return c.unless(ctx, fmt.Sprintf("Say what to tell %s after its name, like: %s: y", a.Name, a.Name[strings.LastIndexByte(a.Name, '/')+1:]))
	}
	return true
}

// teamRun reads the team run of the reply's thread.
func teamRun(ctx context.Context, c *check) bool {
	teams := c.r.teams.engine
	if teams == nil {
		return false
	}
	run, err := teams.Team(ctx, c.team.TeamRunID)
	return keep(ctx, c, "team run", &c.run, run, err)
}

// channelApprover: u may decide for team runs here; they are the channel's approvers'.
func channelApprover(ctx context.Context, c *check) bool {
	if c.r.allowed(ctx, c.ep, c.w, "", c.u) {
		return true
	}
	c.r.refuse(ctx, c.ep, c.w, c.u, c.run.ID, c.action)
	return false
}

// replyRole picks the role agent a reply in a team's thread is for: the one it names
// ("ROLE: text"), which must wait for something, else the one whose proposal or question
// was posted last among those waiting. Something must wait, and be told something.
func replyRole(ctx context.Context, c *check) bool {
	agents := c.r.teams.roleAgents(ctx, c.run)
	if role, after, ok := strings.Cut(c.text, ":"); ok {
		if id, named := c.run.Agents[strings.TrimSpace(role)]; named {
			c.text = strings.TrimSpace(after)
			for _, a := range agents {
				if a.ID == id {
					c.a = a
				}
			}
			if c.a == nil || waitingID(c.a) == "" {
				return c.unless(ctx, fmt.Sprintf("Role %s has nothing waiting for you.", strings.TrimSpace(role)))
			}
		}
	}
	if c.a == nil {
		c.a = c.bottomWaiting(ctx, agents, nil)
	}
	if c.a == nil {
		msg := fmt.Sprintf("Nothing in team run %s waits for you now; it is %s.", c.run.ID, c.run.Status)
		if c.run.Status != api.TeamRunning {
			msg += " " + orDash(c.run.Reason)
		}
		return c.unless(ctx, msg)
	}
	if c.text == "" {
		return c.unless(ctx, "Say what to tell the role after its name, like: ROLE: y")
	}
	return true
}

// notHelp: a question about how to reply decides nothing, whichever proposal it was
// written for; it gets the help.
func notHelp(ctx context.Context, c *check) bool {
	return c.unless(ctx, helpNote(c.a, c.text))
}

// writtenForWhatWaits: a reply to an agent that waits was written for what it waits on
// now (bindReply); one written for an earlier proposal decides nothing.
func writtenForWhatWaits(ctx context.Context, c *check) bool {
	if waitingID(c.a) == "" {
		return true
	}
	if note := c.bindReply(ctx, c.a); note != "" {
		c.r.log.Info("bots: refused a reply written for another proposal", "platform", c.ep.a.Platform(), "agent", c.a.ID, "user", c.u.ID, "message", c.in.ID)
		return c.unless(ctx, note)
	}
	return true
}

// unless refuses, telling the person note, when note is set; "" passes.
func (c *check) unless(ctx context.Context, note string) bool {
	if note != "" {
		c.tell(ctx, note)
	}
	return note == ""
}

// tell shows text to the person acting, alone.
func (c *check) tell(ctx context.Context, text string) { c.r.ephemeral(ctx, c.ep, c.w, c.u, text) }

// threadAgentID is the agent c's thread is bound to; "" when none (or unreadable).
func (c *check) threadAgentID(ctx context.Context) string {
	if b, err := c.r.opt.Bindings.BindingByThread(ctx, c.ep.a.Platform(), c.w.Channel, c.w.Thread); err == nil && b != nil {
		return b.AgentID
	}
	return ""
}

// audit records c refused for reason: agent is the one the action named, threadAgent the
// thread's, unaudited how many refusals of this person were not audited before it.
func (c *check) audit(ctx context.Context, agent, threadAgent, reason string, unaudited int) {
	c.r.audit(ctx, AuditEvent{Platform: c.ep.a.Platform(), Channel: c.w.Channel, Thread: c.w.Thread, User: c.u.ID, Action: c.action,
		AgentID: agent, ThreadAgent: threadAgent, ProposalID: c.ref.ProposalID, Reason: reason, Unaudited: unaudited})
}

// mayCommand reports whether u is an approver in w: of the channel, or of an agent
// named in the rules (who may control that agent here).
func (r *Relay) mayCommand(ctx context.Context, ep *endpoint, w Where, u User) bool {
	if r.allowed(ctx, ep, w, "", u) {
		return true
	}
	for _, name := range slices.Sorted(maps.Keys(ep.rules.Agents)) {
		if r.allowed(ctx, ep, w, name, u) {
			return true
		}
	}
	return false
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

// refuse tells a person they may not do that here, and logs it.
func (r *Relay) refuse(ctx context.Context, ep *endpoint, w Where, u User, agent, what string) {
	r.log.Warn("bots: refused a non-approver", "platform", ep.a.Platform(), "user", u.ID, "channel", w.Channel, "agent", agent, "action", what)
	r.ephemeral(ctx, ep, w, u, notApproverText)
}

func (r *Relay) ephemeral(ctx context.Context, ep *endpoint, w Where, u User, text string) {
	if err := ep.a.Ephemeral(ctx, w.Channel, w.Thread, u.ID, text); err != nil {
		r.log.Error("bots: ephemeral note", "platform", ep.a.Platform(), "err", err)
	}
}

// audit hands e to Options.Audit; a failure is logged as an error, never dropped.
func (r *Relay) audit(ctx context.Context, e AuditEvent) {
	r.log.Warn("bots: refused a chat action", "platform", e.Platform, "user", e.User, "channel", e.Channel,
		"agent", e.AgentID, "thread_agent", e.ThreadAgent, "proposal", e.ProposalID, "reason", e.Reason, "unaudited", e.Unaudited)
	if r.opt.Audit == nil {
		return
	}
	if err := r.opt.Audit(ctx, e); err != nil {
		r.log.Error("bots: audit line of a refused chat action not written", "platform", e.Platform, "user", e.User, "err", err)
	}
}

// firstTime records key, u's action in w (what: "message", "click"; id: the platform's),
// and reports whether it is new (Bindings.FirstDelivery), in the scope of those who may
// act in w or of everyone else. An action that cannot be recorded is not acted on: the
// person is told to send it again, since acting could apply a redelivery twice.
func (r *Relay) firstTime(ctx context.Context, ep *endpoint, w Where, u User, what, id, key string) bool {
	scope := ""
	if !r.mayCommand(ctx, ep, w, u) {
		scope = "refused"
	}
	first, err := r.opt.Bindings.FirstDelivery(ctx, ep.a.Platform(), scope, key)
	switch {
	case err != nil:
		r.log.Error("bots: recording a chat delivery; not acting on it", "platform", ep.a.Platform(), "what", what, "err", err)
		r.ephemeral(ctx, ep, w, u, "I could not record that "+what+", so it did nothing; send it again.")
	case !first:
		r.log.Debug("bots: dropped a redelivered "+what, "platform", ep.a.Platform(), "channel", w.Channel, "id", id)
	}
	return first
}
