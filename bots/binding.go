package bots

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentd/agentd/api"
)

// A decision from chat names the proposal it answers. A button carries it (Ref, with the
// hash of what was shown); a typed reply is bound by the platform's own ordering: to the
// message it replies to when it names one, else to what was shown in the thread before
// it was written. A reply or click bound to anything but what the agent waits on now
// decides nothing, and the person is told what waits.

// AuditEvent is a chat action refused because it named an agent or a proposal its thread
// does not show: a button from another thread, or a forged one. The daemon keeps it in
// its audit log (Options.Audit).
type AuditEvent struct {
	Platform string `json:"platform"`
	Channel  string `json:"channel"`
	Thread   string `json:"thread,omitempty"`
	User     string `json:"user"`
	Action   string `json:"action"`
	// AgentID is the agent the action named; ThreadAgent the one the thread is bound to
	// ("" when it is bound to none).
	AgentID     string `json:"agent_id,omitempty"`
	ThreadAgent string `json:"thread_agent,omitempty"`
	ProposalID  string `json:"proposal_id,omitempty"`
	Reason      string `json:"reason"`
	// Unaudited is how many of this non-approver's refused actions before this one, in
	// the last minute, were not audited (each is audited at most once a minute).
	Unaudited int `json:"unaudited,omitempty"`
}

// AuditKind is the audit log's kind for an AuditEvent.
const AuditKind = "chat_refused"

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

// Platforms deliver some events more than once: Slack retries an event it thinks was not
// acknowledged (racing the first delivery, or after a restart), Discord replays events
// after a resume. A message or click is acted on once: the relay records each it handles
// in the store (Bindings.FirstDelivery), in a scope of its platform — the actions of people
// who may act there (mayCommand) apart from everyone else's, so that someone who may
// decide nothing cannot, by sending thousands of messages or clicks that are refused,
// make the relay forget an approver's `y -3` and apply its redelivery again.

// DeliveriesKept is how many handled messages and clicks are remembered per platform
// and scope: enough for the minutes a platform keeps retrying, few enough to stay small.
const DeliveriesKept = 4096

// firstDelivery reports whether in is handled for the first time; a redelivery (same
// platform, channel and id) is dropped.
func (r *Relay) firstDelivery(ctx context.Context, ep *endpoint, in Incoming) bool {
	return in.ID == "" || r.firstTime(ctx, ep, in.Where, in.User, "message", in.ID, "message\x00"+in.Where.Channel+"\x00"+in.ID)
}

// firstClick is firstDelivery for a click.
func (r *Relay) firstClick(ctx context.Context, ep *endpoint, c Click) bool {
	return c.ID == "" || r.firstTime(ctx, ep, c.Where, c.User, "click", c.ID, "click\x00"+c.ID)
}

// firstTime records key, u's action in w (what: "message", "click"; id: the platform's),
// and reports whether it is new. An action that cannot be recorded is not acted on: the
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

// waitingMessage returns what a waits on and the kind of its chat message.
func waitingMessage(a *api.Agent) (id, kind string) {
	if a.Question != nil {
		return a.Question.ProposalID, "question"
	}
	if a.Pending != nil {
		return a.Pending.ID, "proposal"
	}
	return "", ""
}

// bindReply checks that in, a reply in a's thread, was written for what a waits on now:
// the message it replies to is that proposal's (or question's), or, when it replies to
// none of those, that message was shown before the reply was written. It returns "" when
// so, else the note telling the person what waits instead.
func (r *Relay) bindReply(ctx context.Context, ep *endpoint, in Incoming, a *api.Agent) string {
	id, kind := waitingMessage(a)
	platform := ep.a.Platform()
	if in.ReplyTo != "" {
		m, err := r.opt.Bindings.MessageAt(ctx, platform, in.Where.Channel, in.ReplyTo)
		if err != nil {
			r.log.Error("bots: finding the message a reply answers", "platform", platform, "err", err)
			return "Could not check which proposal that reply answers, so it decided nothing; send it again."
		}
		if m != nil {
			if m.ProposalID == id {
				return ""
			}
			return r.staleNote(ctx, a, r.stepOf(ctx, a, m.ProposalID))
		}
	}
	if in.ID == "" {
		return "That message came without an id to tell which proposal it answers, so it decided nothing; use the proposal's buttons."
	}
	shown, err := r.shownAs(ctx, id, kind, platform)
	if err != nil {
		r.log.Error("bots: reading a proposal's message", "platform", platform, "err", err)
		return "Could not check which proposal that reply answers, so it decided nothing; send it again."
	}
	// Shown strictly before the reply: an id that does not parse is before nothing. A
	// reply to a message the relay has no record of counts only when that message is
	// older than what waits: a newer one is another proposal (another thread's, or one
	// whose post is still in flight) or something said after this one.
	if shown != "" && ep.a.Before(shown, in.ID) {
		// (A reply to the waiting proposal's own message, not yet recorded when looked up
		// above, is the reply it should be.)
		if in.ReplyTo != "" && in.ReplyTo != shown && !ep.a.Before(in.ReplyTo, shown) {
			return "That reply answers a message newer than the proposal waiting, so it decided nothing; reply to the proposal itself, or in the thread without replying to a message."
		}
		return ""
	}
	if shown != "" && !ep.a.Before(in.ID, shown) {
		return "That message's id cannot be ordered against the proposal's, so it decided nothing; use the proposal's buttons."
	}
	return r.staleNote(ctx, a, r.stepShownBefore(ctx, ep, in, a))
}

// shownBefore reports whether what a waits on was shown on in's platform before in was
// written, as far as is known now (no post in flight is waited for).
func (r *Relay) shownBefore(ctx context.Context, ep *endpoint, in Incoming, a *api.Agent) bool {
	id, kind := waitingMessage(a)
	msg, _, _ := r.state.whenShown(id, ep.a.Platform())
	if msg == "" {
		if m, err := r.opt.Bindings.Message(ctx, id, ep.a.Platform(), kind); err == nil && m != nil {
			msg = m.Message
		}
	}
	return msg != "" && in.ID != "" && ep.a.Before(msg, in.ID)
}

// shownWait bounds how long a reply waits for the message of a proposal whose post is in
// flight: a platform can deliver a reply to a message before the call that posted it
// returns its id.
const shownWait = 5 * time.Second

// shownAs is the id of the message showing proposal (or question) id on platform; ""
// when it is not shown. A post in flight is waited for, up to shownWait.
func (r *Relay) shownAs(ctx context.Context, id, kind, platform string) (string, error) {
	msg, done, read := r.state.whenShown(id, platform)
	if msg != "" {
		return msg, nil
	}
	m, err := r.opt.Bindings.Message(ctx, id, platform, kind)
	if err != nil || m != nil {
		if m != nil {
			return m.Message, nil
		}
		return "", err
	}
	if r.state.postOrder(id) == 0 {
		return "", nil // not posted, nor being posted
	}
	t := time.NewTimer(shownWait)
	defer t.Stop()
	select {
	case <-done:
		return read(), nil
	case <-t.C:
	case <-ctx.Done():
	}
	return "", nil
}

// maxStaleLookback bounds how many of an agent's proposals are searched for the one a
// late reply was written for (only to name its step in the note).
const maxStaleLookback = 8

// stepShownBefore is the step of a's latest proposal shown in chat before in was
// written; 0 when none is found.
func (r *Relay) stepShownBefore(ctx context.Context, ep *endpoint, in Incoming, a *api.Agent) int {
	ps, err := r.opt.Service.Proposals(ctx, a.ID)
	if err != nil {
		return 0
	}
	waiting, _ := waitingMessage(a)
	for i := len(ps) - 1; i >= 0 && i >= len(ps)-maxStaleLookback; i-- {
		if ps[i].ID == waiting {
			continue
		}
		kind := "proposal"
		if ps[i].Command == "ask_user" {
			kind = "question"
		}
		m, err := r.opt.Bindings.Message(ctx, ps[i].ID, ep.a.Platform(), kind)
		if err == nil && m != nil && ep.a.Before(m.Message, in.ID) {
			return ps[i].Step
		}
	}
	return 0
}

// lastShownAfter is the step of a's last proposal when it was shown on in's platform
// after in was written (or in's id does not order): a message written while that
// proposal waited, delivered late, is not a new task. 0 when in is newer.
func (r *Relay) lastShownAfter(ctx context.Context, ep *endpoint, in Incoming, a *api.Agent) int {
	ps, err := r.opt.Service.Proposals(ctx, a.ID)
	if err != nil || len(ps) == 0 || in.ID == "" {
		return 0
	}
	last := ps[len(ps)-1]
	kind := "proposal"
	if last.Command == "ask_user" {
		kind = "question"
	}
	m, err := r.opt.Bindings.Message(ctx, last.ID, ep.a.Platform(), kind)
	if err != nil || m == nil || ep.a.Before(m.Message, in.ID) {
		return 0
	}
	return max(last.Step, 1)
}

// stepOf is the step of a's proposal id; 0 when it is not a's.
func (r *Relay) stepOf(ctx context.Context, a *api.Agent, id string) int {
	if p := r.proposal(ctx, a.ID, id); p != nil {
		return p.Step
	}
	return 0
}

// staleNote tells the person that a reply was for an earlier proposal (step, when known)
// and what a waits on now.
func (r *Relay) staleNote(ctx context.Context, a *api.Agent, step int) string {
	earlier := "an earlier proposal"
	if step > 0 {
		earlier = fmt.Sprintf("an earlier proposal (step %d)", step)
	}
	who := "the agent"
	if a.ParentID != "" {
		who = "helper " + a.Name
	}
	now := "its question"
	switch {
	case a.Question != nil:
		now = "its question: " + cut(a.Question.Text, 200)
	case a.Pending != nil:
		now = fmt.Sprintf("step %d: %s", a.Pending.Step, a.Pending.Command)
	}
	return fmt.Sprintf("That reply was for %s, so it decided nothing; %s now waits on %s — answer that one.", earlier, who, now)
}

// clickAgent is the agent a click or feedback dialog in w decides for: the thread's
// agent, a helper of it, or a role agent of the thread's team run — never simply the one
// the button names. A button naming any other agent is refused (note) and, when audit
// is set, audited.
func (r *Relay) clickAgent(ctx context.Context, platform string, w Where, ref Ref) (agentID, note string, audit bool) {
	const elsewhere = "This button is not for this thread's agent, so it decided nothing. Decide on the proposal in its own thread."
	if w.Thread == "" {
		return "", "This button is in no agent's thread, so it decided nothing.", ref.AgentID != ""
	}
	b, err := r.opt.Bindings.BindingByThread(ctx, platform, w.Channel, w.Thread)
	if err != nil {
		r.log.Error("bots: reading chat binding", "err", err)
		return "", "Could not read this thread's agent, so the click decided nothing; try again.", false
	}
	if b != nil {
		switch {
		case ref.AgentID == "":
			id, waits := r.waiterIn(ctx, b.AgentID, ref.ProposalID)
			if !waits && !r.threadsProposal(ctx, append([]string{b.AgentID}, agentIDs(r.helpersOf(ctx, b.AgentID))...), ref.ProposalID) {
				return "", elsewhere, true
			}
			return id, "", false
		case ref.AgentID == b.AgentID || r.isHelperOf(ctx, ref.AgentID, b.AgentID):
			return ref.AgentID, "", false
		}
		return "", elsewhere, true
	}
	roles, ok := r.teamAgents(ctx, platform, w)
	switch {
	case !ok:
		return "", "This proposal's agent is gone.", ref.AgentID != ""
	case ref.AgentID == "":
		if !r.threadsProposal(ctx, roles, ref.ProposalID) {
			return "", elsewhere, true
		}
		return r.teamAgentFor(ctx, platform, w, ref.ProposalID), "", false
	case slices.Contains(roles, ref.AgentID):
		return ref.AgentID, "", false
	}
	return "", elsewhere, true
}

// clickedShows checks that the message clicked shows the proposal its button names, as
// far as the relay recorded it; a button whose value was forged or copied onto another
// proposal's message is refused and audited. A message the relay has no record of (a post
// in flight) is left to the other checks.
func (r *Relay) clickedShows(ctx context.Context, ep *endpoint, c Click) bool {
	if c.Message == "" {
		return true
	}
	platform := ep.a.Platform()
	m, err := r.opt.Bindings.MessageAt(ctx, platform, c.Where.Channel, c.Message)
	if err != nil || m == nil || m.ProposalID == c.Ref.ProposalID {
		return true
	}
	ev := AuditEvent{Platform: platform, Channel: c.Where.Channel, Thread: c.Where.Thread, User: c.User.ID, Action: c.Action,
		AgentID: c.Ref.AgentID, ProposalID: c.Ref.ProposalID, Reason: "the button names another proposal than the message it is on"}
	// A Discord button names no agent: the row goes under the thread's, so it is found.
	if b, err := r.opt.Bindings.BindingByThread(ctx, platform, c.Where.Channel, c.Where.Thread); err == nil && b != nil {
		ev.ThreadAgent = b.AgentID
	}
	r.audit(ctx, ev)
	r.ephemeral(ctx, ep, c.Where, c.User, "This button names another proposal than the one its message shows, so it decided nothing. Decide on the proposal as it is shown.")
	return false
}

// countShown checks that an Approve ×N click carries the N the relay shows on that
// button (Options.ApproveN): a forged value must not approve a thousand steps. An older
// button made under a larger N is refused too, with a note saying what to do.
func (r *Relay) countShown(ctx context.Context, ep *endpoint, c Click) bool {
	if c.Action != ActionApproveN || r.opt.ApproveN >= 2 && c.Ref.Count >= 2 && c.Ref.Count <= r.opt.ApproveN {
		return true
	}
	r.audit(ctx, AuditEvent{Platform: ep.a.Platform(), Channel: c.Where.Channel, Thread: c.Where.Thread, User: c.User.ID, Action: c.Action,
		AgentID: c.Ref.AgentID, ProposalID: c.Ref.ProposalID, Reason: fmt.Sprintf("the button approves %d steps, not the %d shown", c.Ref.Count, r.opt.ApproveN)})
	r.ephemeral(ctx, ep, c.Where, c.User, fmt.Sprintf("This button approves %d steps, which is not what agentd shows (×%d), so it decided nothing. Use the proposal's buttons as shown now, or reply y -N.", c.Ref.Count, r.opt.ApproveN))
	return false
}

// threadsProposal reports whether proposal id was made by one of agents (a thread's),
// for a button that names the proposal alone: one naming another thread's proposal is
// refused and audited like one naming another agent.
func (r *Relay) threadsProposal(ctx context.Context, agents []string, id string) bool {
	for _, a := range agents {
		if r.proposal(ctx, a, id) != nil {
			return true
		}
	}
	return false
}

func agentIDs(as []*api.Agent) []string {
	ids := make([]string, len(as))
	for i, a := range as {
		ids[i] = a.ID
	}
	return ids
}

// waiterIn is the agent of bound's thread (bound or one of its helpers) that waits on
// proposalID, for buttons that name the proposal alone, and true; bound and false when
// none does.
func (r *Relay) waiterIn(ctx context.Context, bound, proposalID string) (string, bool) {
	a, err := r.opt.Service.Agent(ctx, bound)
	switch {
	case err != nil:
		return bound, false
	case waitingID(a) == proposalID:
		return bound, true
	case !r.state.knowsHelpersOf(bound):
		return bound, false
	}
	for _, h := range r.helpersOf(ctx, bound) {
		if waitingID(h) == proposalID {
			return h.ID, true
		}
	}
	return bound, false
}

// isHelperOf reports whether agent id is a helper of parent, at any depth.
func (r *Relay) isHelperOf(ctx context.Context, id, parent string) bool {
	for range maxHelperHops {
		a, err := r.opt.Service.Agent(ctx, id)
		if err != nil || a.ParentID == "" {
			return false
		}
		if a.ParentID == parent {
			return true
		}
		id = a.ParentID
	}
	return false
}

// teamAgents returns the role agents of the team run bound to w's thread; ok is false
// when the thread is bound to no team run.
func (r *Relay) teamAgents(ctx context.Context, platform string, w Where) (ids []string, ok bool) {
	tb, isTeams := r.opt.Bindings.(teamBindings)
	teams := r.teamSvc()
	if !isTeams || teams == nil {
		return nil, false
	}
	b, err := tb.TeamBindingByThread(ctx, platform, w.Channel, w.Thread)
	if err != nil || b == nil {
		return nil, false
	}
	run, err := teams.Team(ctx, b.TeamRunID)
	if err != nil {
		return nil, true
	}
	for _, id := range run.Agents {
		ids = append(ids, id)
	}
	return ids, true
}

// hashMismatch reports whether ref names a's pending proposal with a hash that is not
// the proposal's: the button was made for a different command than the one waiting.
func hashMismatch(a *api.Agent, ref Ref) bool {
	p := a.Pending
	return p != nil && p.ID == ref.ProposalID && ref.Hash != "" && !strings.HasPrefix(p.Hash, ref.Hash)
}

// tooLong is the note for a text (what: "feedback", "the task", "the answer") over the
// daemon's cap; "" when it fits.
func tooLong(what, text string) string {
	if len(text) <= api.MaxTextBytes {
		return ""
	}
	return fmt.Sprintf("%s is %d bytes; the limit is %d — shorten it (nothing was sent).", what, len(text), api.MaxTextBytes)
}
