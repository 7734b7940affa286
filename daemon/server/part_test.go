package server

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/run"
	"github.com/agentd/agentd/internal/ollamatest"
	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/memory"
)

// recorder notes every part's start and stop, in order.
type recorder struct {
	mu  sync.Mutex
	got []string
}

func (r *recorder) note(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, s)
}

func (r *recorder) events() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// part is a part named name whose start and stop return startErr and stopErr.
func (r *recorder) part(name string, startErr, stopErr error) part {
	return part{name: name,
		start: func(context.Context) error { r.note("start " + name); return startErr },
		stop:  func(context.Context) error { r.note("stop " + name); return stopErr },
	}
}

func TestLifecycleStartsInOrderAndStopsInReverseOnce(t *testing.T) {
	errStart := errors.New("port in use")
	errA, errC := errors.New("a would not close"), errors.New("c would not close")
	tests := []struct {
		name string
		// batches are the parts of each start call, made with the test's recorder.
		batches func(r *recorder) [][]part
		// wantStartErr: the failing part's own error, returned as it is.
		wantStartErr error
		// wantStart: the events once the starts are done; wantStop: those a stop adds.
		wantStart, wantStop []string
		wantStopErrs        []error
	}{
		{
			name: "all_start",
			batches: func(r *recorder) [][]part {
				return [][]part{{r.part("a", nil, nil), r.part("b", nil, nil), r.part("c", nil, nil)}}
			},
			wantStart: []string{"start a", "start b", "start c"},
			wantStop:  []string{"stop c", "stop b", "stop a"},
		},
		{
			name: "a_failing_part_stops_the_started_ones_in_reverse",
			batches: func(r *recorder) [][]part {
				return [][]part{{r.part("a", nil, nil), r.part("b", nil, nil), r.part("c", errStart, nil), r.part("d", nil, nil)}}
			},
			wantStartErr: errStart,
			wantStart:    []string{"start a", "start b", "start c", "stop b", "stop a"},
			wantStop:     nil, // stopped already: nothing twice, never the part that failed
		},
		{
			name: "a_failure_in_a_later_start_stops_the_earlier_parts_too",
			batches: func(r *recorder) [][]part {
				return [][]part{{r.part("a", nil, nil), r.part("b", nil, nil)}, {r.part("c", nil, nil), r.part("d", errStart, nil)}}
			},
			wantStartErr: errStart,
			wantStart:    []string{"start a", "start b", "start c", "start d", "stop c", "stop b", "stop a"},
		},
		{
			name: "parts_without_start_or_stop",
			batches: func(r *recorder) [][]part {
				return [][]part{{r.part("a", nil, nil), {name: "nothing"}, {name: "stop only", stop: func(context.Context) error { r.note("stop only"); return nil }}}}
			},
			wantStart: []string{"start a"},
			wantStop:  []string{"stop only", "stop a"},
		},
		{
			name: "stop_errors_are_joined_and_every_part_stopped",
			batches: func(r *recorder) [][]part {
				return [][]part{{r.part("a", nil, errA), r.part("b", nil, nil), r.part("c", nil, errC)}}
			},
			wantStart:    []string{"start a", "start b", "start c"},
			wantStop:     []string{"stop c", "stop b", "stop a"},
			wantStopErrs: []error{errA, errC},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			r := &recorder{}
			l := &lifecycle{log: slog.New(slog.NewTextHandler(&logs, nil))}
			var err error
			for _, b := range tt.batches(r) {
				if err = l.start(context.Background(), b...); err != nil {
					break
				}
			}
			if err != tt.wantStartErr { // the part's own error, not wrapped
				t.Fatalf("start = %v, want %v", err, tt.wantStartErr)
			}
			if got := r.events(); !slices.Equal(got, tt.wantStart) {
				t.Fatalf("after start: %q, want %q", got, tt.wantStart)
			}
			err = l.stop(context.Background())
			if got := r.events()[len(tt.wantStart):]; !slices.Equal(got, tt.wantStop) {
				t.Errorf("stop: %q, want %q", got, tt.wantStop)
			}
			for _, want := range tt.wantStopErrs {
				if !errors.Is(err, want) {
					t.Errorf("stop = %v, want it to carry %v", err, want)
				}
			}
			if len(tt.wantStopErrs) == 0 && err != nil {
				t.Errorf("stop = %v, want nil", err)
			}
			for _, want := range tt.wantStopErrs {
				if !strings.Contains(logs.String(), want.Error()) {
					t.Errorf("the stop error %q is not logged:\n%s", want, logs.String())
				}
			}
			n := len(r.events())
			if err := l.stop(context.Background()); err != nil || len(r.events()) != n {
				t.Errorf("a second stop = %v and did %q, want nothing", err, r.events()[n:])
			}
		})
	}
}

// TestLifecycleStopsEachPartOnceFromManyGoroutines: stops racing each other stop each
// part once, and none returns before the parts are stopped.
func TestLifecycleStopsEachPartOnceFromManyGoroutines(t *testing.T) {
	r := &recorder{}
	l := &lifecycle{log: slog.New(slog.DiscardHandler)}
	if err := l.start(context.Background(), r.part("a", nil, nil), r.part("b", nil, nil)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			l.stop(context.Background())
			if got := r.events(); len(got) != 4 {
				t.Errorf("a stop returned with %q, before both parts stopped", got)
			}
		})
	}
	wg.Wait()
	if got, want := r.events(), []string{"start a", "start b", "stop b", "stop a"}; !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
}

// TestRunEndHookWorksBeforeThePartsThatFollowRuns: the supervisor may report a run's end
// whenever it likes after it is made. The hook used to be a closure over the schedules'
// manager and the team engine, declared nil and assigned after the supervisor was made:
// called then, it dereferenced nil. Now the hook works from the start, and the services
// part adds both followers before the supervisor starts.
func TestRunEndHookWorksBeforeThePartsThatFollowRuns(t *testing.T) {
	model := ollamatest.NewFake(t)
	cfg := testConfig(t, model, "http://127.0.0.1:1/api/")
	cfg.Slack.Enabled = false
	d := &daemon{cfg: cfg, log: slog.New(slog.DiscardHandler), live: &liveConfig{}, httpL: &httpListener{}, bots: &liveBots{}}
	d.live.store(cfg)
	hook := d.agentOptions().OnRunEnd
	hook(run.End{RunID: "r-early"}) // panicked with the closure: nothing follows runs yet

	var got []string
	d.runEnds.add(func(e run.End) { got = append(got, "first "+e.RunID) })
	d.runEnds.add(func(e run.End) { got = append(got, "second "+e.RunID) })
	hook(run.End{RunID: "r-1"})
	if want := []string{"first r-1", "second r-1"}; !slices.Equal(got, want) {
		t.Errorf("the hook delivered %q, want %q", got, want)
	}

	// The real parts up to the services: the manager and the engine follow runs by then.
	d = &daemon{cfg: cfg, log: slog.New(slog.DiscardHandler), live: d.live, opt: Options{Notify: func(string) {}}}
	l := &lifecycle{log: d.log}
	ps := d.parts()
	i := slices.IndexFunc(ps, func(p part) bool { return p.name == "services" })
	if err := l.start(context.Background(), ps[:i+1]...); err != nil {
		t.Fatal(err)
	}
	defer l.stop(context.Background())
	if n := len(d.runEnds.fns); n != 2 {
		t.Errorf("%d parts follow run ends once the services are made, want 2 (schedules, teams)", n)
	}
}

// TestFailedStartLeavesNothingRunning: a part failing to start (the TCP address taken)
// stops the parts started before it: no goroutine of the daemon's is left (the MCP
// server's supervisor, retrying a refused address, included: the daemon's context never
// ends here, so only the stop ends it), the socket is gone, and the memory index is
// closed (it opens again: it holds a lock while open).
func TestFailedStartLeavesNothingRunning(t *testing.T) {
	cfg := httpTestConfig(t)
	cfg.MCP.Servers = []config.MCPServer{{Name: "down", URL: "http://127.0.0.1:1/mcp", Timeout: config.Duration{Duration: time.Second}}}
	ln, err := net.Listen("tcp", cfg.HTTP.Listen)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	before := daemonGoroutines()
	err = Run(context.Background(), cfg, slog.New(slog.DiscardHandler), Options{Version: "test"})
	if err == nil || !strings.Contains(err.Error(), "http listener") {
		t.Fatalf("Run = %v, want an http listener error", err)
	}
	noGoroutinesLeft(t, before)
	if _, err := os.Stat(cfg.Socket); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the socket after a failed start: %v, want it gone", err)
	}
	ix, err := memory.Open(filepath.Join(cfg.StateDir, "memory"), memory.Options{})
	if err != nil {
		t.Fatalf("the memory index after a failed start: %v, want it closed", err)
	}
	ix.Close()
}

// TestStopLeavesNoGoroutine: every goroutine the daemon starts, the servers, the reload
// loop and an MCP server's supervisor (retrying a refused address) included, has ended
// when Run returns.
func TestStopLeavesNoGoroutine(t *testing.T) {
	cfg := httpTestConfig(t)
	cfg.HTTP.AgentProtocol = true
	cfg.MCP.Servers = []config.MCPServer{{Name: "down", URL: "http://127.0.0.1:1/mcp", Timeout: config.Duration{Duration: time.Second}}}
	before := daemonGoroutines()
	hup := make(chan os.Signal, 1)
	stop := runDaemonWith(t, cfg, slog.New(slog.DiscardHandler), Options{Reloads: hup, Load: func() (*config.Config, error) { return cfg, nil }})
	hup <- syscall.SIGHUP
	if err := stop(); err != nil {
		t.Fatalf("Run = %v", err)
	}
	noGoroutinesLeft(t, before)
}

// daemonGoroutines are the live goroutines running agentd's code, by their header line,
// leaving out the tests' own and the fakes'.
func daemonGoroutines() map[string]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[string]string{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		if !strings.Contains(g, "github.com/agentd/agentd/") || strings.Contains(g, "testing.tRunner") ||
			strings.Contains(g, "ollamatest") || strings.Contains(g, "fakeslack") {
			continue
		}
		id, _, _ := strings.Cut(g, " [")
		out[id] = g
	}
	return out
}

// noGoroutinesLeft fails when a goroutine of agentd's not in before is still running;
// it allows a goroutine a moment to return after signalling that it is done.
func noGoroutinesLeft(t *testing.T, before map[string]string) {
	t.Helper()
	var left []string
	testutil.Wait(2*time.Second, func() bool {
		left = left[:0]
		for id, g := range daemonGoroutines() {
			if _, ok := before[id]; !ok {
				left = append(left, g)
			}
		}
		return len(left) == 0
	})
	if len(left) > 0 {
		t.Errorf("%d goroutines of the daemon still run after it stopped:\n%s", len(left), strings.Join(left, "\n\n"))
	}
}
