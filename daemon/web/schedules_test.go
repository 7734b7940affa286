package web

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentd/agentd/api"
)

func TestSpecCheck(t *testing.T) {
	checkForms(t, []formCheck{
		{"weekdays_in_paris", url.Values{"spec": {"0 9 * * 1-5"}, "time_zone": {"Europe/Paris"}}, []string{"Fires next (in Europe/Paris)", "09:00 CE"}},
		{"every_90m", url.Values{"spec": {"@every 90m"}, "time_zone": {"UTC"}}, []string{"Fires next"}},
		{"spec_names_its_zone", url.Values{"spec": {"CRON_TZ=Asia/Tokyo 30 2 * * *"}}, []string{"Asia/Tokyo", "02:30 JST"}},
		{"minute_out_of_range", url.Values{"spec": {"61 * * * *"}}, []string{`class="bad"`, "61"}},
		{"empty", url.Values{"spec": {""}}, []string{`class="bad"`, "is empty"}},
		{"unknown_zone", url.Values{"spec": {"0 9 * * *"}, "time_zone": {"Mars/Olympus"}}, []string{`class="bad"`, "not an IANA zone"}},
		{"hostile_spec_is_text", url.Values{"spec": {`<script>alert(1)</script>`}}, []string{`class="bad"`, "&lt;script&gt;"}},
	})
}

// formCheck is a schedule form's fields sent to the check endpoint and what its answer says.
type formCheck struct {
	name string
	form url.Values
	want []string
}

// checkForms sends each form to the check endpoint, as the page does while it is typed,
// and checks the answer says what it should, with what the person typed as text.
func checkForms(t *testing.T, tests []formCheck) {
	e := newEnv(t)
	b := e.loggedIn()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := b.get("/schedules/check?" + tt.form.Encode())
			must(t, got.StatusCode == 200, "status %d", got.StatusCode)
			for _, w := range tt.want {
				must(t, strings.Contains(got.Body, w), "%v does not say %q:\n%s", tt.form, w, got.Body)
			}
			must(t, !strings.Contains(got.Body, "<script>"), "a raw script tag:\n%s", got.Body)
		})
	}
}

func TestAddScheduleAndReplay(t *testing.T) {
	e := newEnv(t)
	b := e.loggedIn()
	csrf := b.csrf()
	a := e.create("sched")
	got := b.post("/schedules", url.Values{"csrf": {csrf}, "name": {"Bad Name"}, "spec": {"0 9 * * *"}, "agent": {a.ID}, "goal": {"g"}})
	must(t, strings.Contains(got.Body, "not added: name"), "a bad name was not refused with the daemon's reason:\n%s", got.Body)
	got = b.post("/schedules", url.Values{"csrf": {csrf}, "name": {"morning"}, "spec": {"0 9 * * *"}, "time_zone": {"Europe/Paris"}, "agent": {a.ID}, "goal": {"say hi"}})
	must(t, strings.Contains(got.Body, "added morning") && strings.Contains(got.Body, "09:00 CE"), "the schedule was not added:\n%s", got.Body)
	ss, _ := e.mgr.Schedules(context.Background())
	must(t, len(ss) == 1 && ss[0].TimeZone == "Europe/Paris", "schedules: %+v", ss)

	// Its run proposes finish; approved, the run ends and has a replay.
	p := e.waitState(a.ID, api.StateAwaitingDecision).Pending
	_, err := e.sup.API().Decisions.Decide(context.Background(), a.ID, api.DecideRequest{ProposalID: p.ID, Kind: api.DecisionApprove, By: "t", Source: "agentctl"})
	must(t, err == nil, "%v", err)
	e.waitState(a.ID, api.StateIdle)
	got = b.get("/agents/" + a.ID)
	must(t, strings.Contains(got.Body, `href="/runs/`), "the agent page links no run:\n%s", got.Body)
	rp := b.get("/runs/" + a.ID)
	must(t, rp.StatusCode == 200 && strings.Contains(rp.Body, `id="replay"`) && strings.Contains(rp.Body, "finish"), "replay:\n%s", rp.Body)
}

// The wake conditions are checked as they are typed, through the spec's check endpoint,
// by the daemon's own check of their form; what the person typed comes back as text.
func TestWhenCheck(t *testing.T) {
	tests := []formCheck{
		{"none", url.Values{}, []string{`class="ok"`, "every firing wakes the model"}},
		{"changed_and_url", url.Values{"when_changed": {"inbox\n notes/ \n"}, "when_url": {"https://example.com/feed"}, "when_combine": {"all"}},
			[]string{`class="ok"`, "wakes the model when --when-changed inbox --when-changed notes --when-url https://example.com/feed --when-all"}},
		{"command_and_policy", url.Values{"when": {"test -s inbox/new"}, "when_failed": {"wake"}, "when_failed_after": {"5"}},
			[]string{`class="ok"`, "--when &#39;test -s inbox/new&#39; --when-failed wake --when-failed-after 5"}},
		{"command_with_network", url.Values{"when": {"curl -fs https://example.com/feed"}, "when_network": {"on"}},
			[]string{`class="ok"`, "--when-network"}},
		{"network_without_a_command", url.Values{"when_changed": {"inbox"}, "when_network": {"on"}}, []string{`class="bad"`, "--when-network lets the --when commands reach the network"}},
		{"path_leaves", url.Values{"when_changed": {"../etc"}}, []string{`class="bad"`, "leaves the workspace"}},
		{"url_scheme", url.Values{"when_url": {"file:///etc/passwd"}}, []string{`class="bad"`, "only http and https"}},
		{"all_without_conditions", url.Values{"when_combine": {"all"}}, []string{`class="bad"`, "none is given"}},
		{"bad_count", url.Values{"when_changed": {"inbox"}, "when_failed_after": {"many"}}, []string{`class="bad"`, "whole number"}},
		{"hostile_path_is_text", url.Values{"when_changed": {"<script>alert(1)</script>"}}, []string{"&lt;script&gt;"}},
	}
	for _, tt := range tests {
		tt.form.Set("part", "when")
	}
	checkForms(t, tests)
}

// The form's conditions reach the schedule, the check command's network too, and the
// daemon's checks against the agent (a path that does not exist) refuse it with their
// reason.
func TestAddScheduleWithConditions(t *testing.T) {
	e := newEnv(t)
	b := e.loggedIn()
	csrf := b.csrf()
	a := e.create("watcher")
	form := url.Values{"csrf": {csrf}, "name": {"triage"}, "spec": {"0 9 * * *"}, "agent": {a.ID}, "goal": {"triage"}, "when_changed": {"inbox"}}
	got := b.post("/schedules", form)
	must(t, strings.Contains(got.Body, "not added: when: --when-changed inbox: it does not exist"), "a missing path was not refused:\n%s", got.Body)
	must(t, os.MkdirAll(filepath.Join(a.Workspace, "inbox"), 0o755) == nil, "mkdir")
	got = b.post("/schedules", form)
	must(t, strings.Contains(got.Body, "added triage"), "not added:\n%s", got.Body)
	s, err := e.mgr.Schedule(context.Background(), "triage")
	must(t, err == nil && s.When != nil && s.When.Changed[0] == "inbox", "schedule: %+v, %v", s, err)

	// The check command may be given the network, as agentctl's and chat's --when-network do.
	w, err := whenOf(url.Values{"when": {"curl -fs https://example.com/feed"}, "when_network": {"on"}})
	must(t, err == nil && w != nil && w.Network, "the form's network box does not reach the conditions: %+v, %v", w, err)
}

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
