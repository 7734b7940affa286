package bots

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/agentd/agentd/api"
)

// Options configure a Relay.
type Options struct {
	Service  Service
	Bindings Bindings
	Log      *slog.Logger
	// ApproveN is N on the Approve ×N button; below 2 the button is left out.
	ApproveN int
	// Expiry, when positive, closes a proposal to chat decisions this long after it was
	// made; the agent keeps waiting and agentctl can still decide.
	Expiry time.Duration
	// Now is the clock (tests); nil is time.Now.
	Now func() time.Time
	// OnExpired, if set, is told of each platform where a proposal expired undecided
	// (metrics).
	OnExpired func(platform string)
	// OutboxSize bounds the posts waiting for a platform that is down (0: 1,000); a
	// post that fails is retried with RetryBackoff (nil: doubling from 1s to 1m) for up
	// to GiveUp (0: 30 minutes), in order per thread.
	OutboxSize   int
	RetryBackoff func(n int) time.Duration
	GiveUp       time.Duration
	// Audit, if set, records a chat action refused because it named an agent or a
	// proposal its thread does not show (a forged or misplaced button); the daemon writes
	// it to its audit log. An error is logged, never dropped.
	Audit func(ctx context.Context, e AuditEvent) error
}

// Relay carries agent events to chat threads and chat actions to the daemon.
type Relay struct {
	opt      Options
	log      *slog.Logger
	state    *relayState // all it remembers between events; see its locking rule
	ready    chan struct{}
	readyOne sync.Once
	out      *outbox // posts, in order per thread, retried while a platform is down
	// strangers limits how often a non-approver's refusals are audited.
	strangers strangerAudits
	// words is each thread's last message, the context of the next one remembered.
	words lastWords
}

type endpoint struct {
	a     Adapter
	rules Rules
}

// New returns a relay; Add adapters, then Run it.
func New(opt Options) *Relay {
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	return &Relay{
		opt: opt, log: opt.Log, state: newRelayState(), ready: make(chan struct{}),
		out: newOutbox(opt.Log, opt.OutboxSize, opt.GiveUp, opt.RetryBackoff),
	}
}

// Add attaches an adapter and the rules it serves under. Call it before Run.
func (r *Relay) Add(a Adapter, rules Rules) {
	if !r.state.addAdapter(&endpoint{a: a, rules: rules}) {
		panic("bots: two adapters for " + a.Platform())
	}
}

// Ready is closed once the relay follows the agents' events.
func (r *Relay) Ready() <-chan struct{} { return r.ready }

// Run follows every agent's events and posts them to their threads until ctx ends. When
// it falls behind, it resubscribes from the last event it handled, so nothing the daemon
// still holds is lost. Chat errors are logged, never fatal.
func (r *Relay) Run(ctx context.Context) error {
	r.out.start(ctx)
	defer r.out.wait()
	r.state.setRunCtx(ctx)
	defer r.state.waitFollowers() // before the outbox stops: followers post through it
	var since int64
	first := true
	for ctx.Err() == nil {
		ch, cancel, err := r.opt.Service.Subscribe("", since)
		if err != nil {
			r.log.Error("bots: subscribing to agent events", "err", err)
			sleep(ctx, time.Second)
			continue
		}
		if first {
			// After subscribing, so that a proposal made meanwhile is posted once either way.
			r.loadBindings(ctx)
			r.resync(ctx)
			r.loadTeams(ctx)
			first = false
			r.readyOne.Do(func() { close(r.ready) })
		}
	loop:
		for {
			select {
			case <-ctx.Done():
				break loop
			case ev, ok := <-ch:
				if !ok {
					r.log.Warn("bots: event stream closed; resubscribing", "since", since)
					break loop
				}
				since = ev.Seq
				// An event being posted is finished even when the daemon stops meanwhile,
				// so a message that reached the platform is also recorded.
				hctx, done := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
				r.handle(hctx, ev)
				done()
			}
		}
		cancel()
	}
	r.state.stopTimers()
	return nil
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func (r *Relay) loadBindings(ctx context.Context) {
	bs, err := r.opt.Bindings.Bindings(ctx)
	if err != nil {
		r.log.Error("bots: reading chat bindings", "err", err)
		return
	}
	r.state.bind(bs...)
}

// targets returns the adapters and threads an agent's events go to (relayState.targets).
func (r *Relay) targets(agentID string) []target { return r.state.targets(agentID) }

type target struct {
	ep    *endpoint
	b     *Binding
	label string // the helper's name when the thread is its parent's
}

// post queues a post for t's thread in the outbox: in order with the thread's other
// posts, retried while the platform is down.
func (r *Relay) post(t target, what string, do func(ctx context.Context) error) {
	r.out.add(t.ep.a.Platform()+"\x00"+t.b.Channel+"\x00"+t.b.Thread, what, do)
}

// resync posts what waits for a person in bound threads but was never posted there (the
// daemon restarted, or chat was down when it was asked).
func (r *Relay) resync(ctx context.Context) {
	for _, id := range r.state.boundAgents() {
		a, err := r.opt.Service.Agent(ctx, id)
		if err != nil {
			continue
		}
		if a.Pending != nil {
			r.postProposal(ctx, a.Pending)
		}
		if a.Question != nil {
			r.postQuestion(ctx, id, a.Question)
		}
	}
	r.resyncHelpers(ctx)
}

// handle posts one event to the agent's threads.
func (r *Relay) handle(ctx context.Context, ev api.Event) {
	r.learn(ctx, ev)
	switch ev.Type {
	case api.EventProposal:
		if ev.Proposal != nil {
			r.postProposal(ctx, ev.Proposal)
		}
	case api.EventDecision:
		if ev.Decision != nil {
			r.decided(ctx, ev.AgentID, ev.Decision)
		}
	case api.EventResult:
		if ev.Episode != nil {
			r.state.unmarkPosted(ev.Episode.ProposalID)
			r.postResult(ctx, ev.AgentID, ev.Episode)
		}
	case api.EventQuestion:
		if ev.Question != nil {
			r.postQuestion(ctx, ev.AgentID, ev.Question)
		}
	case api.EventFinish:
		r.closeOpen(ctx, ev.AgentID, "The run ended before a decision.")
		if _, ok := r.roleOf(ev.AgentID); !ok { // a role's finish is its team turn, posted as such
			r.endNote(ctx, ev.AgentID, runOf(ev), "🏁 "+finishText(ev))
		}
	case api.EventState:
		if ev.Agent != nil {
			r.stateChanged(ctx, ev.Agent)
		}
	case api.EventRemoved:
		r.closeOpen(ctx, ev.AgentID, "The agent was removed before a decision.")
		if _, ok := r.roleOf(ev.AgentID); !ok { // role agents go when their team ends
			r.note(ctx, ev.AgentID, "🗑 The agent was removed.")
		}
		r.state.removeAgent(ev.AgentID)
	}
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

// postProposal posts a proposal with its buttons, once per platform.
func (r *Relay) postProposal(ctx context.Context, p *api.Proposal) {
	if p.Command == "ask_user" {
		return // the question is posted instead
	}
	files := proposalFiles(p)
	for _, t := range r.targets(p.AgentID) {
		platform := t.ep.a.Platform()
		posted := false // set when this post made the message: only then are its files uploaded
		r.post(t, "posting proposal "+p.ID, func(ctx context.Context) error {
			if m, err := r.opt.Bindings.Message(ctx, p.ID, platform, "proposal"); err != nil || m != nil {
				if m != nil && p.Status.Decidable() {
					r.keepMessage(*m)
					r.state.messageShown(p.ID, platform, m.Message)
				}
				return err // posted already (or the store is failing: retried, never posted twice)
			}
			view := ProposalView{Proposal: p, ApproveN: r.opt.ApproveN}
			if r.expired(p) {
				view.Closed = r.expiredText()
			}
			id, err := t.ep.a.Post(ctx, t.b.Channel, t.b.Thread, labelled(FormatProposal(view, platform), t.label))
			if err != nil {
				return err
			}
			posted = true
			m := ChatMessage{ProposalID: p.ID, Platform: platform, Kind: "proposal", Channel: t.b.Channel, Message: id}
			if p.Status.Decidable() {
				r.keepMessage(m)
				r.state.messageShown(p.ID, platform, id)
			}
			if err := r.opt.Bindings.SetMessage(ctx, m); err != nil {
				r.log.Error("bots: recording proposal message", "proposal", p.ID, "err", err)
			}
			return nil
		})
		for _, f := range files {
			// The next ops of the thread's queue: they run once the message is up, and a
			// retried upload does not post the message again.
			r.post(t, "uploading the "+f.what+" of proposal "+p.ID, func(ctx context.Context) error {
				if !posted {
					return nil
				}
				return t.ep.a.PostFile(ctx, t.b.Channel, t.b.Thread, f.name, f.content, f.comment)
			})
		}
	}
	if p.Status.Decidable() {
		r.state.openProposal(p)
		r.state.markPosted(p.ID)
		r.armExpiry(ctx, p)
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

// keepMessage remembers an open proposal's message until proposalMessage hands it out
// for the proposal's decision or closing: the store drops it with its agent, and a team
// run removes its role agents right after stopping them, before the relay closes their
// proposals.
func (r *Relay) keepMessage(m ChatMessage) { r.state.keepMessage(m) }

// proposalMessage returns the message of a proposal being decided or closed on platform
// (nil when there is none), and forgets it.
func (r *Relay) proposalMessage(ctx context.Context, proposalID, platform string) (*ChatMessage, error) {
	kept, ok := r.state.takeMessage(proposalID, platform)
	m, err := r.opt.Bindings.Message(ctx, proposalID, platform, "proposal")
	if m == nil && err == nil && ok {
		return &kept, nil
	}
	return m, err
}

// decided edits the proposal's messages to show the decision and who made it.
func (r *Relay) decided(ctx context.Context, agentID string, d *api.Decision) {
	p := r.state.decided(d.ProposalID)
	ts := r.targets(agentID)
	if len(ts) == 0 {
		return
	}
	grantSource := r.grantSource(ctx, agentID, d) // once, not per thread and retry
	for _, t := range ts {
		platform := t.ep.a.Platform()
		r.post(t, "showing the decision on "+d.ProposalID, func(ctx context.Context) error {
			m, err := r.proposalMessage(ctx, d.ProposalID, platform)
			if err != nil || m == nil {
				return err
			}
			shown := p
			if shown == nil {
				if shown = r.proposal(ctx, agentID, d.ProposalID); shown == nil {
					return nil
				}
			}
			view := ProposalView{Proposal: shown, Decision: d, GrantSource: grantSource}
			return t.ep.a.Update(ctx, m.Channel, m.Message, labelled(FormatProposal(view, platform), t.label))
		})
	}
}

// grantLister is the part of the daemon's service that lists an agent's grants; the
// relay's Service need not have it (then grant makers show as text).
type grantLister interface {
	Grants(ctx context.Context, ref string) (*api.GrantList, error)
}

// grantSource is where the grant that made the automatic approval d was made (slack,
// agentctl…); "" when d is no grant's or the grant cannot be read.
func (r *Relay) grantSource(ctx context.Context, agentID string, d *api.Decision) string {
	gl, ok := r.opt.Service.(grantLister)
	if d.Source != "grant" || d.Grant == "" || !ok {
		return ""
	}
	list, err := gl.Grants(ctx, agentID)
	if err != nil {
		r.log.Warn("bots: reading grants to name a grant's maker", "agent", agentID, "err", err)
		return ""
	}
	for _, g := range list.Grants {
		if g.ID == d.Grant {
			return g.Source
		}
	}
	return ""
}

// proposal reads one proposal of an agent from the daemon.
func (r *Relay) proposal(ctx context.Context, agentID, id string) *api.Proposal {
	ps, err := r.opt.Service.Proposals(ctx, agentID)
	if err != nil {
		return nil
	}
	for i := len(ps) - 1; i >= 0; i-- {
		if ps[i].ID == id {
			return &ps[i]
		}
	}
	return nil
}

func (r *Relay) postResult(ctx context.Context, agentID string, ep *api.Episode) {
	if ep.Outcome != "succeeded" && ep.Outcome != "failed" {
		return // denials and feedback show on the proposal message
	}
	if ep.Command == "ask_user" || ep.Command == "finish" {
		return // the answer is in the thread already; finish has its own message
	}
	for _, t := range r.targets(agentID) {
		msg, file := FormatResult(ep, t.ep.a.MaxText())
		r.post(t, "posting a result", func(ctx context.Context) error {
			_, err := t.ep.a.Post(ctx, t.b.Channel, t.b.Thread, labelled(msg, t.label))
			return err
		})
		if file != "" {
			name := fmt.Sprintf("step-%d-%s.txt", ep.Step, ep.Command)
			r.post(t, "uploading a result", func(ctx context.Context) error {
				return t.ep.a.PostFile(ctx, t.b.Channel, t.b.Thread, name, file, "Output of step "+fmt.Sprint(ep.Step))
			})
		}
	}
}

func (r *Relay) postQuestion(ctx context.Context, agentID string, q *api.Question) {
	r.state.markPosted(q.ProposalID)
	for _, t := range r.targets(agentID) {
		platform := t.ep.a.Platform()
		r.words.swap(platform, agentID, q.Text) // the answer's context
		r.post(t, "posting a question", func(ctx context.Context) error {
			if m, err := r.opt.Bindings.Message(ctx, q.ProposalID, platform, "question"); err != nil || m != nil {
				if m != nil {
					r.state.messageShown(q.ProposalID, platform, m.Message)
				}
				return err
			}
			id, err := t.ep.a.Post(ctx, t.b.Channel, t.b.Thread, labelled(FormatQuestion(q, ""), t.label))
			if err != nil {
				return err
			}
			r.state.messageShown(q.ProposalID, platform, id)
			u, answered := r.state.questionPosted(q.ProposalID+"|"+platform, func() {
				r.opt.Bindings.SetMessage(ctx, ChatMessage{ProposalID: q.ProposalID, Platform: platform, Kind: "question", Channel: t.b.Channel, Message: id})
			})
			if answered {
				t.ep.a.Update(ctx, t.b.Channel, id, labelled(answeredQuestion(q, u, platform), t.label))
			}
			return nil
		})
	}
}

// stateChanged tells the thread when the agent pauses or fails on its own.
func (r *Relay) stateChanged(ctx context.Context, a *api.Agent) {
	key := string(a.State) + "|" + a.StateReason
	if r.state.showState(a.ID, key) == key {
		return
	}
	switch a.State {
	case api.StateIdle:
		r.closeOpen(ctx, a.ID, "The run ended before a decision: "+orDash(a.StateReason))
	case api.StatePaused:
		r.note(ctx, a.ID, "⏸ Paused: "+orDash(a.StateReason))
	case api.StateFailed:
		r.endNote(ctx, a.ID, a.RunID, "⚠️ Failed: "+orDash(a.StateReason))
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// note posts a line in every thread the agent is bound to.
func (r *Relay) note(ctx context.Context, agentID, text string) {
	for _, t := range r.targets(agentID) {
		r.post(t, "posting a note", func(ctx context.Context) error {
			_, err := t.ep.a.Post(ctx, t.b.Channel, t.b.Thread, labelled(FormatNote(text), t.label))
			return err
		})
	}
}

// expired reports whether chat may no longer decide p.
func (r *Relay) expired(p *api.Proposal) bool {
	return r.opt.Expiry > 0 && r.opt.Now().Sub(p.CreatedAt) >= r.opt.Expiry
}

func (r *Relay) expiredText() string {
	return fmt.Sprintf("⌛ Expired after %s: the agent is still waiting; decide with `agentctl approve` or `agentctl deny`.", r.opt.Expiry)
}

// armExpiry edits p's messages when it expires undecided.
func (r *Relay) armExpiry(ctx context.Context, p *api.Proposal) {
	if r.opt.Expiry <= 0 {
		return
	}
	left := r.opt.Expiry - r.opt.Now().Sub(p.CreatedAt)
	r.state.armTimer(p.ID, max(left, 0), func() {
		if !r.state.timerFired(p.ID) {
			return
		}
		for _, t := range r.targets(p.AgentID) {
			r.post(t, "showing expiry of "+p.ID, func(ctx context.Context) error {
				m, err := r.opt.Bindings.Message(ctx, p.ID, t.ep.a.Platform(), "proposal")
				if err != nil || m == nil {
					return err
				}
				if r.opt.OnExpired != nil {
					r.opt.OnExpired(t.ep.a.Platform())
				}
				return t.ep.a.Update(ctx, m.Channel, m.Message, labelled(FormatProposal(ProposalView{Proposal: p, Closed: r.expiredText()}, t.ep.a.Platform()), t.label))
			})
		}
	})
}

// closeOpen takes the buttons off an agent's undecided proposals, which no decision can
// reach any more (the run was stopped, or moved on to a new task).
func (r *Relay) closeOpen(ctx context.Context, agentID, why string) {
	for _, p := range r.state.closeOpen(agentID) {
		for _, t := range r.targets(agentID) {
			r.post(t, "closing "+p.ID, func(ctx context.Context) error {
				m, err := r.proposalMessage(ctx, p.ID, t.ep.a.Platform())
				if err != nil || m == nil {
					return err
				}
				return t.ep.a.Update(ctx, m.Channel, m.Message, labelled(FormatProposal(ProposalView{Proposal: p, Closed: why}, t.ep.a.Platform()), t.label))
			})
		}
	}
}
