package bots

import (
	"sync"
	"time"
)

// Anyone in a workspace can click a button or send a forged one. A person who may decide
// nothing here is refused before any other check, and their refusals reach the audit log
// at most once per user per strangerWindow on each platform, the rest only counted, so
// that they cannot flood it. An approver's forged or mismatched clicks are always audited.

// strangerWindow is how often a non-approver's refused actions are audited, at most.
const strangerWindow = time.Minute

// maxStrangers bounds the users the limiter remembers; past it, windows that ended are
// forgotten.
const maxStrangers = 4096

// strangerAudits is the limiter: per platform and user, when their window started and how
// many refusals in it were not audited.
type strangerAudits struct {
	mu    sync.Mutex
	users map[string]*strangerWindowState
}

type strangerWindowState struct {
	since     time.Time
	unaudited int
}

// allow reports whether a refusal of user on platform at now is audited, and when so,
// how many of theirs since the last audited one were not.
func (s *strangerAudits) allow(platform, user string, now time.Time) (unaudited int, audit bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.users == nil {
		s.users = map[string]*strangerWindowState{}
	}
	key := platform + "\x00" + user
	w := s.users[key]
	if w != nil && now.Sub(w.since) < strangerWindow {
		w.unaudited++
		return w.unaudited, false
	}
	if len(s.users) >= maxStrangers {
		for k, old := range s.users {
			if now.Sub(old.since) >= strangerWindow {
				delete(s.users, k)
			}
		}
	}
	if w != nil {
		unaudited = w.unaudited
	}
	s.users[key] = &strangerWindowState{since: now}
	return unaudited, true
}
