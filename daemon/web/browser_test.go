package web

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/testutil"
)

// TestBrowserDecides drives the console in Chromium: log in with the token, see a
// proposal appear live, approve ×2 and see both run, send feedback, answer a question,
// pause a schedule, and keep a screenshot of each page.
func TestBrowserDecides(t *testing.T) {
	c := newChrome(t)
	e := newEnv(t)
	e.script(reply("write_file", map[string]string{"path": "a.txt", "contents": "one\n"}, nil),
		reply("write_file", map[string]string{"path": "b.txt", "contents": "two\n"}, nil),
		reply("write_file", map[string]string{"path": "c.txt", "contents": "three\n"}, nil),
		reply("ask_user", map[string]string{"question": "Which folder?"}, nil))
	e.createIdle(2) // company for the screenshot
	login, err := e.con.LoginURL()
	must(t, err == nil, "%v", err)
	c.do("log in", chromedp.Navigate(login), chromedp.WaitVisible(chromedp.ID("agents")))
	must(t, !strings.Contains(eval[string](c, "location.href"), "token"), "the token stays in the address bar")

	a := e.create("writer") // after the page loaded: its row must arrive over the stream
	row := "#agent-" + a.ID
	c.wait("the agent's row, live", `(document.querySelector(`+js(row)+`)||{}).textContent?.includes("decide: write_file")`)
	c.shot("agents")

	c.do("open the agent", chromedp.Click(chromedp.CSS(row+" a")), chromedp.WaitVisible(chromedp.ID("approve-n")))
	must(t, strings.Contains(eval[string](c, `document.getElementById("waiting").textContent`), "a.txt"), "the waiting proposal is not a.txt")
	c.shot("agent")

	c.do("approve ×2", chromedp.SetValue(chromedp.ID("count"), "2"), chromedp.Click(chromedp.ID("approve-n")))
	c.wait("the third write to wait", `document.getElementById("waiting")?.textContent.includes("c.txt")`)
	hist, _ := e.sup.API().Views.History(context.Background(), a.ID)
	must(t, len(hist) == 2 && hist[0].Outcome == "succeeded" && hist[1].Outcome == "succeeded", "approve ×2 did not run both: %+v", hist)
	c.do("reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("history")))
	must(t, eval[int](c, `document.querySelectorAll("#history .outcome-succeeded").length`) == 2, "the page does not show both executions")

	// More bytes than the daemon takes (4,001 two-byte characters) is flagged before sending.
	eval[bool](c, `(f => (f.value = "é".repeat(4001), f.dispatchEvent(new Event("input")), true))(document.getElementById("feedback"))`)
	must(t, eval[bool](c, `document.querySelector("#waiting .bytes.over")?.textContent.includes("the limit is 8000 bytes") && document.getElementById("send-feedback").disabled`),
		"too long a feedback is not flagged before sending")
	eval[bool](c, `(f => (f.value = "", f.dispatchEvent(new Event("input")), true))(document.getElementById("feedback"))`)
	c.do("send feedback", chromedp.SendKeys(chromedp.ID("feedback"), "use the docs folder"), chromedp.Click(chromedp.ID("send-feedback")))
	c.wait("the question", `document.getElementById("waiting")?.textContent.includes("Which folder?")`)
	c.shot("question")

	c.do("answer", chromedp.SendKeys(chromedp.ID("answer-text"), "docs/"), chromedp.Click(chromedp.ID("send-answer")))
	c.wait("finish to wait", `document.querySelector("#waiting .command")?.textContent === "finish"`)
	hist, _ = e.sup.API().Views.History(context.Background(), a.ID)
	must(t, len(hist) == 4 && hist[2].Outcome == "feedback" && strings.Contains(hist[3].Result, "docs/"), "feedback and answer: %+v", hist)

	s, err := e.mgr.AddSchedule(context.Background(), api.ScheduleRequest{Name: "nightly", Spec: "0 3 * * *", TimeZone: "Europe/Paris",
		Agent: a.ID, Goal: "tidy up"})
	must(t, err == nil, "%v", err)
	c.do("open schedules", chromedp.Navigate(e.base+"schedules"), chromedp.WaitVisible(chromedp.CSS("#schedule-"+s.ID+" button.pause")))
	must(t, strings.Contains(eval[string](c, `document.getElementById("schedules").textContent`), "03:00 CET"), "next fire times not in the schedule's zone:\n%s", c.html())
	c.do("pause it", chromedp.Click(chromedp.CSS("#schedule-"+s.ID+" button.pause")), chromedp.WaitVisible(chromedp.CSS("#schedule-"+s.ID+" button.resume")))
	got, _ := e.mgr.Schedule(context.Background(), s.ID)
	must(t, got.Paused, "the schedule is not paused")
	c.do("type a bad spec", chromedp.SendKeys(chromedp.ID("s-spec"), "61 * * * *"))
	c.wait("the spec refused as typed", `document.querySelector("#spec-check .bad")?.textContent.includes("61")`)
	eval[bool](c, `(document.getElementById("s-spec").value = "", true)`)
	c.do("fix it", chromedp.SendKeys(chromedp.ID("s-spec"), "*/30 9-17 * * 1-5"),
		chromedp.SendKeys(chromedp.ID("s-zone"), "Asia/Tokyo"))
	c.wait("the next fire times as typed", `document.querySelector("#spec-check .ok")?.textContent.includes("Asia/Tokyo")`)
	c.shot("schedules")
	c.do("add it", chromedp.SendKeys(chromedp.ID("s-name"), "office-hours"), chromedp.SendKeys(chromedp.ID("s-template"), "office"),
		chromedp.SendKeys(chromedp.ID("s-goal"), "check the inbox"), chromedp.Click(chromedp.ID("add-schedule")))
	c.wait("the new schedule", `document.getElementById("schedules")?.textContent.includes("office-hours")`)

	c.do("open the run's replay", chromedp.Navigate(e.base+"runs/"+a.ID), chromedp.WaitVisible(chromedp.ID("replay")))
	must(t, eval[int](c, `document.querySelectorAll("#replay > li.step").length`) >= 4, "the replay does not show the run's steps")
	c.shot("replay")

	for _, p := range []string{"memory", "teams", "audit", "doctor"} {
		c.do("open "+p, chromedp.Navigate(e.base+p), chromedp.WaitVisible(chromedp.ID("main")))
		c.shot(p)
	}
	must(t, c.dialogs.Load() == 0, "dialogs opened")
}

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
	b := e.loggedIn()
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

// chrome is a headless Chromium (Debian's chromium, which scripts/test.sh installs)
// driven over the DevTools protocol, with every JavaScript dialog counted: a dialog
// opening is a script the console let run.
type chrome struct {
	t       testing.TB
	ctx     context.Context
	dialogs atomic.Int32
}

// chromium finds the browser, or skips the test; under CI=true a missing browser fails
// it, so CI cannot pass without running the browser tests.
func chromium(t testing.TB) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium on PATH and CI=true: scripts/test.sh installs Debian's chromium package")
	}
	t.Skip("no chromium on PATH: install Debian's chromium (scripts/test.sh does) to run the browser tests")
	return ""
}

func newChrome(t testing.TB) *chrome {
	path := chromium(t)
	c := &chrome{t: t}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.WindowSize(1100, 900), chromedp.Flag("disable-gpu", true))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithListener(func(ev any) {
		if d, ok := ev.(*cdppage.EventJavascriptDialogOpening); ok {
			c.dialogs.Add(1)
			t.Errorf("a JavaScript dialog opened: %q", d.Message)
		}
	}))
	t.Cleanup(func() { cancel(); cancelA() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser, under no timeout
		t.Fatalf("starting %s: %v", path, err)
	}
	c.ctx = ctx
	return c
}

// tab opens another tab of the same browser: it shares the cookies, as a person's
// second tab does.
func (c *chrome) tab() *chrome {
	c.t.Helper()
	ctx, cancel := chromedp.NewContext(c.ctx)
	c.t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		c.t.Fatalf("opening a tab: %v", err)
	}
	return &chrome{t: c.t, ctx: ctx}
}

// do runs the steps within 20s; a failure shows the page as the browser had it.
func (c *chrome) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		c.t.Fatalf("%s: %v\npage:\n%s", what, err, c.html())
	}
}

// wait waits until the JavaScript expression is true.
func (c *chrome) wait(what, expr string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, 20*time.Second)
	defer cancel()
	for {
		_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr))
		if err == nil {
			return
		}
		// A form post navigates, which ends the poll (the target navigated, its context
		// is gone): poll again on the page it loads, until the deadline.
		if ctx.Err() == nil {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		c.t.Fatalf("waiting for %s (%s): %v\npage:\n%s", what, expr, err, c.html())
	}
}

func (c *chrome) html() string {
	ctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
	defer cancel()
	s, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML`))
	return s
}

// eval returns a JavaScript expression's value.
func eval[T any](c *chrome, expr string) T {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		c.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

var (
	shotsOnce sync.Once
	shotsDir  string
)

// screenshots is where the tests save screenshots: $AGENTD_LOGS/web-screenshots, else a
// directory under the system's temp dir; it outlives the test, which prints it.
func screenshots(t testing.TB) string {
	shotsOnce.Do(func() {
		base := os.Getenv("AGENTD_LOGS")
		if base == "" {
			base = os.TempDir()
		}
		shotsDir = filepath.Join(base, "web-screenshots")
		os.MkdirAll(shotsDir, 0o755)
	})
	return shotsDir
}

// shot saves a full-page PNG screenshot as name.png.
func (c *chrome) shot(name string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		c.t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(screenshots(c.t), name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		c.t.Fatal(err)
	}
	c.t.Logf("screenshot: %s", path)
}

// js quotes s as a JavaScript string literal.
func js(s string) string { return fmt.Sprintf("%q", s) }
