package bots

import (
	"context"
	"fmt"
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

// waitingMessage returns what a waits on and the kind of its chat message.
func waitingMessage(a *api.Agent) (id, kind string) {
	if a.Question != nil {
		return a.Question.ProposalID, "question"
	}
	return waitingID(a), "proposal"
}

// bindReply checks that in, a reply in a's thread, was written for what a waits on now:
// the message it replies to is that proposal's (or question's), or, when it replies to
// none of those, that message was shown before the reply was written. It returns "" when
// so, else the note telling the person what waits instead.
func (c *check) bindReply(ctx context.Context, a *api.Agent) string {
	id, kind := waitingMessage(a)
	platform := c.ep.a.Platform()
	if c.in.ReplyTo != "" {
		m, err := c.r.opt.Bindings.MessageAt(ctx, platform, c.in.Where.Channel, c.in.ReplyTo)
		if err != nil {
			c.r.log.Error("bots: finding the message a reply answers", "platform", platform, "err", err)
			return "Could not check which proposal that reply answers, so it decided nothing; send it again."
		}
		if m != nil {
			if m.ProposalID == id {
				return ""
			}
			return c.staleNote(ctx, a, c.stepOf(ctx, a, m.ProposalID))
		}
	}
	if c.in.ID == "" {
		return "That message came without an id to tell which proposal it answers, so it decided nothing; use the proposal's buttons."
	}
	shown, err := c.shownAs(ctx, id, kind)
	if err != nil {
		c.r.log.Error("bots: reading a proposal's message", "platform", platform, "err", err)
		return "Could not check which proposal that reply answers, so it decided nothing; send it again."
	}
	// Shown strictly before the reply: an id that does not parse is before nothing. A
	// reply to a message the relay has no record of counts only when that message is
	// older than what waits: a newer one is another proposal (another thread's, or one
	// whose post is still in flight) or something said after this one.
	if shown != "" && c.ep.a.Before(shown, c.in.ID) {
		// (A reply to the waiting proposal's own message, not yet recorded when looked up
		// above, is the reply it should be.)
		if c.in.ReplyTo != "" && c.in.ReplyTo != shown && !c.ep.a.Before(c.in.ReplyTo, shown) {
			return "That reply answers a message newer than the proposal waiting, so it decided nothing; reply to the proposal itself, or in the thread without replying to a message."
		}
		return ""
	}
	if shown != "" && !c.ep.a.Before(c.in.ID, shown) {
		return "That message's id cannot be ordered against the proposal's, so it decided nothing; use the proposal's buttons."
	}
	return c.staleNote(ctx, a, c.stepShownBefore(ctx, a))
}

// shownBefore reports whether what a waits on was shown on in's platform before in was
// written, as far as is known now (no post in flight is waited for).
func (c *check) shownBefore(ctx context.Context, a *api.Agent) bool {
	id, kind := waitingMessage(a)
	msg, _ := c.shownMessage(ctx, id, kind)
	return msg != "" && c.in.ID != "" && c.ep.a.Before(msg, c.in.ID)
}

// shownMessage is the id of the message showing proposal (or question) id on c's
// platform, as the relay posted it or the store has it; "" when neither knows one.
func (c *check) shownMessage(ctx context.Context, id, kind string) (string, error) {
	platform := c.ep.a.Platform()
	if msg := c.r.board.shownNow(id, platform); msg != "" {
		return msg, nil
	}
	m, err := c.r.opt.Bindings.Message(ctx, id, platform, kind)
	if m != nil {
		return m.Message, nil
	}
	return "", err
}

// shownRef is what a typed reply names of p (api.Proposal.Ref): p as its message on c's
// platform shows it, else as the daemon has it now (no message records it).
func (c *check) shownRef(ctx context.Context, p *api.Proposal) string {
	if m, err := c.r.opt.Bindings.Message(ctx, p.ID, c.ep.a.Platform(), "proposal"); err == nil && m != nil && m.Ref != "" {
		return m.Ref
	}
	return p.Ref()
}

// shownWait bounds how long a reply waits for the message of a proposal whose post is in
// flight: a platform can deliver a reply to a message before the call that posted it
// returns its id.
const shownWait = 5 * time.Second

// shownAs is the id of the message showing proposal (or question) id on c's platform; ""
// when it is not shown. A post in flight is waited for, up to shownWait.
func (c *check) shownAs(ctx context.Context, id, kind string) (string, error) {
	msg, err := c.shownMessage(ctx, id, kind)
	if msg != "" || err != nil || !c.r.board.posting(id) {
		return msg, err // shown, unreadable, or not posted nor being posted
	}
	msg, _ = c.r.board.awaitShown(ctx, id, c.ep.a.Platform(), shownWait)
	return msg, nil
}

// maxStaleLookback bounds how many of an agent's proposals are searched for the one a
// late reply was written for (only to name its step in the note).
const maxStaleLookback = 8

// stepShownBefore is the step of a's latest proposal shown in chat before in was
// written; 0 when none is found.
func (c *check) stepShownBefore(ctx context.Context, a *api.Agent) int {
	ps, err := c.r.opt.Service.Proposals(ctx, a.ID)
	if err != nil {
		return 0
	}
	waiting, _ := waitingMessage(a)
	for i := len(ps) - 1; i >= 0 && i >= len(ps)-maxStaleLookback; i-- {
		if msg := c.messageOf(ctx, &ps[i]); ps[i].ID != waiting && msg != "" && c.ep.a.Before(msg, c.in.ID) {
			return ps[i].Step
		}
	}
	return 0
}

// lastShownAfter is the step of a's last proposal when it was shown on in's platform
// after in was written (or in's id does not order): a message written while that
// proposal waited, delivered late, is not a new task. 0 when in is newer.
func (c *check) lastShownAfter(ctx context.Context, a *api.Agent) int {
	ps, err := c.r.opt.Service.Proposals(ctx, a.ID)
	if err != nil || len(ps) == 0 || c.in.ID == "" {
		return 0
	}
	last := ps[len(ps)-1]
	if msg := c.messageOf(ctx, &last); msg == "" || c.ep.a.Before(msg, c.in.ID) {
		return 0
	}
	return max(last.Step, 1)
}

// messageOf is the message showing p (its question, for ask_user) on in's platform; ""
// when none is recorded.
func (c *check) messageOf(ctx context.Context, p *api.Proposal) string {
	kind := "proposal"
	if p.Command == "ask_user" {
		kind = "question"
	}
	msg, _ := c.shownMessage(ctx, p.ID, kind)
	return msg
}

// stepOf is the step of a's proposal id; 0 when it is not a's.
func (c *check) stepOf(ctx context.Context, a *api.Agent, id string) int {
	if p := findProposal(ctx, c.r.opt.Service, a.ID, id); p != nil {
		return p.Step
	}
	return 0
}

// staleNote tells the person that a reply was for an earlier proposal (step, when known)
// and what a waits on now.
func (c *check) staleNote(ctx context.Context, a *api.Agent, step int) string {
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

// tooLong is the note for a text (what: "feedback", "the task", "the answer") over the
// daemon's cap; "" when it fits.
func tooLong(what, text string) string {
	if len(text) <= api.MaxTextBytes {
		return ""
	}
	return fmt.Sprintf("%s is %d bytes; the limit is %d — shorten it (nothing was sent).", what, len(text), api.MaxTextBytes)
}
