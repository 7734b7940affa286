package web

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/agentd/agentd/api"
)

func TestSpecCheck(t *testing.T) {
	e := newEnv(t)
	b := e.browser()
	b.login(e)
	tests := []struct {
		name, spec, zone string
		want             []string
	}{
		{"weekdays_in_paris", "0 9 * * 1-5", "Europe/Paris", []string{"Fires next (in Europe/Paris)", "09:00 CE"}},
		{"every_90m", "@every 90m", "UTC", []string{"Fires next"}},
		{"spec_names_its_zone", "CRON_TZ=Asia/Tokyo 30 2 * * *", "", []string{"Asia/Tokyo", "02:30 JST"}},
		{"minute_out_of_range", "61 * * * *", "", []string{`class="bad"`, "61"}},
		{"empty", "", "", []string{`class="bad"`, "is empty"}},
		{"unknown_zone", "0 9 * * *", "Mars/Olympus", []string{`class="bad"`, "not an IANA zone"}},
		{"hostile_spec_is_text", `<script>alert(1)</script>`, "", []string{`class="bad"`, "&lt;script&gt;"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := b.get("/schedules/check?" + url.Values{"spec": {tt.spec}, "time_zone": {tt.zone}}.Encode())
			must(t, got.StatusCode == 200, "status %d", got.StatusCode)
			for _, w := range tt.want {
				must(t, strings.Contains(got.Body, w), "%q does not say %q:\n%s", tt.spec, w, got.Body)
			}
			must(t, !strings.Contains(got.Body, "<script>"), "a raw script tag:\n%s", got.Body)
		})
	}
}

func TestAddScheduleAndReplay(t *testing.T) {
	e := newEnv(t)
	b := e.browser()
	b.login(e)
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
