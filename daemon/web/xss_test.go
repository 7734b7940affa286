package web

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentd/agentd/api"
)

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
