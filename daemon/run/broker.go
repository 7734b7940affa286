package run

import (
	"sync"
	"time"

	"github.com/agentd/agentd/api"
)

// Broker fans events out to subscribers and keeps the last few for replay, so a follower
// that reconnects with the last seq it saw misses nothing the broker still holds.
// Events are a view of the store, never the truth: a follower that missed too much
// reads the agent again.
type Broker struct {
	mu   sync.Mutex
	seq  int64
	ring []api.Event
	next int // ring write position once full
	subs map[*subscriber]struct{}
	now  func() time.Time
}

type subscriber struct {
	agent string // "" = all agents
	ch    chan api.Event
}

const (
	ringSize  = 4096
	subBuffer = 1024
)

// Seq is the seq of the newest event published (0: none yet). A follower that reads it
// before a snapshot and subscribes since it misses nothing that happened in between.
func (b *Broker) Seq() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.seq
}

// NewBroker returns an empty broker.
func NewBroker() *Broker {
	return &Broker{subs: map[*subscriber]struct{}{}, now: time.Now}
}

// Publish stamps ev with the next seq and the time and delivers it. A subscriber whose
// buffer is full is dropped (its channel closed) rather than slowing the agent down.
func (b *Broker) Publish(ev api.Event) api.Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq++
	ev.Seq = b.seq
	ev.Time = b.now().UTC()
	if len(b.ring) < ringSize {
		b.ring = append(b.ring, ev)
	} else {
		b.ring[b.next] = ev
		b.next = (b.next + 1) % ringSize
	}
	for s := range b.subs {
		if s.agent != "" && s.agent != ev.AgentID {
			continue
		}
		select {
		case s.ch <- ev:
			if ev.Type == api.EventRemoved && s.agent != "" {
				close(s.ch) // nothing more will come for a deleted agent
				delete(b.subs, s)
			}
		default:
			close(s.ch)
			delete(b.subs, s)
		}
	}
	return ev
}

// Subscribe returns a channel of events for agentID ("" for all), first replaying held
// events with Seq > since (when since > 0).
func (b *Broker) Subscribe(agentID string, since int64) (<-chan api.Event, func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var replay []api.Event
	if since > 0 {
		for i := 0; i < len(b.ring); i++ {
			ev := b.ring[(b.next+i)%len(b.ring)]
			if ev.Seq > since && (agentID == "" || ev.AgentID == agentID) {
				replay = append(replay, ev)
			}
		}
	}
	s := &subscriber{agent: agentID, ch: make(chan api.Event, subBuffer+len(replay))}
	for _, ev := range replay {
		s.ch <- ev
	}
	b.subs[s] = struct{}{}
	var once sync.Once
	return s.ch, func() {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			if _, ok := b.subs[s]; ok {
				delete(b.subs, s)
				close(s.ch)
			}
		})
	}
}
