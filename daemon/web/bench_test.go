package web

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentd/agentd/api"
)

// createIdle makes n agents that do not start a run.
func (e *env) createIdle(n int) []string {
	e.t.Helper()
	no := false
	ids := make([]string, n)
	for i := range n {
		a, err := e.sup.API().Runs.CreateAgent(context.Background(), api.CreateAgentRequest{Name: fmt.Sprintf("agent-%04d", i),
			Description: "bench", Goals: []string{"wait"}, Start: &no})
		if err != nil {
			e.t.Fatal(err)
		}
		ids[i] = a.ID
	}
	return ids
}

// BenchmarkAgentsPage1000 serves the agents page with 1,000 agents over loopback (its
// first page of agentsPageRows), from the request to the last byte. Target: ≤ 100 ms.
func BenchmarkAgentsPage1000(b *testing.B) {
	e := newEnv(b)
	e.createIdle(1000)
	br := e.loggedIn()
	if got := br.get("/"); got.StatusCode != 200 || strings.Count(got.Body, `<tr id="agent-`) != agentsPageRows {
		b.Fatalf("the page does not list a page of %d agents: %d", agentsPageRows, got.StatusCode)
	}
	cpu0 := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		if got := br.get("/"); got.StatusCode != 200 {
			b.Fatal(got.StatusCode)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/page")
	// CPU time (client and server are in this process) does not grow with the machine's
	// load the way wall time does on a shared box.
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/page")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkEventToDOM measures, in Chromium on loopback, from an agent's creation (the
// daemon publishes its event) to its row in the open agents page's DOM. It reports the
// p50 and p99. Target: p99 ≤ 200 ms.
func BenchmarkEventToDOM(b *testing.B) {
	c := newChrome(b)
	e := newEnv(b)
	login, _ := e.con.LoginURL()
	c.do("log in", chromedp.Navigate(login), chromedp.WaitVisible(chromedp.ID("agents")))
	// Each row's arrival time, by the page's own clock (the machine's, as Go's).
	eval[bool](c, `(window.__seen = {}, new MutationObserver(ms => { for (const m of ms) for (const n of m.addedNodes)
		if (n.id) window.__seen[n.id] = Date.now() }).observe(document.querySelector("#agents tbody"), {childList: true}), true)`)
	no := false
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		a, err := e.sup.API().Runs.CreateAgent(context.Background(), api.CreateAgentRequest{Name: fmt.Sprintf("bench-%05d", i),
			Description: "bench", Goals: []string{"wait"}, Start: &no})
		if err != nil {
			b.Fatal(err)
		}
		c.wait("the row", `window.__seen[`+js("agent-"+a.ID)+`] !== undefined`)
		at := eval[int64](c, `window.__seen[`+js("agent-"+a.ID)+`]`)
		lat = append(lat, time.UnixMilli(at).Sub(start))
	}
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(q(0.5), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
}
