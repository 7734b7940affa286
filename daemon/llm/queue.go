package llm

import (
	"context"
	"slices"
	"time"
)

// Class is how urgent a model call is. The caller decides it from the agent's state and
// puts it in the call's context (WithPriority); a call without one is Interactive.
type Class int

const (
	// Interactive calls are for agents a person is waiting on: runs started from
	// agentctl or chat, answers and feedback. They go first, oldest first.
	Interactive Class = iota
	// Batch calls are scheduled and team work. They share what interactive calls leave,
	// one call per agent (key) in turn, so one busy schedule cannot starve the others.
	Batch
	numClasses
)

// String names the class as status and metrics show it.
func (c Class) String() string {
	if c == Batch {
		return "batch"
	}
	return "interactive"
}

type priorityKey struct{}

type priority struct {
	class Class
	key   string
}

// WithPriority marks the model calls made with ctx as class, on behalf of key (an agent
// or team run ID): batch calls take turns by key.
func WithPriority(ctx context.Context, class Class, key string) context.Context {
	return context.WithValue(ctx, priorityKey{}, priority{class, key})
}

// PriorityOf returns the class and key WithPriority put in ctx; Interactive and "" when none.
func PriorityOf(ctx context.Context) (Class, string) {
	p, _ := ctx.Value(priorityKey{}).(priority)
	return p.class, p.key
}

// waiter is one chat call waiting for a slot.
type waiter struct {
	model string
	class Class
	key   string
	skip  map[*poolHost]bool // hosts that failed this call already
	since time.Time
	ready chan struct{} // closed once host or err is set
	host  *poolHost
	err   error
}

// fairQueue orders the waiting calls: interactive ones first in arrival order, then batch
// ones one per key in turn (round-robin), each key's own calls in arrival order. It is
// guarded by Pool.mu.
//
// The batch keys wait in one line of turns: a key is served from the front, and goes to
// the back when it has more calls waiting; a key that starts waiting (again) joins the
// back too. So every key waiting gets a turn before any key gets a second one, however
// often the others come back. A key whose call no free host can take keeps its place.
type fairQueue struct {
	interactive []*waiter
	batch       map[string][]*waiter
	turns       []string // the keys with batch calls waiting, the next turn first
}

func (q *fairQueue) len(c Class) int {
	if c == Interactive {
		return len(q.interactive)
	}
	n := 0
	for _, ws := range q.batch {
		n += len(ws)
	}
	return n
}

// push adds w at the back of its line, or at the front when it is a retry after a host
// failed: it already waited its turn.
func (q *fairQueue) push(w *waiter, front bool) {
	if w.class == Interactive {
		if front {
			q.interactive = slices.Insert(q.interactive, 0, w)
		} else {
			q.interactive = append(q.interactive, w)
		}
		return
	}
	if q.batch == nil {
		q.batch = map[string][]*waiter{}
	}
	ws, ok := q.batch[w.key]
	switch {
	case !ok && front:
		q.turns = slices.Insert(q.turns, 0, w.key)
	case !ok:
		q.turns = append(q.turns, w.key)
	}
	if front {
		q.batch[w.key] = slices.Insert(ws, 0, w)
	} else {
		q.batch[w.key] = append(ws, w)
	}
}

// remove takes w out wherever it waits; its key keeps its turn while it has calls left.
func (q *fairQueue) remove(w *waiter) {
	if w.class == Interactive {
		q.interactive = slices.DeleteFunc(q.interactive, func(x *waiter) bool { return x == w })
		return
	}
	ws := slices.DeleteFunc(q.batch[w.key], func(x *waiter) bool { return x == w })
	if len(ws) > 0 {
		q.batch[w.key] = ws
		return
	}
	delete(q.batch, w.key)
	if i := slices.Index(q.turns, w.key); i >= 0 {
		q.turns = slices.Delete(q.turns, i, i+1)
	}
}

// next returns the first waiter, in the queue's order, that place accepts, and takes it
// out; nil when place accepts none. Only the head of each key's line is offered.
func (q *fairQueue) next(place func(*waiter) bool) *waiter {
	for _, w := range q.interactive {
		if place(w) {
			q.remove(w)
			return w
		}
	}
	for i, key := range q.turns {
		ws := q.batch[key]
		if !place(ws[0]) {
			continue
		}
		w := ws[0]
		q.turns = slices.Delete(q.turns, i, i+1)
		if len(ws) > 1 {
			q.batch[key] = ws[1:]
			q.turns = append(q.turns, key) // its next call waits a round
		} else {
			delete(q.batch, key)
		}
		return w
	}
	return nil
}

// each calls f for every waiter, in no particular order.
func (q *fairQueue) each(f func(*waiter)) {
	for _, w := range q.interactive {
		f(w)
	}
	for _, ws := range q.batch {
		for _, w := range ws {
			f(w)
		}
	}
}

// acquire waits for a slot on a host that can serve model and returns it, counted busy;
// release gives it back. It fails at once when no host can serve model.
func (p *Pool) acquire(ctx context.Context, model string, class Class, key string, skip map[*poolHost]bool, retry bool) (*poolHost, error) {
	w := &waiter{model: model, class: class, key: key, skip: skip, since: time.Now(), ready: make(chan struct{})}
	p.mu.Lock()
	if len(p.candidates(model, skip)) == 0 {
		err := p.noHostError("chat", model)
		p.mu.Unlock()
		return nil, err
	}
	p.queue.push(w, retry)
	p.dispatch()
	p.mu.Unlock()
	select {
	case <-w.ready:
		return w.host, w.err
	case <-ctx.Done():
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-w.ready: // granted meanwhile: give the slot to the next one
		if w.host != nil {
			w.host.busy--
			p.dispatch()
		}
	default:
		p.queue.remove(w)
	}
	return nil, ctx.Err()
}

// dispatch hands free slots to waiting calls in the queue's order. Caller holds p.mu.
func (p *Pool) dispatch() {
	for {
		w := p.queue.next(func(w *waiter) bool {
			h := pick(p.candidates(w.model, w.skip))
			if h == nil {
				return false
			}
			w.host = h
			return true
		})
		if w == nil {
			return
		}
		w.host.busy++
		wait := time.Since(w.since)
		p.stats[w.class].add(wait)
		if p.onWait != nil {
			p.onWait(w.class, wait)
		}
		close(w.ready)
	}
}

// failUnservable fails the waiting calls no host that is up can serve any more: their
// agents wait for the model instead of sitting in the queue. Caller holds p.mu.
func (p *Pool) failUnservable() {
	var gone []*waiter
	p.queue.each(func(w *waiter) {
		if len(p.candidates(w.model, w.skip)) == 0 {
			gone = append(gone, w)
		}
	})
	for _, w := range gone {
		p.queue.remove(w)
		w.err = p.noHostError("chat", w.model)
		close(w.ready)
	}
}

// ObserveQueue makes f see how long each chat call waited in the queue, when it gets its
// slot (metrics). Call it before the pool is used; f must be quick.
func (p *Pool) ObserveQueue(f func(Class, time.Duration)) {
	p.mu.Lock() // the prober may be dispatching already
	defer p.mu.Unlock()
	p.onWait = f
}

// waitWindow is how many recent waits a class keeps for its percentiles.
const waitWindow = 512

// classStats are one class's queue waits. Guarded by Pool.mu.
type classStats struct {
	count  int64
	total  time.Duration
	recent [waitWindow]time.Duration
}

func (s *classStats) add(d time.Duration) {
	s.recent[s.count%waitWindow] = d
	s.count++
	s.total += d
}

// ClassStatus is one class of the queue: what waits now and how long calls waited.
type ClassStatus struct {
	Class   string // interactive or batch
	Queued  int    // calls waiting now
	Served  int64  // calls that got a slot since the daemon started
	WaitSum time.Duration
	WaitP50 time.Duration // over the last 512 calls
	WaitP99 time.Duration
	WaitMax time.Duration // over the last 512 calls
}

func (s *classStats) status(c Class, queued int) ClassStatus {
	st := ClassStatus{Class: c.String(), Queued: queued, Served: s.count, WaitSum: s.total}
	n := int(min(s.count, waitWindow))
	if n == 0 {
		return st
	}
	ws := slices.Clone(s.recent[:n])
	slices.Sort(ws)
	st.WaitP50, st.WaitP99, st.WaitMax = ws[(n-1)*50/100], ws[(n-1)*99/100], ws[n-1]
	return st
}
