package web

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentd/agentd/api"
)

// overflowJS lists what is wider than the page lets it be: the document wider than the
// window, and any box in main whose content is wider than the box (text a model wrote
// cut off, or scrolled sideways out of sight).
const overflowJS = `(() => {
  const out = [];
  if (document.documentElement.scrollWidth > window.innerWidth + 1)
    out.push("document " + document.documentElement.scrollWidth + "px > window " + window.innerWidth + "px");
  for (const el of document.querySelectorAll("main *")) {
    const cs = getComputedStyle(el);
    if (cs.display === "inline" || cs.display === "none" || el.closest("details:not([open])")) continue;
    if (el.scrollWidth > el.clientWidth + 1)
      out.push(el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + (el.className ? "." + el.className : "") +
        " " + el.scrollWidth + "px > " + el.clientWidth + "px");
  }
  return out.slice(0, 12);
})()`

// Text a model wrote without a space — a 195-character thought, a 244-character path —
// wraps in every field that shows it: at a phone's width and a desktop's, no page
// (agents, the agent, its replay, the audit log) is wider than the window, and no box in
// it hides text sideways.
func TestBrowserLongUnbrokenTextWraps(t *testing.T) {
	c := newChrome(t)
	e := newEnv(t)
	thought := strings.Repeat("x", 195)
	path := "notes/" + strings.Repeat("p", 238)
	e.script(reply("write_file", map[string]string{"path": path, "contents": strings.Repeat("c", 300) + "\n"}, &thought),
		reply("read_file", map[string]string{"path": path}, &thought))
	a := e.create("long")
	p := e.waitState(a.ID, api.StateAwaitingDecision).Pending
	must(t, len(p.Thoughts.Text) == 195 && len(path) == 244, "the script is not what the test means")
	b := e.browser()
	b.login(e)
	form := map[string][]string{"csrf": {b.csrf()}, "proposal_id": {p.ID}, "hash": {p.Hash}, "kind": {"approve"}}
	must(t, b.post("/agents/"+a.ID+"/decide", form).StatusCode == 200, "approving the write failed")
	e.waitState(a.ID, api.StateAwaitingDecision) // the read waits, with the same thought
	login, _ := e.con.LoginURL()
	c.do("log in", chromedp.Navigate(login), chromedp.WaitVisible(chromedp.ID("agents")))
	for _, size := range []struct {
		name   string
		width  int64
		height int64
		mobile bool
	}{{"phone", 390, 844, true}, {"desktop", 1280, 900, false}} {
		opts := []chromedp.EmulateViewportOption{chromedp.EmulateScale(1)}
		if size.mobile {
			opts = append(opts, chromedp.EmulateMobile)
		}
		c.do("a "+size.name+" screen", chromedp.EmulateViewport(size.width, size.height, opts...))
		for _, page := range []string{"", "agents/" + a.ID, "runs/" + a.ID, "audit"} {
			c.do("open /"+page, chromedp.Navigate(e.base+page), chromedp.WaitVisible(chromedp.ID("main")))
			if strings.HasPrefix(page, "agents/") {
				eval[bool](c, `(document.querySelectorAll("details").forEach(d => d.open = true), true)`)
			}
			if over := eval[[]string](c, overflowJS); len(over) > 0 {
				t.Errorf("/%s on a %s (%dpx) is too wide:\n  %s", page, size.name, size.width, strings.Join(over, "\n  "))
			}
		}
		c.do("back to the agent", chromedp.Navigate(e.base+"agents/"+a.ID), chromedp.WaitVisible(chromedp.ID("main")))
		c.shot("long-text-agent-" + size.name)
	}
}
