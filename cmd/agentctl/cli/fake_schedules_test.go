package cli_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/agentd/agentd/daemon/client"
)

// The fake daemon's schedules: "digest" (id s-1), weekdays at 9 in Europe/Berlin, with
// two records.
func cannedSchedule() *client.Schedule {
	berlin, _ := time.LoadLocation("Europe/Berlin")
	s := &client.Schedule{ID: "s-1", Name: "digest", Spec: "0 9 * * 1-5", TimeZone: "Europe/Berlin", Template: "digest",
		Goal: "summarize what changed in ~/notes", Autonomy: client.Autonomy{Mode: "auto"},
		Budget: client.Budget{MaxSteps: 3, MaxTime: "15m0s"}, Delivery: "agentctl", Concurrency: "skip", Missed: "run_once",
		CreatedAt: fixedTime, LastFired: time.Date(2026, 11, 20, 9, 0, 0, 0, berlin)}
	for d := 23; d <= 27; d++ {
		s.NextTimes = append(s.NextTimes, time.Date(2026, 11, d, 9, 0, 0, 0, berlin))
	}
	s.Next = s.NextTimes[0]
	return s
}

func cannedScheduleRuns() []client.ScheduleRun {
	return []client.ScheduleRun{
		{ID: "f-2", ScheduleID: "s-1", Scheduled: time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC), Started: fixedTime, Ended: fixedTime,
			Outcome: "budget_exhausted", Reason: "the run made 3 steps, its step budget", AgentID: "a-7", RunID: "r-7", Steps: 3, Tokens: 1234},
		{ID: "f-1", ScheduleID: "s-1", Scheduled: time.Date(2026, 11, 19, 8, 0, 0, 0, time.UTC), Outcome: "missed",
			Reason: "the daemon was not running (or the machine slept) at the scheduled time; missed-run policy is skip"},
	}
}

func (f *fakeDaemon) schedule(r *http.Request) (*client.Schedule, error) {
	s := cannedSchedule()
	if ref := r.PathValue("ref"); ref != s.ID && ref != s.Name {
		return nil, &httpError{http.StatusNotFound, fmt.Sprintf("no schedule %q: see `agentctl schedule ls`", ref)}
	}
	return s, nil
}

func (f *fakeDaemon) scheduleRoutes(handle func(string, func(*http.Request) (any, error))) {
	handle("GET /v0/schedules", func(*http.Request) (any, error) { return []*client.Schedule{cannedSchedule()}, nil })
	handle("POST /v0/schedules", func(r *http.Request) (any, error) {
		var req client.ScheduleRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			return nil, &httpError{http.StatusBadRequest, err.Error()}
		}
		if req.Spec == "TZ=0" {
			return nil, &httpError{http.StatusBadRequest, `bad schedule spec: "TZ=0" names an unknown time zone "0": use an IANA name such as America/New_York`}
		}
		s := cannedSchedule()
		s.ID, s.Name, s.Spec, s.Goal, s.Autonomy, s.LastFired = "s-2", req.Name, req.Spec, req.Goal, req.Autonomy, fixedTime
		return s, nil
	})
	handle("GET /v0/schedules/{ref}", func(r *http.Request) (any, error) {
		s, err := f.schedule(r)
		if s != nil { // totals come with the single-schedule call, from the run records
			s.Runs, s.Steps, s.Tokens = 1, 3, 1234
		}
		return s, err
	})
	handle("DELETE /v0/schedules/{ref}", func(r *http.Request) (any, error) { _, err := f.schedule(r); return nil, err })
	handle("POST /v0/schedules/{ref}/pause", func(r *http.Request) (any, error) {
		s, err := f.schedule(r)
		if s != nil {
			s.Paused, s.Next, s.NextTimes = true, time.Time{}, nil
		}
		return s, err
	})
	handle("POST /v0/schedules/{ref}/resume", func(r *http.Request) (any, error) { return f.schedule(r) })
	handle("POST /v0/schedules/{ref}/run", func(r *http.Request) (any, error) {
		if _, err := f.schedule(r); err != nil {
			return nil, err
		}
		return &client.ScheduleRun{ID: "f-3", ScheduleID: "s-1", Scheduled: fixedTime, Started: fixedTime, Manual: true,
			Outcome: "started", RunID: "r-8", AgentID: "a-8"}, nil
	})
	handle("GET /v0/schedules/{ref}/history", func(r *http.Request) (any, error) {
		if _, err := f.schedule(r); err != nil {
			return nil, err
		}
		runs := cannedScheduleRuns()
		if r.URL.Query().Get("limit") == "1" {
			runs = runs[:1]
		}
		return runs, nil
	})
}
