package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	ollama "github.com/ollama/ollama/api"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/run"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/agenttest"
	"github.com/agentd/agentd/internal/testutil"
)

// A schedule fires on the injected clock; its run, in auto mode against the fake Ollama,
// stops at its 3-step budget, and the run record says so.
func TestFiringRunsWithinBudget(t *testing.T) {
	h := newHarness(t, at(8, 59))
	h.listForever()
	s := h.add(api.ScheduleRequest{Name: "digest", Spec: "0 9 * * 1-5", Template: "digest", Goal: "summarize what changed",
		Autonomy: api.Autonomy{Mode: "auto"}, Budget: api.Budget{MaxSteps: 3}})
	if len(s.NextTimes) != 5 || !s.NextTimes[0].Equal(at(9, 0)) || !s.NextTimes[1].Equal(at(9, 0).AddDate(0, 0, 1)) {
		t.Fatalf("next fire times = %v, want 5 weekdays at 09:00 from today", s.NextTimes)
	}
	h.clock.Set(at(9, 0))
	runs := h.waitHistory("digest", "a budget_exhausted run", func(r []api.ScheduleRun) bool {
		return len(r) == 1 && r[0].Outcome == "budget_exhausted"
	})
	r := runs[0]
	if r.Steps != 3 || r.Tokens <= 0 || r.RunID == "" || r.AgentID == "" || !r.Scheduled.Equal(at(9, 0)) || r.Ended.IsZero() ||
		!strings.Contains(r.Reason, "3 steps") {
		t.Errorf("run record = %+v, want 3 steps, tokens, its agent and run, ended", r)
	}
	a, err := api.AgentRoute.Do(context.Background(), h.c, r.AgentID, api.None{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(a.Name, "digest-") || a.State != api.StateIdle || !strings.Contains(a.StateReason, "budget exhausted") {
		t.Errorf("the run's agent = %s %s (%s)", a.Name, a.State, a.StateReason)
	}
	if eps, _ := api.HistoryRoute.Do(context.Background(), h.c, a.ID, api.None{}); len(eps) != 3 {
		t.Errorf("%d episodes, want 3", len(eps))
	}
	got, err := api.ScheduleRoute.Do(context.Background(), h.c, "digest", api.None{})
	if err != nil || !got.LastFired.Equal(at(9, 0)) || !got.Next.Equal(at(9, 0).AddDate(0, 0, 1)) || len(got.Running) != 0 {
		t.Errorf("schedule after its run = %+v, %v", got, err)
	}
	// Token totals: the schedule's, the run's and the agent's agree.
	if got.Runs != 1 || got.Steps != 3 || got.Tokens != r.Tokens || a.PromptTokens+a.EvalTokens != r.Tokens {
		t.Errorf("schedule totals = %d runs, %d steps, %d tokens; run record %d tokens; agent %d tokens",
			got.Runs, got.Steps, got.Tokens, r.Tokens, a.PromptTokens+a.EvalTokens)
	}
	if len(a.Runs) != 1 || a.Runs[0].ID != r.RunID || a.Runs[0].Tokens != r.Tokens || a.Runs[0].Steps != 3 {
		t.Errorf("agent's runs = %+v, want its one run with %d tokens", a.Runs, r.Tokens)
	}
}

// run-now gives an existing agent the goal; skip-if-running records a second firing as
// skipped while the first run waits for a person.
func TestRunNowExistingAgentSkipsWhileRunning(t *testing.T) {
	h := newHarness(t, at(12, 0))
	h.fake.SetDefault(func(*ollama.ChatRequest) string {
		return reply("write_file", map[string]string{"path": "a", "contents": "b"})
	})
	ctx := context.Background()
	if _, err := api.CreateAgentRoute.Do(ctx, h.c, "", api.CreateAgentRequest{Name: "keeper", Description: "keeps notes", Start: new(bool)}); err != nil {
		t.Fatal(err)
	}
	h.add(api.ScheduleRequest{Name: "keep", Spec: "@daily", Agent: "keeper", Goal: "write a", Budget: api.Budget{MaxTime: "1h"}})
	first, err := api.RunScheduleRoute.Do(ctx, h.c, "keep", api.None{})
	if err != nil || first.Outcome != "started" || first.RunID == "" || !first.Manual {
		t.Fatalf("run-now = %+v, %v", first, err)
	}
	a, _ := api.AgentRoute.Do(ctx, h.c, "keeper", api.None{})
	if a.RunID != first.RunID || a.Task != "write a" {
		t.Errorf("keeper's run = %s %q, want the firing's run with the goal", a.RunID, a.Task)
	}
	second, err := api.RunScheduleRoute.Do(ctx, h.c, "keep", api.None{})
	if err != nil || second.Outcome != "skipped" || !strings.Contains(second.Reason, "still running") {
		t.Fatalf("second run-now while the first runs = %+v, %v; want skipped", second, err)
	}
	s, _ := api.ScheduleRoute.Do(ctx, h.c, "keep", api.None{})
	if len(s.Running) != 1 || s.Running[0] != first.RunID {
		t.Errorf("running = %v, want [%s]", s.Running, first.RunID)
	}
	// The person stops the run: its record says so.
	if _, err := api.StopRoute.Do(ctx, h.c, "keeper", api.None{}); err != nil {
		t.Fatal(err)
	}
	h.waitHistory("keep", "the stopped run's end", func(r []api.ScheduleRun) bool {
		for _, x := range r {
			if x.ID == first.ID {
				return x.Outcome == "failed" && strings.Contains(x.Reason, "stopped")
			}
		}
		return false
	})
}

// After downtime, missed firings are recorded as missed, and each missed-run policy runs
// what it should.
func TestRestartHandlesMissedFiringsPerPolicy(t *testing.T) {
	h := newHarness(t, at(8, 30))
	h.finishAtOnce()
	for _, p := range []string{"skip", "run_once", "run_if_within=2h", "run_if_within=10m"} {
		h.add(api.ScheduleRequest{Name: "m-" + strings.NewReplacer("=", "-").Replace(p), Spec: "0 * * * *", Template: "hourly",
			Goal: "check", Missed: p, Autonomy: api.Autonomy{Mode: "auto", Steps: 1}})
	}
	h.stopManager() // the daemon goes down at 08:30…
	h.clock.Set(at(12, 30))
	h.startManager() // …and comes back at 12:30: 09:00, 10:00, 11:00 and 12:00 were missed
	want := map[string]string{
		"m-skip":              "missed missed missed missed",
		"m-run_once":          "missed missed missed finished",
		"m-run_if_within-2h":  "missed missed missed finished",
		"m-run_if_within-10m": "missed missed missed missed",
	}
	for name, w := range want {
		runs := h.waitHistory(name, w, func(r []api.ScheduleRun) bool { return outcomes(r) == w })
		if !runs[len(runs)-1].Scheduled.Equal(at(9, 0)) || !runs[0].Scheduled.Equal(at(12, 0)) {
			t.Errorf("%s: records from %v to %v, want 09:00 to 12:00", name, runs[len(runs)-1].Scheduled, runs[0].Scheduled)
		}
		if strings.HasPrefix(w, "missed") && !strings.Contains(runs[len(runs)-1].Reason, "not running") {
			t.Errorf("%s: missed reason = %q", name, runs[len(runs)-1].Reason)
		}
	}
	// The next firing is on time again.
	s, err := api.ScheduleRoute.Do(context.Background(), h.c, "m-skip", api.None{})
	if err != nil || !s.Next.Equal(at(13, 0)) {
		t.Errorf("next after the restart = %v, %v; want 13:00", s.Next, err)
	}
}

// A scheduled run that was going when the daemon stopped has its end recorded after the
// restart, though the new scheduler never started it.
func TestRunEndAfterRestartIsRecorded(t *testing.T) {
	h := newHarness(t, at(10, 0))
	h.fake.SetDefault(func(*ollama.ChatRequest) string {
		return reply("write_file", map[string]string{"path": "a", "contents": "b"})
	})
	h.add(api.ScheduleRequest{Name: "slow", Spec: "@daily", Template: "slow", Goal: "write"})
	rec, err := api.RunScheduleRoute.Do(context.Background(), h.c, "slow", api.None{})
	if err != nil || rec.Outcome != "started" {
		t.Fatalf("run-now = %+v, %v", rec, err)
	}
	h.stopManager()
	h.startManager()
	if _, err := api.StopRoute.Do(context.Background(), h.c, rec.AgentID, api.None{}); err != nil {
		t.Fatal(err)
	}
	h.waitHistory("slow", "the end of the run started before the restart", func(r []api.ScheduleRun) bool {
		return len(r) == 1 && r[0].Outcome == "failed" && !r[0].Ended.IsZero()
	})
}

// Every bad spec gets a 400 naming the problem, including inputs robfig/cron panics on;
// the daemon stays up and stores nothing.
func TestBadSpecsThroughAPI(t *testing.T) {
	h := newHarness(t, at(10, 0))
	ctx := context.Background()
	corpus := map[string]string{
		"TZ=0":                                  `unknown time zone "0"`,
		"CRON_TZ=Asia/Tokyo":                    "nothing after CRON_TZ=Asia/Tokyo",
		"TZ=":                                   "without a zone",
		"CRON_TZ=Mars/Olympus 0 9 * * *":        `unknown time zone "Mars/Olympus"`,
		"":                                      "is empty",
		"   ":                                   "is empty",
		"* * * *":                               "has 4 fields",
		"* * * * * * *":                         "has 7 fields",
		"61 * * * *":                            "minute field",
		"0 24 * * *":                            "hour field",
		"0 9 0 * *":                             "day-of-month field",
		"0 9 * 13 *":                            "month field",
		"0 9 * * 8":                             "day-of-week field",
		"0 9 * * mon-fri-sat":                   "day-of-week field",
		"*/0 * * * *":                           "step",
		"5-1 * * * *":                           "runs backwards",
		"-1 * * * *":                            "minute field",
		"0 9 31 2 *":                            "never fires",
		"@reboot":                               "unknown descriptor",
		"@every":                                "needs one duration",
		"@every 10s":                            "at least 1m",
		"@every -5m":                            "positive",
		"@every banana":                         "not a duration",
		"@daily 9":                              "takes nothing",
		"FOO=bar 0 9 * * *":                     `unknown "FOO="`,
		"* * * * * *":                           "seconds field",
		strings.Repeat("1,", 150) + "1 * * * *": "too long",
	}
	for spec, want := range corpus {
		_, err := api.AddScheduleRoute.Do(ctx, h.c, "", api.ScheduleRequest{Name: "bad", Spec: spec, Template: "t", Goal: "g"})
		var ae *api.APIError
		if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || !strings.Contains(ae.Message, want) ||
			!strings.HasPrefix(ae.Message, "bad schedule spec") {
			t.Errorf("spec %q: err = %v, want a 400 saying %q", spec, err, want)
		}
	}
	if _, err := api.StatusRoute.Do(ctx, h.c, "", api.None{}); err != nil {
		t.Fatalf("daemon not answering after the corpus: %v", err)
	}
	if list, err := api.SchedulesRoute.Do(ctx, h.c, "", api.None{}); err != nil || len(list) != 0 {
		t.Errorf("schedules after bad requests = %+v, %v; want none", list, err)
	}
}

// Every other bad field is a 400 naming it; nothing is stored.
func TestBadScheduleRequests(t *testing.T) {
	h := newHarness(t, at(10, 0))
	ctx := context.Background()
	api.CreateAgentRoute.Do(ctx, h.c, "", api.CreateAgentRequest{Name: "keeper", Description: "d", Start: new(bool)})
	ok := api.ScheduleRequest{Name: "ok", Spec: "@daily", Template: "t", Goal: "g"}
	tests := []struct {
		name string
		edit func(r *api.ScheduleRequest)
		want string
	}{
		{"no_name", func(r *api.ScheduleRequest) { r.Name = "" }, "name is required"},
		{"bad_name", func(r *api.ScheduleRequest) { r.Name = "Nightly Digest" }, `name "Nightly Digest"`},
		{"no_target", func(r *api.ScheduleRequest) { r.Template = "" }, "no target"},
		{"both_targets", func(r *api.ScheduleRequest) { r.Agent = "keeper" }, "not both"},
		{"unknown_agent", func(r *api.ScheduleRequest) { r.Template, r.Agent = "", "ghost" }, `no agent "ghost"`},
		{"bad_template", func(r *api.ScheduleRequest) { r.Template = "Has Space" }, `template "Has Space"`},
		{"empty_goal", func(r *api.ScheduleRequest) { r.Goal = " " }, "goal is empty"},
		{"slack_channel_name", func(r *api.ScheduleRequest) { r.Delivery = "slack:#general" }, "PLATFORM:CHANNEL_ID"},
		{"delivery_without_channel", func(r *api.ScheduleRequest) { r.Delivery = "slack" }, "PLATFORM:CHANNEL_ID"},
		{"discord_delivery_without_bot", func(r *api.ScheduleRequest) { r.Delivery = "discord:123" }, "no chat bot is enabled"},
		{"bad_concurrency", func(r *api.ScheduleRequest) { r.Concurrency = "sometimes" }, "unknown concurrency policy"},
		{"bad_missed", func(r *api.ScheduleRequest) { r.Missed = "run_if_within" }, "needs a positive window"},
		{"bad_missed_window", func(r *api.ScheduleRequest) { r.Missed = "run_if_within=soon" }, `"soon" is not a duration`},
		{"bad_zone", func(r *api.ScheduleRequest) { r.TimeZone = "Europe/Atlantis" }, "unknown time zone"},
		{"two_zones", func(r *api.ScheduleRequest) { r.Spec, r.TimeZone = "CRON_TZ=Asia/Tokyo @daily", "Europe/Berlin" }, "give one"},
		{"auto_without_steps", func(r *api.ScheduleRequest) { r.Autonomy.Mode = "auto" }, "needs a number of steps"},
		{"patterns_without_any", func(r *api.ScheduleRequest) { r.Autonomy.Mode = "patterns" }, "at least one allow pattern"},
		{"bad_pattern", func(r *api.ScheduleRequest) {
			r.Autonomy = api.Autonomy{Mode: "patterns", Allow: []string{"read_file(unclosed"}}
		}, "allow pattern"},
		{"allow_without_patterns", func(r *api.ScheduleRequest) { r.Autonomy.Allow = []string{"read_file(*)"} }, "go with autonomy mode patterns"},
		{"bad_mode", func(r *api.ScheduleRequest) { r.Autonomy.Mode = "yolo" }, `autonomy mode "yolo"`},
		{"negative_steps", func(r *api.ScheduleRequest) { r.Budget.MaxSteps = -1 }, "max_steps -1"},
		{"bad_max_time", func(r *api.ScheduleRequest) { r.Budget.MaxTime = "an hour" }, `max_time "an hour"`},
		{"tiny_max_time", func(r *api.ScheduleRequest) { r.Budget.MaxTime = "1ms" }, "at least 1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := ok
			tt.edit(&req)
			_, err := api.AddScheduleRoute.Do(ctx, h.c, "", req)
			var ae *api.APIError
			if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || !strings.Contains(ae.Message, tt.want) {
				t.Errorf("err = %v, want a 400 saying %q", err, tt.want)
			}
		})
	}
	h.add(ok)
	if _, err := api.AddScheduleRoute.Do(ctx, h.c, "", ok); !errors.Is(err, api.ErrConflict) {
		t.Errorf("a second schedule named ok: err = %v, want conflict", err)
	}
	if list, _ := api.SchedulesRoute.Do(ctx, h.c, "", api.None{}); len(list) != 1 {
		t.Errorf("%d schedules stored, want 1", len(list))
	}
}

func TestPauseResumeRemove(t *testing.T) {
	h := newHarness(t, at(8, 0))
	ctx := context.Background()
	h.add(api.ScheduleRequest{Name: "p", Spec: "CRON_TZ=Europe/Berlin 30 2 * * *", Template: "p", Goal: "g"})
	s, err := api.PauseScheduleRoute.Do(ctx, h.c, "p", api.None{})
	if err != nil || !s.Paused || !s.Next.IsZero() {
		t.Fatalf("pause = %+v, %v", s, err)
	}
	if _, err := api.PauseScheduleRoute.Do(ctx, h.c, "p", api.None{}); !errors.Is(err, api.ErrConflict) {
		t.Errorf("pausing twice: err = %v, want conflict", err)
	}
	h.clock.Set(at(12, 0))
	s, err = api.ResumeScheduleRoute.Do(ctx, h.c, "p", api.None{})
	berlin, _ := time.LoadLocation("Europe/Berlin")
	if err != nil || s.Paused || s.TimeZone != "Europe/Berlin" || !s.Next.Equal(time.Date(2026, 11, 24, 2, 30, 0, 0, berlin)) {
		t.Fatalf("resume = %+v, %v", s, err)
	}
	if runs, _ := api.ScheduleHistoryRoute.Do(ctx, h.c, "p", api.ScheduleHistoryQuery{Limit: 0}); len(runs) != 0 {
		t.Errorf("firings while paused were recorded: %+v", runs)
	}
	if err := api.RemoveScheduleRoute.Send(ctx, h.c, "p", api.None{}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.ScheduleRoute.Do(ctx, h.c, "p", api.None{}); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("removed schedule: err = %v, want not found", err)
	}
}

// panicky is an Agents whose every run start panics.
type panicky struct{ Agents }

func (panicky) CreateRun(context.Context, api.CreateAgentRequest, run.Options) (*api.Agent, error) {
	panic("boom")
}

// A panic in a run's start is recovered and recorded as a failed firing.
func TestPanicInStartIsRecorded(t *testing.T) {
	h := newHarness(t, at(10, 0))
	h.add(api.ScheduleRequest{Name: "boom", Spec: "@daily", Template: "boom", Goal: "g"})
	h.stopManager()
	m := New(Options{Store: h.st, Agents: panicky{agenttest.Of(h.sup)}, Clock: h.clock, Local: time.UTC})
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer m.Stop()
	rec, err := m.RunSchedule(context.Background(), "boom")
	if err != nil || rec.Outcome != "failed" || !strings.Contains(rec.Reason, "panicked: boom") {
		t.Fatalf("run-now = %+v, %v; want failed with the panic", rec, err)
	}
	var runs []api.ScheduleRun
	h.st.View(context.Background(), func(tx *store.Tx) (err error) { runs, err = tx.ScheduleRuns(rec.ScheduleID, 0); return err })
	if len(runs) != 1 || runs[0].Outcome != "failed" {
		t.Errorf("stored records = %+v", runs)
	}
}

// A scheduled run that goes round a loop has nobody to ask: the watchdog stops it, and
// the firing's record says the watchdog stopped it and which loop it saw.
func TestWatchdogStopsALoopingFiring(t *testing.T) {
	h := newHarness(t, at(8, 59))
	h.loopForever()
	h.add(api.ScheduleRequest{Name: "tidy", Spec: "0 9 * * *", Template: "tidy", Goal: "tidy the notes",
		Autonomy: api.Autonomy{Mode: "auto", Steps: 20}})
	h.clock.Set(at(9, 0))
	runs := h.waitHistory("tidy", "a run stopped by the watchdog", func(r []api.ScheduleRun) bool {
		return len(r) == 1 && !r[0].Ended.IsZero()
	})
	r := runs[0]
	if r.Outcome != "failed" || !strings.HasPrefix(r.Reason, "the run was stopped by the watchdog") || !strings.Contains(r.Reason, "(cycle)") || r.Steps != 3 {
		t.Errorf("run record = %+v, want failed, stopped by the watchdog on a cycle after 3 steps", r)
	}
}

// A schedule's last fire time is the newest firing it made (scheduled or run-now, run,
// skipped or missed), never the moment it was added or resumed: a schedule that has not
// fired has none, in the JSON (no last_fired) and everywhere else.
func TestLastFiredIsTheNewestFiring(t *testing.T) {
	h := newHarness(t, at(12, 0))
	h.finishAtOnce()
	ctx := context.Background()
	h.add(api.ScheduleRequest{Name: "nightly", Spec: "0 3 * * *", Template: "night", Goal: "tidy up"})
	lastFired := func(when string) (single, listed api.Schedule) {
		t.Helper()
		s, err := api.ScheduleRoute.Do(ctx, h.c, "nightly", api.None{})
		if err != nil {
			t.Fatal(err)
		}
		all, err := api.SchedulesRoute.Do(ctx, h.c, "", api.None{})
		if err != nil || len(all) != 1 {
			t.Fatalf("%s: schedules = %+v, %v", when, all, err)
		}
		if !s.LastFired.Equal(all[0].LastFired) {
			t.Errorf("%s: show says last fired %v, ls says %v", when, s.LastFired, all[0].LastFired)
		}
		return *s, all[0]
	}

	s, _ := lastFired("just added")
	if !s.LastFired.IsZero() {
		t.Errorf("a schedule that never fired has last_fired %v (it was added then)", s.LastFired)
	}
	b, _ := json.Marshal(s)
	if strings.Contains(string(b), "last_fired") {
		t.Errorf("the JSON of a schedule that never fired has last_fired: %s", b)
	}

	h.clock.Set(at(12, 5))
	if _, err := api.PauseScheduleRoute.Do(ctx, h.c, "nightly", api.None{}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.ResumeScheduleRoute.Do(ctx, h.c, "nightly", api.None{}); err != nil {
		t.Fatal(err)
	}
	if s, _ := lastFired("paused and resumed"); !s.LastFired.IsZero() {
		t.Errorf("resuming made last_fired %v; it never fired", s.LastFired)
	}

	h.clock.Set(at(12, 10))
	r, err := api.RunScheduleRoute.Do(ctx, h.c, "nightly", api.None{})
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := lastFired("after run-now"); !s.LastFired.Equal(r.Scheduled) || !s.LastFired.Equal(at(12, 10)) {
		t.Errorf("after run-now at 12:10 last_fired is %v, want the run-now's %v", s.LastFired, r.Scheduled)
	}

	h.clock.Set(at(3, 0).AddDate(0, 0, 1)) // its first scheduled firing
	h.waitHistory("nightly", "the 03:00 firing", func(rs []api.ScheduleRun) bool { return len(rs) == 2 && !rs[0].Manual })
	if s, _ := lastFired("after the 03:00 firing"); !s.LastFired.Equal(at(3, 0).AddDate(0, 0, 1)) {
		t.Errorf("after the 03:00 firing last_fired is %v", s.LastFired)
	}
}

// Template agents beyond the newest keep finished ones are removed with their
// workspaces when a run ends; one awaiting a decision is kept however old.
func TestTemplateAgentsPruned(t *testing.T) {
	h := newHarness(t, at(8, 0))
	h.stopManager()
	h.keep = 2
	h.startManager()
	h.finishAtOnce()
	ctx := context.Background()
	h.add(api.ScheduleRequest{Name: "tidy", Spec: "@daily", Template: "tidy", Goal: "tidy up", Concurrency: "parallel"})

	var agents []*api.Agent
	for i := range 5 {
		rec, err := api.RunScheduleRoute.Do(ctx, h.c, "tidy", api.None{})
		if err != nil || rec.AgentID == "" {
			t.Fatalf("run-now %d = %+v, %v", i, rec, err)
		}
		a := h.waitAgent(rec.AgentID, func(a *api.Agent) bool { return a.Pending != nil })
		agents = append(agents, a)
		if i == 0 {
			continue // the oldest waits for a decision throughout
		}
		if _, err := h.sup.API().Decisions.Decide(ctx, a.ID, api.DecideRequest{ProposalID: a.Pending.ID, Kind: api.DecisionApprove, By: "test", Source: "test"}); err != nil {
			t.Fatal(err)
		}
		h.waitHistory("tidy", "run end", func(r []api.ScheduleRun) bool { return r[0].Outcome == "finished" })
	}
	want := []string{agents[0].ID, agents[3].ID, agents[4].ID}
	var got []string
	// Wait on what the prunes leave, not on m.pruning: a run's end is recorded before its
	// prune is counted, so a pruning.Wait here could race that Add.
	gone := func(a *api.Agent) bool { _, err := os.Stat(a.Workspace); return os.IsNotExist(err) }
	testutil.Wait(10*time.Second, func() bool {
		all, err := h.sup.API().Views.Agents(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = got[:0]
		for _, a := range all {
			got = append(got, a.ID)
		}
		slices.Sort(got)
		slices.Sort(want)
		return slices.Equal(got, want) && gone(agents[1]) && gone(agents[2])
	})
	if !slices.Equal(got, want) {
		t.Fatalf("agents left = %v, want %v (the pending one and the newest 2)", got, want)
	}
	for _, a := range agents[1:3] {
		if _, err := os.Stat(a.Workspace); !os.IsNotExist(err) {
			t.Errorf("workspace of removed agent %s: %v", a.Name, err)
		}
	}
	if _, err := os.Stat(agents[4].Workspace); err != nil {
		t.Errorf("workspace of a kept agent: %v", err)
	}
}

// waitAgent polls an agent until cond holds.
func (h *harness) waitAgent(id string, cond func(*api.Agent) bool) *api.Agent {
	h.t.Helper()
	var a *api.Agent
	testutil.Eventually(h.t, 10*time.Second, "agent "+id, func() bool {
		var err error
		a, err = h.sup.API().Views.Agent(context.Background(), id)
		return err == nil && cond(a)
	})
	return a
}
