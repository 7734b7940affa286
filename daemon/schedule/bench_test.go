package schedule

// Benchmarks for the schedules' figures, with 10,000 stored schedules. They report figures
// (b.ReportMetric) and never fail on them.
//
//	BenchmarkStart10000    loading the schedules from SQLite into a started scheduler
//	BenchmarkMinute10000   one simulated minute: ~167 firings started and recorded in SQLite

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/run"
	"github.com/agentd/agentd/daemon/store"
)

// instantAgents starts every run at once and counts them; started, when set, gets a
// token after each start (dropped when one is already waiting: the reader rechecks).
type instantAgents struct {
	starts  atomic.Int64
	started chan struct{}
}

func (a *instantAgents) Agent(ctx context.Context, ref string) (*api.Agent, error) {
	return &api.Agent{ID: ref, Name: ref}, nil
}

func (a *instantAgents) StartTask(ctx context.Context, ref, task string, opt run.Options) (*api.Agent, error) {
	n := a.starts.Add(1)
	select {
	case a.started <- struct{}{}:
	default:
	}
	return &api.Agent{ID: ref, RunID: fmt.Sprint("r-", n)}, nil
}

func (a *instantAgents) CreateRun(ctx context.Context, req api.CreateAgentRequest, opt run.Options) (*api.Agent, error) {
	return a.StartTask(ctx, req.Name, req.Task, opt)
}

func (a *instantAgents) CreateAgent(ctx context.Context, req api.CreateAgentRequest) (*api.Agent, error) {
	return &api.Agent{ID: req.Name, Name: req.Name}, nil
}

func (a *instantAgents) DeleteAgent(ctx context.Context, ref string) error { return nil }
func (a *instantAgents) DeniedPaths(ctx context.Context, ref string) (commands.PathRules, error) {
	return nil, nil
}

// seedSchedules stores n schedules firing hourly at spread minutes in a few zones, so
// about n/60 fire each minute.
func seedSchedules(b *testing.B, n int, lastFired time.Time) *store.Store {
	st, err := store.Open(context.Background(), filepath.Join(b.TempDir(), "agentd.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	zones := []string{"UTC", "America/New_York", "Europe/Berlin", "Asia/Tokyo"}
	err = st.Tx(context.Background(), func(tx *store.Tx) error {
		for i := range n {
			row := &store.Schedule{Schedule: api.Schedule{ID: fmt.Sprintf("s-%05d", i), Name: fmt.Sprintf("s%05d", i),
				Spec: fmt.Sprintf("%d * * * *", i%60), TimeZone: zones[i%len(zones)], Template: "bench", Goal: "g",
				Autonomy: api.Autonomy{Mode: "ask"}, Delivery: "agentctl", Concurrency: "parallel", Missed: "skip",
				LastFired: lastFired}}
			if err := tx.InsertSchedule(row); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return st
}

func BenchmarkStart10000(b *testing.B) {
	now := at(9, 0)
	st := seedSchedules(b, 10_000, now)
	var total time.Duration
	for b.Loop() {
		m := New(Options{Store: st, Agents: &instantAgents{}, Clock: &fakeClock{now: now}})
		t0 := time.Now()
		if err := m.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		total += time.Since(t0)
		b.StopTimer()
		m.sched.Stop() // not Manager.Stop: storing 10,000 fire times is shutdown's cost, not start's
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/start")
}

func BenchmarkMinute10000(b *testing.B) {
	now := at(9, 0)
	st := seedSchedules(b, 10_000, now)
	clk := &fakeClock{now: now}
	ag := &instantAgents{started: make(chan struct{}, 1)}
	m := New(Options{Store: st, Agents: ag, Clock: clk})
	if err := m.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer m.sched.Stop()
	minutes := 0
	for b.Loop() {
		minutes++
		want := ag.starts.Load() + 10_000/60
		if minutes%60 < 10_000%60 {
			want++
		}
		clk.set(now.Add(time.Duration(minutes) * time.Minute))
		for ag.starts.Load() < want {
			<-ag.started
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(minutes), "ms/minute")
	b.ReportMetric(float64(ag.starts.Load())/float64(minutes), "firings/minute")
}
