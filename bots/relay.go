package bots

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/backoff"
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
	ready    chan struct{}
	readyOne sync.Once
	expiry   expiry
	// What it keeps beside the store, one owner each (each with its locking rule):
	eps       adapters       // the platforms, set before Run
	board     *proposalBoard // what waits for a person in chat
	teams     *teamDesk      // team runs in chat
	posts     *poster        // agent events to threads
	schedules atomic.Pointer[Schedules]
	out       *outbox // posts, in order per thread, retried while a platform is down
	// strangers limits how often a non-approver's refusals are audited.
	strangers strangerAudits
	// words is each thread's last message, the context of the next one remembered.
	words lastWords
}

// New returns a relay; Add adapters, then Run it.
func New(opt Options) *Relay {
	opt.Log = LogOr(opt.Log)
	if opt.Now == nil {
		opt.Now = time.Now
	}
	r := &Relay{
		opt: opt, log: opt.Log, ready: make(chan struct{}), expiry: expiry{opt.Expiry, opt.Now}, board: newProposalBoard(),
		out: newOutbox(opt.Log, opt.OutboxSize, opt.GiveUp, opt.RetryBackoff),
	}
	r.teams, r.posts = newTeamDesk(r), &poster{r}
	return r
}

// Add attaches an adapter and the rules it serves under. Call it before Run.
func (r *Relay) Add(a Adapter, rules Rules) {
	if !r.eps.add(&endpoint{a: a, rules: rules}) {
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
	r.teams.setRunCtx(ctx)
	defer r.teams.waitFollowers() // before the outbox stops: followers post through it
	var since int64
	first := true
	for ctx.Err() == nil {
		ch, cancel, err := r.opt.Service.Subscribe("", since)
		if err != nil {
			r.log.Error("bots: subscribing to agent events", "err", err)
			backoff.Sleep(ctx, time.Second)
			continue
		}
		if first {
			// After subscribing, so that a proposal made meanwhile is posted once either way.
			r.posts.resync(ctx)
			r.teams.loadTeams(ctx)
			first = false
			r.readyOne.Do(func() { close(r.ready) })
		}
		if each(ctx, ch, func(hctx context.Context, ev api.Event) {
			since = ev.Seq
			r.posts.handle(hctx, ev)
		}) {
			r.log.Warn("bots: event stream closed; resubscribing", "since", since)
		}
		cancel()
	}
	r.board.stopTimers()
	return nil
}

// each hands every event of ch to handle until ctx ends or ch closes (closed reports
// that). An event being handled is finished even when ctx ends meanwhile, within 30
// seconds, so a message that reached the platform is also recorded.
func each(ctx context.Context, ch <-chan api.Event, handle func(context.Context, api.Event)) (closed bool) {
	for {
		select {
		case <-ctx.Done():
			return false
		case ev, ok := <-ch:
			if !ok {
				return true
			}
			hctx, done := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			handle(hctx, ev)
			done()
		}
	}
}

// expiry closes a proposal to chat decisions this long after it was made
// (Options.Expiry; never when not positive).
type expiry struct {
	after time.Duration
	now   func() time.Time
}

// over reports whether chat may no longer decide p.
func (e expiry) over(p *api.Proposal) bool {
	return e.after > 0 && e.now().Sub(p.CreatedAt) >= e.after
}

// note tells a person that chat may no longer decide, and what to do.
func (e expiry) note() string {
	return fmt.Sprintf("⌛ Expired after %s: the agent is still waiting; decide with `agentctl approve` or `agentctl deny`.", e.after)
}
