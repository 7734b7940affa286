package web

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/testutil"
)

// TestBrowserPhoneAndKeyboard reads an agent's page on a phone-sized screen (nothing
// wider than the screen) and decides with the keyboard alone: Tab to Approve, Enter.
func TestBrowserPhoneAndKeyboard(t *testing.T) {
	c := newChrome(t)
	e := newEnv(t)
	e.script(reply("write_file", map[string]string{"path": "notes/a-rather-long-file-name-for-a-small-screen.md", "contents": "# Notes\n"}, nil))
	a := e.create("phone")
	e.waitState(a.ID, api.StateAwaitingDecision)
	login, _ := e.con.LoginURL()
	c.do("log in on a phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateScale(2)),
		chromedp.Navigate(login), chromedp.WaitVisible(chromedp.ID("agents")))
	for _, p := range []string{"", "agents/" + a.ID, "schedules"} {
		c.do("open /"+p, chromedp.Navigate(e.base+p), chromedp.WaitVisible(chromedp.ID("main")))
		must(t, eval[bool](c, `document.documentElement.scrollWidth <= window.innerWidth + 1`),
			"/%s is wider than the phone: %v > %v", p, eval[int](c, `document.documentElement.scrollWidth`), eval[int](c, `window.innerWidth`))
	}
	c.do("back to the agent", chromedp.Navigate(e.base+"agents/"+a.ID), chromedp.WaitVisible(chromedp.ID("approve")))
	c.shot("agent-phone")

	for i := 0; i < 60 && eval[string](c, `document.activeElement?.id ?? ""`) != "approve"; i++ {
		c.do("tab", chromedp.KeyEvent("\t"))
	}
	must(t, eval[string](c, `document.activeElement?.id ?? ""`) == "approve", "Tab never reached Approve")
	c.do("enter", chromedp.KeyEvent("\r"))
	must(t, testutil.Wait(10e9, func() bool {
		h, _ := e.sup.API().Views.History(context.Background(), a.ID)
		return len(h) == 1 && h[0].Outcome == "succeeded"
	}), "Enter on Approve did not run the write")
}
