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
		if !kickFirst(s, id, func() { <-slots }) {
			<-slots // its loop runs already: a decision or a task came first
		}
	}
}

// kickFirst starts id's loop as kick does, and has the loop call rounded once its first
// round has chosen what to do (or it ended before). It reports false, and never calls
// rounded, when the loop was running already or the supervisor is not running.
func kickFirst(s *Supervisor, id string, rounded func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.runners[id]
	if r == nil {
		r = newRunner(s, id)
		s.runners[id] = r
	}
	if s.ctx == nil || s.ctx.Err() != nil || r.running {
		return false
	}
	r.running, r.rounded = true, rounded
	s.wg.Go(func() { r.loop(s.ctx) })
	r.wakeUp()
	return true
}
