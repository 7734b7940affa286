package web

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

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
