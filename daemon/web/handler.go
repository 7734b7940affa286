package web

import (
	"context"
	"embed"
	"errors"
	"io/fs"
	"net/http"
	"strings"

	"github.com/agentd/agentd/api"
)

//go:embed assets
var assets embed.FS

// assetServer serves the embedded assets; built once, not per request.
var assetServer = func() http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // "assets" is embedded above
	}
	return http.StripPrefix("/assets/", http.FileServerFS(sub))
}()

// cookiePrefix names the session cookie; the port is added because browsers share
// cookies between ports of one host, and two consoles (two daemons) must not mix.
const cookiePrefix = "agentd_console_"

// ctxKey carries the request's session (its id and CSRF token) to the handlers, which
// then need not look it up again.
type ctxKey struct{}

// reqSession is what ServeHTTP found for a logged-in request.
type reqSession struct {
	id, csrf string
	ended    <-chan struct{} // closed when the session ends
}

// ServeHTTP guards every request (Host, Origin, session, CSRF) and routes it.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	secureHeaders(w.Header())
	c.mu.Lock()
	guard := c.guard
	c.mu.Unlock()
	if status, msg := guard.Refuse(r); status != 0 {
		c.log.Debug("web console: refused", "method", r.Method, "host", r.Host, "origin", r.Header.Get("Origin"), "why", msg)
		http.Error(w, msg, status)
		return
	}
	switch {
	case r.URL.Path == "/login":
		c.login(w, r)
		return
	case strings.HasPrefix(r.URL.Path, "/assets/") && r.Method == http.MethodGet:
		w.Header().Set("Cache-Control", "private, max-age=300")
		assetServer.ServeHTTP(w, r)
		return
	}
	id := c.sessionID(r)
	s, ok := c.auth.session(id)
	if !ok {
		c.loggedOut(w)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		r.Body = http.MaxBytesReader(w, r.Body, maxForm)
		if !csrfOK(s, r.PostFormValue("csrf")) {
			http.Error(w, "this form has no valid CSRF token: reload the page and try again", http.StatusForbidden)
			return
		}
	}
	r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, reqSession{id: id, csrf: s.csrf, ended: s.ended}))
	c.router.ServeHTTP(w, r)
}

func (c *Console) cookieName() string { return cookiePrefix + c.guard.Port() }

func (c *Console) sessionID(r *http.Request) string {
	ck, err := r.Cookie(c.cookieName())
	if err != nil {
		return ""
	}
	return ck.Value
}

// mux routes a logged-in request.
func (c *Console) mux() *http.ServeMux {
	m := http.NewServeMux()
	m.HandleFunc("GET /{$}", c.agentsPage)
	m.HandleFunc("GET /agents/{agent}", c.agentPage)
	m.HandleFunc("POST /agents/{agent}/decide", c.decide)
	m.HandleFunc("POST /agents/{agent}/answer", c.answer)
	m.HandleFunc("GET /agents/{agent}/rewind", c.rewindPage)
	m.HandleFunc("POST /agents/{agent}/rewind", c.rewind)
	m.HandleFunc("GET /events", c.events)
	m.HandleFunc("GET /schedules", c.schedulesPage)
	m.HandleFunc("POST /schedules", c.addSchedule)
	m.HandleFunc("GET /schedules/check", c.checkSpec)
	m.HandleFunc("POST /schedules/{schedule}/{action}", c.scheduleAction)
	m.HandleFunc("GET /runs/{run}", c.replayPage)
	m.HandleFunc("GET /memory", c.memoryPage)
	m.HandleFunc("GET /teams", c.teamsPage)
	m.HandleFunc("GET /audit", c.auditPage)
	m.HandleFunc("GET /doctor", c.doctorPage)
	m.HandleFunc("POST /logout", c.logout)
	return m
}

// login spends the token of the URL `agentctl web` printed and sets the session cookie.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "log in by opening the URL `agentctl web` prints", http.StatusMethodNotAllowed)
		return
	}
	id := c.auth.login(r.URL.Query().Get("token"))
	if id == "" {
		c.renderTo(w, http.StatusUnauthorized, "login", page{Title: "Log in"}, loginView{Note: "This login link is spent, expired or wrong: each works once. Run `agentctl web` for a new one."})
		return
	}
	// A browser-session cookie: the daemon ends the session after sessionTTL unused.
	http.SetCookie(w, &http.Cookie{Name: c.cookieName(), Value: id, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// loggedOut answers a request without a live session.
func (c *Console) loggedOut(w http.ResponseWriter) {
	c.renderTo(w, http.StatusUnauthorized, "login", page{Title: "Log in"}, loginView{Note: "You are not logged in: run `agentctl web` and open the URL it prints."})
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	c.auth.logout(sessionOf(r))
	http.SetCookie(w, &http.Cookie{Name: c.cookieName(), Value: "", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: -1})
	c.renderTo(w, http.StatusOK, "login", page{Title: "Logged out"}, loginView{Note: "Logged out. Run `agentctl web` to log in again."})
}

func sessionOf(r *http.Request) string {
	s, _ := r.Context().Value(ctxKey{}).(reqSession)
	return s.id
}

// sessionEnded is closed when r's session ends.
func sessionEnded(r *http.Request) <-chan struct{} {
	s, _ := r.Context().Value(ctxKey{}).(reqSession)
	return s.ended
}

// csrfOf is the CSRF token of r's session, for the forms a page or event carries.
func csrfOf(r *http.Request) string {
	s, _ := r.Context().Value(ctxKey{}).(reqSession)
	return s.csrf
}

// fail answers a request the Service refused, with its message and status.
func (c *Console) fail(w http.ResponseWriter, err error) {
	status := api.StatusOf(err)
	if errors.Is(err, context.Canceled) {
		return
	}
	if status == http.StatusInternalServerError {
		c.log.Warn("web console: request failed", "err", err)
	}
	http.Error(w, err.Error(), status)
}

// back returns the person to the page they came from with a note for it.
func (c *Console) back(w http.ResponseWriter, r *http.Request, to, note string) {
	if note != "" { // daemon errors quote names and text a model made
		c.auth.setFlash(sessionOf(r), line(note))
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}
