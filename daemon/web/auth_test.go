package web

import (
	"testing"
	"time"
)

// clock is a settable time for the auth tests.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestAuthLifetimes(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, a *auth, c *clock)
	}{
		{"token_works_once", func(t *testing.T, a *auth, c *clock) {
			tok := a.newLogin()
			must(t, a.login(tok) != "", "a fresh token was refused")
			must(t, a.login(tok) == "", "a spent token logged in again")
		}},
		{"token_expires", func(t *testing.T, a *auth, c *clock) {
			tok := a.newLogin()
			c.t = c.t.Add(loginTTL + time.Second)
			must(t, a.login(tok) == "", "an expired token logged in")
		}},
		{"empty_and_unknown_tokens", func(t *testing.T, a *auth, c *clock) {
			a.newLogin()
			must(t, a.login("") == "" && a.login("nope") == "", "a made-up token logged in")
		}},
		{"session_expires_when_idle", func(t *testing.T, a *auth, c *clock) {
			id := a.login(a.newLogin())
			c.t = c.t.Add(sessionTTL - time.Minute)
			_, ok := a.session(id)
			must(t, ok, "a session in use expired")
			c.t = c.t.Add(sessionTTL - time.Minute) // used a minute ago: extended
			_, ok = a.session(id)
			must(t, ok, "a session used within its lifetime expired")
			c.t = c.t.Add(sessionTTL + time.Second)
			_, ok = a.session(id)
			must(t, !ok, "an idle session outlived its lifetime")
		}},
		{"logout_ends_session", func(t *testing.T, a *auth, c *clock) {
			id := a.login(a.newLogin())
			a.logout(id)
			_, ok := a.session(id)
			must(t, !ok, "a logged-out session works")
		}},
		{"csrf_is_per_session", func(t *testing.T, a *auth, c *clock) {
			s1, _ := a.session(a.login(a.newLogin()))
			s2, _ := a.session(a.login(a.newLogin()))
			must(t, s1.csrf != s2.csrf && len(s1.csrf) == 64, "CSRF tokens: %q %q", s1.csrf, s2.csrf)
			must(t, csrfOK(s1, s1.csrf) && !csrfOK(s1, s2.csrf) && !csrfOK(s1, ""), "CSRF check")
		}},
		{"expired_entries_are_swept", func(t *testing.T, a *auth, c *clock) {
			for range 100 {
				a.newLogin()
			}
			c.t = c.t.Add(loginTTL + time.Second)
			a.login("x")
			must(t, len(a.logins) == 0, "%d expired tokens kept", len(a.logins))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &clock{t: time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC)}
			tt.run(t, newAuth(c.now), c)
		})
	}
}
