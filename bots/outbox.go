package bots

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/agentd/agentd/internal/backoff"
)

// The relay's posts go through an outbox: one queue per thread, worked in order, where a
// post that fails (the platform is down, a 5xx) is retried with backoff instead of lost,
// and the posts behind it wait, so a thread never shows a result before its proposal.
// Errors the adapter marks Permanent (a bad request, a channel gone) are not retried.

// PermanentError is a chat error that retrying cannot fix.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent marks err as not worth retrying; nil stays nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &PermanentError{err}
}

// PermanentStatus marks err, which came with HTTP status code, as not worth retrying when
// the platform refused the request itself (a 4xx other than 429); a 429, a 5xx and a
// network error are retried.
func PermanentStatus(err error, code int) error {
	if code >= 400 && code < 500 && code != 429 {
		return Permanent(err)
	}
	return err
}

// IsPermanent reports whether err was marked with Permanent.
func IsPermanent(err error) bool {
	var pe *PermanentError
	return errors.As(err, &pe)
}

// Outbox defaults.
const (
	defaultOutboxSize = 1000
	defaultGiveUp     = 30 * time.Minute
	opTimeout         = 30 * time.Second
)

type outbox struct {
	log     *slog.Logger
	max     int
	giveUp  time.Duration
	backoff func(n int) time.Duration

	mu     sync.Mutex
	ctx    context.Context // ends retrying; nil until the relay runs
	queues map[string][]op // thread key → posts waiting, the one being tried first
	n      int
	wg     sync.WaitGroup
	empty  *sync.Cond // signalled when n drops to 0
}

type op struct {
	what  string
	do    func(ctx context.Context) error
	since time.Time
}

func newOutbox(log *slog.Logger, size int, giveUp time.Duration, retry func(int) time.Duration) *outbox {
	if size <= 0 {
		size = defaultOutboxSize
	}
	if giveUp <= 0 {
		giveUp = defaultGiveUp
	}
	if retry == nil {
		retry = backoff.Policy{Base: time.Second, Max: time.Minute}.Next
	}
	o := &outbox{log: log, max: size, giveUp: giveUp, backoff: retry, queues: map[string][]op{}, ctx: context.Background()}
	o.empty = sync.NewCond(&o.mu)
	return o
}

// start sets the context whose end stops the workers (after the attempt under way).
func (o *outbox) start(ctx context.Context) {
	o.mu.Lock()
	o.ctx = ctx
	o.mu.Unlock()
}

// wait returns once every worker has stopped.
func (o *outbox) wait() { o.wg.Wait() }

// add queues do behind the posts already waiting for the same thread. A full outbox
// drops the new post: memory stays bounded however long a platform is down.
func (o *outbox) add(key, what string, do func(ctx context.Context) error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.n >= o.max {
		o.log.Error("bots: the chat outbox is full; a post is dropped", "what", what, "queued", o.n)
		return
	}
	q, busy := o.queues[key]
	o.queues[key] = append(q, op{what: what, do: do, since: time.Now()})
	o.n++
	if !busy {
		o.wg.Add(1)
		go o.work(key)
	}
}

// work runs a thread's posts in order until its queue is empty.
func (o *outbox) work(key string) {
	defer o.wg.Done()
	for {
		o.mu.Lock()
		q := o.queues[key]
		if len(q) == 0 {
			delete(o.queues, key)
			if o.n == 0 {
				o.empty.Broadcast()
			}
			o.mu.Unlock()
			return
		}
		next, ctx := q[0], o.ctx
		o.mu.Unlock()
		o.try(ctx, next)
		o.mu.Lock()
		o.queues[key] = o.queues[key][1:]
		o.n--
		if ctx.Err() != nil { // shutting down: what is left is dropped
			o.n -= len(o.queues[key])
			if left := len(o.queues[key]); left > 0 {
				o.log.Warn("bots: posts not sent before shutdown", "count", left)
			}
			delete(o.queues, key)
			if o.n == 0 {
				o.empty.Broadcast()
			}
			o.mu.Unlock()
			return
		}
		o.mu.Unlock()
	}
}

// try runs one post until it succeeds, fails for good, or is given up on.
func (o *outbox) try(ctx context.Context, p op) {
	for attempt := 1; ; attempt++ {
		// A post under way finishes even when the relay stops, so a message that reached
		// the platform is also recorded.
		octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opTimeout)
		err := p.do(octx)
		cancel()
		switch {
		case err == nil:
			if attempt > 1 {
				o.log.Info("bots: posted after retrying", "what", p.what, "attempts", attempt)
			}
			return
		case IsPermanent(err):
			o.log.Error("bots: "+p.what+" failed", "err", err)
			return
		case time.Since(p.since) > o.giveUp || ctx.Err() != nil:
			o.log.Error("bots: "+p.what+" failed; given up", "attempts", attempt, "err", err)
			return
		}
		o.log.Warn("bots: "+p.what+" failed; retrying", "attempt", attempt, "err", err)
		backoff.Sleep(ctx, o.backoff(attempt))
	}
}
