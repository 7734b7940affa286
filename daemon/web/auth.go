package web

import (
	"crypto/sha256"
	"crypto/subtle"
	"sync"
	"time"

	"github.com/agentd/agentd/internal/randid"
)

// Lifetimes of what the console hands out.
const (
	// loginTTL bounds how long a printed login URL works: long enough to click, short
	// enough that one left in a scrollback is dead.
	loginTTL = 10 * time.Minute
	// sessionTTL is how long a browser stays logged in without coming back.
	sessionTTL = 12 * time.Hour
)

// session is one logged-in browser.
type session struct {
	csrf    string
	expires time.Time
	// flash is a note for the next page this browser loads (why a decision was refused).
	flash string
	// ended is closed when the session ends (logged out, expired, ended by the daemon):
	// its open event streams stop then, not at their next request.
	ended chan struct{}
}

// auth holds the login tokens and sessions. Its one mutex guards both maps; tokens and
// session ids are kept by their sha256, so a heap dump or a log line never holds one.
type auth struct {
	now func() time.Time

	mu       sync.Mutex
	logins   map[[32]byte]time.Time // login token hash → expiry
	sessions map[[32]byte]*session  // session id hash → session
}

func newAuth(now func() time.Time) *auth {
	return &auth{now: now, logins: map[[32]byte]time.Time{}, sessions: map[[32]byte]*session{}}
}

func hashOf(s string) [32]byte { return sha256.Sum256([]byte(s)) }

// newLogin mints a one-time login token.
func (a *auth) newLogin() string {
	tok := randid.Hex(32)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.logins[hashOf(tok)] = a.now().Add(loginTTL)
	return tok
}

// login spends a login token and returns a new session's id, or "" when the token is
// unknown, spent or expired. A token works once, whatever happens to its session.
func (a *auth) login(tok string) (id string) {
	h := hashOf(tok)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sweepLocked()
	exp, ok := a.logins[h]
	if !ok || tok == "" {
		return ""
	}
	delete(a.logins, h)
	if a.now().After(exp) {
		return ""
	}
	id = randid.Hex(32)
	a.sessions[hashOf(id)] = &session{csrf: randid.Hex(32), expires: a.now().Add(sessionTTL), ended: make(chan struct{})}
	return id
}

// session returns a copy of the live session with this id, extending it, or false.
// Every request comes here, so every request also ends the sessions that expired.
func (a *auth) session(id string) (session, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sweepLocked()
	s, ok := a.sessions[hashOf(id)]
	if !ok || id == "" {
		return session{}, false
	}
	s.expires = a.now().Add(sessionTTL)
	return *s, true
}

// alive reports whether the session with this id is live, without extending it, and
// until when; it ends the sessions that expired. An event stream asks it when its
// session's time is up: a stream open is not the browser using the console.
func (a *auth) alive(id string) (expires time.Time, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sweepLocked()
	s, ok := a.sessions[hashOf(id)]
	if !ok || id == "" {
		return time.Time{}, false
	}
	return s.expires, true
}

// takeFlash returns the session's note and clears it.
func (a *auth) takeFlash(id string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.sessions[hashOf(id)]
	if !ok {
		return ""
	}
	f := s.flash
	s.flash = ""
	return f
}

// setFlash leaves a note for the session's next page.
func (a *auth) setFlash(id, note string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s, ok := a.sessions[hashOf(id)]; ok {
		s.flash = note
	}
}

// logout ends the session.
func (a *auth) logout(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.endLocked(hashOf(id))
}

// endAll ends every session and spends every login token; it returns how many sessions
// it ended.
func (a *auth) endAll() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := len(a.sessions)
	for h := range a.sessions {
		a.endLocked(h)
	}
	clear(a.logins)
	return n
}

// endLocked ends the session with id hash h, if there is one: it is forgotten, and its
// streams are told. Caller holds a.mu.
func (a *auth) endLocked(h [32]byte) {
	if s, ok := a.sessions[h]; ok {
		delete(a.sessions, h)
		close(s.ended)
	}
}

// csrfOK reports whether sent is the session's CSRF token, in constant time.
func csrfOK(s session, sent string) bool {
	return sent != "" && subtle.ConstantTimeCompare([]byte(s.csrf), []byte(sent)) == 1
}

// sweepLocked drops expired tokens and sessions, so minting many cannot grow the maps.
func (a *auth) sweepLocked() {
	now := a.now()
	for h, exp := range a.logins {
		if now.After(exp) {
			delete(a.logins, h)
		}
	}
	for h, s := range a.sessions {
		if now.After(s.expires) {
			a.endLocked(h)
		}
	}
}
