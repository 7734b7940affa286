package schedule

// Benchmarks for the schedules' figures. They report figures (b.ReportMetric) and never
// fail on them.
//
//	BenchmarkStart10000          loading 10,000 schedules from SQLite into a started scheduler
//	BenchmarkMinute10000         one simulated minute of 10,000: ~167 firings started and recorded
//	BenchmarkQuietSchedules100   100 schedules with wake conditions over half an hour

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	ollama "github.com/ollama/ollama/api"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/run"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/testutil"
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
		m := New(Options{Store: st, Agents: &instantAgents{}, Clock: fakeClock{testutil.NewClock(now)}})
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
	clk := fakeClock{testutil.NewClock(now)}
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
		clk.Set(now.Add(time.Duration(minutes) * time.Minute))
		for ag.starts.Load() < want {
			<-ag.started
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(minutes), "ms/minute")
	b.ReportMetric(float64(ag.starts.Load())/float64(minutes), "firings/minute")
}

// BenchmarkQuietSchedules100 is the daemon-level figure of wake conditions: 100 agents,
// each with a notes folder of 50 files and a schedule firing every minute with
// --when-changed notes, driven through the real supervisor, store and wake engine over
// 30 simulated minutes (the Manager's clock), the model an in-process fake that counts
// its calls. One iteration is the whole half hour; run it with -benchtime 1x.
//
//	quiet            nothing changes: model calls 0, 3,000 nothing_to_do records
//	1_in_10_changing one file of 10 workspaces rewritten each minute: exactly those 10
//	                 runs wake per minute, each starting from what changed
//
// It reports the process's CPU per firing (each minute's CPU ÷ its firings; p50 and p99
// over the 30 minutes; the process is the daemon's parts and the idle fake model) and
// its RSS after the first and the last minute. Figures, never failures on them.

// finals counts firings by final outcome (the Manager's metrics), and wakes a waiter.
type finals struct {
	mu     sync.Mutex
	n      map[string]int
	notify chan struct{}
}

func (f *finals) ScheduleRun(result string) {
	f.mu.Lock()
	f.n[result]++
	f.mu.Unlock()
	select {
	case f.notify <- struct{}{}:
	default:
	}
}

func (f *finals) total() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := 0
	for _, n := range f.n {
		t += n
	}
	return t
}

func (f *finals) get(k string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n[k]
}

func BenchmarkQuietSchedules100(b *testing.B) {
	for _, changing := range []int{0, 10} {
		name := "quiet"
		if changing > 0 {
			name = fmt.Sprintf("1_in_%d_changing", 100/changing)
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				quietHalfHour(b, 100, 30, changing)
			}
		})
	}
}

// quietHalfHour runs n every-minute schedules with --when-changed notes for minutes
// simulated minutes, rewriting a file in changing of the workspaces each minute.
func quietHalfHour(b *testing.B, n, minutes, changing int) {
	b.StopTimer()
	defer b.StartTimer()
	h := newHarness(b, at(12, 0))
	fin := &finals{n: map[string]int{}, notify: make(chan struct{}, 1)}
	h.metrics = fin
	h.withWake(nil)
	h.fake.SetDefault(func(*ollama.ChatRequest) string { return reply("finish", map[string]string{"reason": "done"}) })
	ctx := context.Background()
	workspaces := make([]string, n)
	for i := range n {
		name := fmt.Sprintf("w%03d", i)
		a, err := api.CreateAgentRoute.Do(ctx, h.c, "", api.CreateAgentRequest{Name: name, Description: "watches notes", Start: new(bool)})
		if err != nil {
			b.Fatal(err)
		}
		workspaces[i] = a.Workspace
		for f := range 50 {
			writeFile(b, filepath.Join(a.Workspace, "notes", fmt.Sprintf("f%02d.txt", f)), strings.Repeat("a line of notes\n", 20))
		}
		h.add(api.ScheduleRequest{Name: name, Spec: "* * * * *", Agent: name, Goal: "summarize what changed in notes",
			Autonomy: api.Autonomy{Mode: "auto", Steps: 1}, When: &api.WakeConditions{Changed: []string{"notes"}}})
	}
	waitFinals := func(want int) {
		deadline := time.After(5 * time.Minute)
		for fin.total() < want {
			select {
			case <-fin.notify:
			case <-deadline:
				b.Fatalf("timed out: %d of %d firings ended (%v)", fin.total(), want, fin.n)
			}
		}
	}
	// Minute 0 is the first look: nothing to compare with, every schedule wakes once.
	h.clock.Set(at(12, 1))
	waitFinals(n)
	calls0, woke0 := len(h.fake.Requests()), fin.get(string(api.RunFinished))

	perFiring := make([]float64, 0, minutes)
	var rssFirst, rssLast int64
	b.StartTimer()
	for m := 1; m <= minutes; m++ {
		var changed []string
		for i := range changing {
			ws := workspaces[(m*changing+i)%n]
			p := filepath.Join(ws, "notes", fmt.Sprintf("f%02d.txt", m%50))
			writeFile(b, p, fmt.Sprintf("changed at minute %d\n", m))
			changed = append(changed, p)
		}
		cpu0 := processCPU()
		h.clock.Set(at(12, 1+m))
		waitFinals(n * (m + 1))
		perFiring = append(perFiring, float64((processCPU()-cpu0).Microseconds())/float64(n))
		switch m {
		case 1:
			rssFirst = rssKB()
		case minutes:
			rssLast = rssKB()
		}
	}
	b.StopTimer()

	reqs := h.fake.Requests()[calls0:]
	woke := fin.get(string(api.RunFinished)) - woke0
	firstObs := 0
	for _, r := range reqs {
		var p strings.Builder
		for _, msg := range r.Messages {
			p.WriteString(msg.Content)
		}
		if s := p.String(); strings.Contains(s, "The schedule's check found") && strings.Contains(s, "modified") && strings.Contains(s, "notes/f") {
			firstObs++
		}
	}
	slices.Sort(perFiring)
	b.ReportMetric(float64(len(reqs)), "model_calls")
	b.ReportMetric(float64(woke), "runs_woken")
	b.ReportMetric(float64(firstObs), "calls_naming_the_change")
	b.ReportMetric(float64(fin.get(string(api.RunNothingToDo))), "nothing_to_do")
	b.ReportMetric(float64(fin.get(string(api.RunCheckFailed))), "check_failed")
	b.ReportMetric(perFiring[len(perFiring)/2], "cpu_µs/firing_p50")
	b.ReportMetric(perFiring[min(len(perFiring)-1, len(perFiring)*99/100)], "cpu_µs/firing_p99")
	b.ReportMetric(float64(rssFirst), "rss_kB_minute1")
	b.ReportMetric(float64(rssLast), "rss_kB_last")
	if want := changing * minutes; woke != want {
		b.Errorf("%d runs woke over %d minutes, want exactly %d (%d changing per minute)", woke, minutes, want, changing)
	}
}

// processCPU is the process's user and system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rssKB is the process's resident set (VmRSS), in kB.
func rssKB() int64 {
	b, _ := os.ReadFile("/proc/self/status")
	for l := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
