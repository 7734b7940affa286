package schedule

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	ollama "github.com/ollama/ollama/api"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/agent"
	"github.com/agentd/agentd/daemon/localapi"
	"github.com/agentd/agentd/daemon/run"
	"github.com/agentd/agentd/daemon/schedule/cron"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/agenttest"
	"github.com/agentd/agentd/internal/ollamatest"
	"github.com/agentd/agentd/internal/testutil"
)

// The supervisor the daemon passes is the Manager's Agents.
var _ Agents = agenttest.API{}

// fakeClock is a cron.Clock the test moves; timers fire when it passes them.
type fakeClock struct{ *testutil.Clock }

func (c fakeClock) NewTimer(d time.Duration) cron.Timer { return c.Timer(d) }

// at is a fixed instant on 2026-11-23, a Monday, in UTC.
func at(hour, min int) time.Time { return time.Date(2026, 11, 23, hour, min, 0, 0, time.UTC) }

// harness is the daemon's scheduling path for real: a store in a temp dir, the supervisor
// against the fake Ollama, a Manager on a fake clock, and the local API on a unix socket.
type harness struct {
	t      testing.TB
	dir    string
	fake   *ollamatest.Fake
	st     *store.Store
	sup    *agent.Supervisor
	mgr    *Manager
	clock  fakeClock
	c      *api.Client
	cancel context.CancelFunc
	mgrCtx context.CancelFunc
	keep   int // KeepAgents of the next Manager started
	// wake makes the next Manager started check wake conditions (newWake), chat
	// deliver to a fake chat.
	wake    func() Wake
	chat    Chat
	metrics interface{ ScheduleRun(result string) }
}

type service struct {
	localapi.AgentService
	localapi.ScheduleService
	localapi.DaemonService
	localapi.TeamService // not served here
	localapi.WebService  // not served here
}

// noReload is the API's reload in these tests: there is no config file to re-read.
type noReload struct{}

func (noReload) Reload(context.Context) (*api.ReloadResult, error) {
	return nil, api.Errorf(api.ErrConflict, "no config to reload in this test")
}

func newHarness(t testing.TB, now time.Time) *harness {
	t.Helper()
	h := &harness{t: t, dir: t.TempDir(), fake: ollamatest.NewFake(t), clock: fakeClock{testutil.NewClock(now)}}
	h.st = agenttest.OpenStore(t, h.dir)
	sopt := agenttest.Options(t, h.st, h.dir, h.fake.URL(), ollamatest.TinyModelName, "list_folder", "read_file", "write_file", "ask_user", "finish")
	sopt.Deny = []string{"read_file(private/*)"} // what the agents' programs, and so their schedules' checks, may not read
	sopt.OnRunEnd = func(e run.End) { h.manager().RunEnded(e) }
	var err error
	h.sup, err = agent.New(sopt)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	if err := h.sup.Start(ctx); err != nil {
		t.Fatal(err)
	}
	h.startManager()

	sock := filepath.Join(testutil.ShortTempDir(t), "s")
	ln, err := localapi.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: localapi.NewHandler(service{agenttest.Of(h.sup), managerService{h}, noReload{}, nil, nil}, nil)}
	go srv.Serve(ln)
	h.c = &api.Client{Socket: sock}
	t.Cleanup(func() {
		srv.Close()
		h.stopManager()
		cancel()
		h.sup.Wait()
	})
	return h
}

var mgrMu sync.Mutex

func (h *harness) manager() *Manager {
	mgrMu.Lock()
	defer mgrMu.Unlock()
	return h.mgr
}

// managerService serves the API through whichever Manager runs now (they restart).
type managerService struct{ h *harness }

func (m managerService) Schedules(ctx context.Context) ([]api.Schedule, error) {
	return m.h.manager().Schedules(ctx)
}
func (m managerService) Schedule(ctx context.Context, ref string) (*api.Schedule, error) {
	return m.h.manager().Schedule(ctx, ref)
}
func (m managerService) AddSchedule(ctx context.Context, req api.ScheduleRequest) (*api.Schedule, error) {
	return m.h.manager().AddSchedule(ctx, req)
}
func (m managerService) RemoveSchedule(ctx context.Context, ref string) error {
	return m.h.manager().RemoveSchedule(ctx, ref)
}
func (m managerService) PauseSchedule(ctx context.Context, ref string) (*api.Schedule, error) {
	return m.h.manager().PauseSchedule(ctx, ref)
}
func (m managerService) ResumeSchedule(ctx context.Context, ref string) (*api.Schedule, error) {
	return m.h.manager().ResumeSchedule(ctx, ref)
}
func (m managerService) RunSchedule(ctx context.Context, ref string) (*api.ScheduleRun, error) {
	return m.h.manager().RunSchedule(ctx, ref)
}
func (m managerService) ScheduleHistory(ctx context.Context, ref string, limit int) ([]api.ScheduleRun, error) {
	return m.h.manager().ScheduleHistory(ctx, ref, limit)
}
func (m managerService) SetScheduleWhen(ctx context.Context, ref string, when api.WakeConditions) (*api.Schedule, error) {
	return m.h.manager().SetScheduleWhen(ctx, ref, when)
}

func (h *harness) startManager() {
	opt := Options{Store: h.st, Agents: agenttest.Of(h.sup), Clock: h.clock, Local: time.UTC, KeepAgents: h.keep, Chat: h.chat, Metrics: h.metrics}
	if h.wake != nil {
		opt.Wake = h.wake()
	}
	m := New(opt)
	ctx, cancel := context.WithCancel(context.Background())
	if err := m.Start(ctx); err != nil {
		h.t.Fatal(err)
	}
	mgrMu.Lock()
	h.mgr, h.mgrCtx = m, cancel
	mgrMu.Unlock()
}

// stopManager stops the Manager as the daemon does on shutdown.
func (h *harness) stopManager() {
	if m := h.manager(); m != nil && h.mgrCtx != nil {
		m.Stop()
		m.Close()
		h.mgrCtx()
		h.mgrCtx = nil
	}
}

// add adds a schedule through the API.
func (h *harness) add(req api.ScheduleRequest) *api.Schedule {
	h.t.Helper()
	s, err := api.AddScheduleRoute.Do(context.Background(), h.c, "", req)
	if err != nil {
		h.t.Fatalf("add %s: %v", req.Name, err)
	}
	return s
}

// waitHistory polls a schedule's records until cond holds.
func (h *harness) waitHistory(ref, what string, cond func([]api.ScheduleRun) bool) []api.ScheduleRun {
	h.t.Helper()
	var runs []api.ScheduleRun
	var err error
	if !testutil.Wait(10*time.Second, func() bool {
		runs, err = api.ScheduleHistoryRoute.Do(context.Background(), h.c, ref, api.ScheduleHistoryQuery{Limit: 0})
		return err == nil && cond(runs)
	}) {
		h.t.Fatalf("timed out waiting for %s; history = %+v, err = %v", what, runs, err)
	}
	return runs
}

// outcomes returns the records' outcomes, oldest first.
func outcomes(runs []api.ScheduleRun) string {
	var out []string
	for i := len(runs) - 1; i >= 0; i-- {
		out = append(out, string(runs[i].Outcome))
	}
	return strings.Join(out, " ")
}

// reply is a schema-valid model reply proposing name(args).
var reply = ollamatest.Reply

// listForever makes the model do new work every step: write a file it has not written
// (listing the same folder again and again is a loop the watchdog stops).
func (h *harness) listForever() {
	h.fake.SetDefaultNth(func(n int) string {
		return reply("write_file", map[string]string{"path": fmt.Sprintf("n%d.txt", n), "contents": fmt.Sprint(n)})
	})
}

// loopForever makes the model go round list_folder . and read_file notes.txt.
func (h *harness) loopForever() {
	h.fake.SetDefaultNth(func(n int) string {
		if n%2 == 1 {
			return reply("list_folder", map[string]string{"path": "."})
		}
		return reply("read_file", map[string]string{"path": "notes.txt"})
	})
}

// finishAtOnce makes every run finish on its first step.
func (h *harness) finishAtOnce() {
	h.fake.SetDefault(func(*ollama.ChatRequest) string { return reply("finish", map[string]string{"reason": "done"}) })
}
