package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentd/agentd/api"
)

func TestSecurityRefusals(t *testing.T) {
	e := newEnv(t)
	b := e.loggedIn()
	csrf := b.csrf()
	port := strings.TrimSuffix(e.base[strings.LastIndex(e.base, ":")+1:], "/")
	form := func(csrf string) url.Values {
		return url.Values{"csrf": {csrf}, "kind": {"deny"}, "proposal_id": {"p"}, "hash": {"h"}}
	}
	tests := []struct {
		name   string
		form   url.Values
		hdr    []string
		status int
		says   string
	}{
		{"csrf_missing", url.Values{"kind": {"deny"}}, nil, http.StatusForbidden, "CSRF"},
		{"csrf_wrong", form(strings.Repeat("0", 64)), nil, http.StatusForbidden, "CSRF"},
		{"cross_origin_post", form(csrf), []string{"Origin", "http://evil.example"}, http.StatusForbidden, "evil.example"},
		{"other_port_origin", form(csrf), []string{"Origin", "http://127.0.0.1:1"}, http.StatusForbidden, "refused"},
		{"null_origin", form(csrf), []string{"Origin", "null"}, http.StatusForbidden, "refused"},
		{"cross_site_fetch", form(csrf), []string{"Sec-Fetch-Site", "cross-site"}, http.StatusForbidden, "another site"},
		{"wrong_host", form(csrf), []string{"Host", "evil.example:" + port}, http.StatusMisdirectedRequest, "DNS rebinding"},
		{"wrong_host_port", form(csrf), []string{"Host", "127.0.0.1:80"}, http.StatusMisdirectedRequest, "DNS rebinding"},
		// Past the guards: the redirect lands on the page of an agent that does not exist.
		{"same_origin_ok", form(csrf), []string{"Origin", "http://127.0.0.1:" + port}, http.StatusNotFound, "no agent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := b.post("/agents/nobody/decide", tt.form, tt.hdr...)
			must(t, got.StatusCode == tt.status, "status %d, want %d: %s", got.StatusCode, tt.status, got.Body)
			must(t, strings.Contains(got.Body, tt.says), "reply does not say %q: %s", tt.says, got.Body)
			csp := got.Header.Get("Content-Security-Policy")
			must(t, strings.Contains(csp, "frame-ancestors 'none'") && strings.Contains(csp, "script-src 'self'"), "CSP %q", csp)
		})
	}
}

func TestLoginTokenAndSession(t *testing.T) {
	e := newEnv(t)
	b := e.browser()
	u, err := e.con.LoginURL()
	must(t, err == nil, "%v", err)

	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Get(u)
	must(t, err == nil, "%v", err)
	resp.Body.Close()
	must(t, resp.StatusCode == http.StatusSeeOther, "login: %d", resp.StatusCode)
	ck := resp.Cookies()
	must(t, len(ck) == 1 && ck[0].HttpOnly && ck[0].SameSite == http.SameSiteStrictMode && ck[0].Path == "/",
		"session cookie must be HttpOnly, SameSite=Strict: %+v", ck)

	again := b.get(u)
	must(t, again.StatusCode == http.StatusUnauthorized && strings.Contains(again.Body, "spent"), "a spent token logged in: %d %s", again.StatusCode, again.Body)

	b.login(e)
	must(t, b.get("/").StatusCode == http.StatusOK, "logged in, the agents page is refused")
	csrf := b.csrf()
	must(t, b.post("/logout", url.Values{"csrf": {csrf}}).StatusCode == http.StatusOK, "logout failed")
	must(t, b.get("/").StatusCode == http.StatusUnauthorized, "after logout the session still works")

	// The old cookie, sent by hand after logout, is refused too.
	req, _ := http.NewRequest("GET", e.base, nil)
	req.AddCookie(&http.Cookie{Name: ck[0].Name, Value: ck[0].Value})
	b2 := e.browser()
	must(t, b2.do(req).StatusCode == http.StatusOK, "the first session should still be live")
	// ...until it logs out.
	b2.hc.Jar.SetCookies(mustURL(t, e.base), ck)
	must(t, b2.post("/logout", url.Values{"csrf": {b2.csrf()}}).StatusCode == http.StatusOK, "logout failed")
	req, _ = http.NewRequest("GET", e.base, nil)
	req.AddCookie(&http.Cookie{Name: ck[0].Name, Value: ck[0].Value})
	must(t, b2.do(req).StatusCode == http.StatusUnauthorized, "a logged-out session id still works")
	must(t, b.get(u).StatusCode == http.StatusUnauthorized, "token reuse after logout logged in")

	// Neither the token nor the session id reaches the log.
	tok := u[strings.Index(u, "token=")+len("token="):]
	must(t, !strings.Contains(e.logs.String(), tok) && !strings.Contains(e.logs.String(), ck[0].Value), "a secret is in the log:\n%s", e.logs.String())

	for _, p := range []string{"/", "/agents/x", "/schedules", "/memory", "/teams", "/audit", "/doctor", "/events"} {
		got := e.browser().get(p)
		must(t, got.StatusCode == http.StatusUnauthorized, "%s without a session: %d", p, got.StatusCode)
	}
}

func TestConsoleNotListeningUntilAsked(t *testing.T) {
	con, err := New(Options{Service: service{}})
	must(t, err == nil, "%v", err)
	must(t, con.URL() == "", "a new console has a URL: %s", con.URL())
	_, err = con.LoginURL()
	must(t, err != nil && strings.Contains(err.Error(), "agentctl web"), "a login URL without a listener: %v", err)
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:0", "localhost:0", "nonsense"} {
		_, err := con.Listen(context.Background(), addr)
		must(t, err != nil, "listened on %s", addr)
	}
}

func mustURL(t testing.TB, s string) *url.URL {
	u, err := url.Parse(s)
	must(t, err == nil, "%v", err)
	return u
}

// Model text in an SSE fragment cannot end the message or forge an id/event field.
func TestWriteSSECannotForgeFields(t *testing.T) {
	rec := httptest.NewRecorder()
	writeSSE(rec, "event", 7, "a\r\nid: 999\revent: reload\n\ndata: x\r\rretry: 1")
	for _, l := range splitSSE(rec.Body.String()) {
		if l == "" || hasPrefixAny(l, "data: ", "event: event", "id: 7") {
			continue
		}
		t.Errorf("forged SSE line %q in %q", l, rec.Body.String())
	}
}

func splitSSE(s string) []string {
	var out []string
	cur := ""
	for i := 0; i < len(s); i++ {
		if s[i] == '\r' || s[i] == '\n' {
			out = append(out, cur)
			cur = ""
			continue
		}
		cur += string(s[i])
	}
	return append(out, cur)
}

func hasPrefixAny(s string, ps ...string) bool {
	for _, p := range ps {
		if len(s) >= len(p) && s[:len(p)] == p {
			return true
		}
	}
	return false
}

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

// hostile is the XSS corpus: script tags, event-handler attributes, attribute and
// element breakers, javascript: URLs, template syntax, and bidi and zero-width
// characters that would make a name read backwards or hide text.
var hostile = []string{
	`<script>window.__xss=1</script>`,
	`<img src=x onerror="window.__xss=2">`,
	`"><svg onload="window.__xss=3">`,
	`'><iframe src="javascript:parent.__xss=4"></iframe>`,
	`javascript:window.__xss=5`,
	`<a href="javascript:window.__xss=6">click</a>`,
	`</textarea></pre></dl><script>window.__xss=7</script>`,
	`{{.CSRF}} ${window.__xss=8}`,
	"safe\u202etxt.exe",
	"zero\u200bwidth\u2066isolate\u2069",
}

// inert checks the page the browser shows: no dialog opened, no corpus script ran, no
// element or attribute of the corpus came alive, no raw bidi character reached the text
// — and the corpus is there, shown as text.
func (c *chrome) inert(where string) {
	c.t.Helper()
	checks := []struct{ what, expr string }{
		{"no corpus script ran", `window.__xss === undefined`},
		{"only the console's own script", `document.scripts.length === 1 && document.scripts[0].src.endsWith("/assets/app.js")`},
		{"no element the corpus made", `document.querySelectorAll("iframe, img, svg, object, embed, main script, main a[href^='javascript'], main textarea:not([name])").length === 0`},
		{"no event-handler attribute", `![...document.querySelectorAll("*")].some(e => [...e.attributes].some(a => a.name.startsWith("on")))`},
		{"no raw bidi or zero-width character", `!/[\u202a-\u202e\u2066-\u2069\u200b]/.test(document.body.innerText)`},
		{"the corpus is shown as text", `document.body.innerText.includes("<script>window.__xss=1</script>")`},
	}
	for _, ch := range checks {
		if !eval[bool](c, ch.expr) {
			c.t.Errorf("%s: %s failed (%s)\npage:\n%s", where, ch.what, ch.expr, c.html())
		}
	}
	if n := c.dialogs.Load(); n > 0 {
		c.t.Errorf("%s: %d dialogs opened", where, n)
	}
}

// TestBrowserXSS sends the corpus through every field a model controls — each thought,
// a write's path and contents (so the preview and diff), the command's result, an
// ask_user question and a finish reason — and checks each page in the browser, both as
// the server rendered it and as the live stream put it in.
func TestBrowserXSS(t *testing.T) {
	c := newChrome(t)
	e := newEnv(t)
	all := strings.Join(hostile, "\n")
	e.script(reply("write_file", map[string]string{"path": "x" + strings.Join(hostile[:4], "") + ".txt", "contents": all + "\n"}, &all),
		reply("read_file", map[string]string{"path": "x" + strings.Join(hostile[:4], "") + ".txt"}, &all),
		reply("ask_user", map[string]string{"question": all}, &all),
		reply("finish", map[string]string{"reason": all}, &all))
	a := e.create("xss")
	e.waitState(a.ID, api.StateAwaitingDecision)

	login, _ := e.con.LoginURL()
	c.do("log in", chromedp.Navigate(login), chromedp.WaitVisible(chromedp.ID("agents")))
	c.inertAgents()
	c.do("open the agent", chromedp.Navigate(e.base+"agents/"+a.ID), chromedp.WaitVisible(chromedp.ID("approve")))
	c.inert("a hostile proposal, server-rendered")
	c.shot("xss")

	decide := func() {
		p := e.waitState(a.ID, api.StateAwaitingDecision).Pending
		if _, err := e.sup.API().Decisions.Decide(context.Background(), a.ID, api.DecideRequest{ProposalID: p.ID, Kind: api.DecisionApprove, By: "t", Source: "agentctl"}); err != nil {
			t.Fatal(err)
		}
	}
	decide() // the write; then the read of the hostile file waits, streamed in
	c.wait("the read to be shown live", `document.querySelector("#waiting .command")?.textContent === "read_file"`)
	decide()
	c.wait("the question to be shown live", `document.querySelector("#waiting .question") !== null`)
	c.inert("a hostile result and question, live")
	if err := e.sup.API().Decisions.Answer(context.Background(), a.ID, api.AnswerRequest{Text: "ok", By: "t"}); err != nil {
		t.Fatal(err)
	}
	decide() // finish, with a hostile reason
	c.wait("the finish event", `document.querySelector("#stream .event-finish") !== null`)
	c.inert("a hostile finish reason, live")
	c.do("reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("history")))
	c.inert("the hostile history, server-rendered")
}

// inertAgents checks the agents page, where the corpus is in the waiting column.
func (c *chrome) inertAgents() {
	c.t.Helper()
	if !eval[bool](c, `window.__xss === undefined && document.scripts.length === 1 && document.querySelectorAll("iframe, img, svg").length === 0`) {
		c.t.Errorf("the agents page is not inert:\n%s", c.html())
	}
}
