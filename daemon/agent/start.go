package agent

import "context"

// startPaced is how many agents that were awaiting a decision take their first loop
// round at once after a start. That round only re-checks the proposal against the
// policy in force (a rule added while the daemon was down may approve it) and then
// waits for a person; with 10,000 of them started at once, their reads queued on the
// store's one connection ahead of everything else, and the daemon took seconds to list
// them. Paced, they run beside the API instead of in front of it.
const startPaced = 2

// kickAwaiting starts the loops of agents awaiting a decision, startPaced at a time, in
// the order given; it returns when all have started their first round or ctx ends.
func kickAwaiting(ctx context.Context, s *Supervisor, ids []string) {
	slots := make(chan struct{}, startPaced)
	for _, id := range ids {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		if !startLoop(s, id, func() { <-slots }) {
			<-slots // its loop runs already: a decision or a task came first
		}
	}
}

// startLoop starts id's loop unless it runs already, and wakes it: the one way a loop
// starts (kick is startLoop(s, id, nil)). With rounded set — the paced start — a loop
// started here calls rounded once its first round has chosen what to do (or it ended
// before), and a loop running already is left alone, not woken. It reports whether it
// started a loop; never when the supervisor is not running.
func startLoop(s *Supervisor, id string, rounded func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.runners[id]
	if r == nil {
		r = newRunner(s, id)
		s.runners[id] = r
	}
	if s.ctx == nil || s.ctx.Err() != nil {
		return false
	}
	started := !r.running
	switch {
	case started:
		r.running, r.rounded = true, rounded
		s.wg.Go(func() { r.loop(s.ctx) })
	case rounded != nil:
		return false // its loop runs already: a decision or a task came first
	}
	r.wakeUp()
	return started
}
