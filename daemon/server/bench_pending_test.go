package server

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	ollama "github.com/ollama/ollama/api"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/apitest"
	"github.com/agentd/agentd/internal/ollamatest"
	"github.com/agentd/agentd/internal/procgroup"
	"github.com/agentd/agentd/internal/testutil"
)

// BenchmarkRestartPending measures DESIGN §7's restart figure black-box, for the raised target's
// 10,000 agents: that many agents, each awaiting a decision on its first proposal, are
// made through the API of a daemon run in this process; then the real agentd binary is
// started on the same state and timed until `agentctl list` would show every agent
// awaiting its decision. Figures: restart-ms (start to all listed), ready-ms (start to
// the socket answering), list-ms (one listing of them all, after), rss-MB (the process's
// resident memory once they are listed) and peak-rss-MB (VmHWM).
// AGENTD_BENCH_AGENTS overrides the count (default 10000).
func BenchmarkRestartPending(b *testing.B) {
	n := 10000
	if s := os.Getenv("AGENTD_BENCH_AGENTS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1 {
			b.Fatalf("AGENTD_BENCH_AGENTS=%q: want a positive count", s)
		}
	}
	bin := buildAgentd(b)
	model := ollamatest.NewFake(b)
	model.SetDefault(func(*ollama.ChatRequest) string { return proposal("list_folder", `{"path":"."}`) })
	cfg := testConfig(b, model, "")
	cfg.Slack.Enabled = false
	cfg.Socket = filepath.Join(testutil.ShortTempDir(b), "s.sock")
	stop := runDaemon(b, cfg, slog.New(slog.DiscardHandler))
	c := &api.Client{Socket: cfg.Socket}
	seedPending(b, c, n)
	if err := stop(); err != nil {
		b.Fatal(err)
	}
	toml := fmt.Sprintf("[ollama]\nhost = %q\nmodel = %q\n", model.URL(), ollamatest.TinyModelName)
	cfgPath := filepath.Join(b.TempDir(), "agentd.toml")
	if err := os.WriteFile(cfgPath, []byte(toml), 0o600); err != nil {
		b.Fatal(err)
	}
	var r restarted
	for b.Loop() {
		r = restartUntilListed(b, bin, cfgPath, cfg.StateDir, cfg.Socket, n)
	}
	b.ReportMetric(float64(r.ready.Milliseconds()), "ready-ms")
	b.ReportMetric(float64(r.listed.Milliseconds()), "restart-ms")
	b.ReportMetric(float64(r.list.Milliseconds()), "list-ms")
	b.ReportMetric(r.rss, "rss-MB")
	b.ReportMetric(r.peak, "peak-rss-MB")
	b.ReportMetric(float64(n), "agents")
}

// seedPending creates n agents through the API and waits until each awaits a decision.
func seedPending(b *testing.B, c *api.Client, n int) {
	ctx := context.Background()
	var wg sync.WaitGroup
	work := make(chan int)
	errs := make(chan error, 1)
	for range 16 {
		wg.Go(func() {
			for i := range work {
				_, err := api.CreateAgentRoute.Do(ctx, c, "", api.CreateAgentRequest{Name: fmt.Sprintf("pending-%05d", i),
					Description: "waits for a person", Task: "list the workspace"})
				if err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
	if !testutil.Wait(30*time.Minute, func() bool { return awaiting(c) == n }) {
		b.Fatalf("%d of %d agents await a decision", awaiting(c), n)
	}
}

// awaiting counts the agents awaiting a decision on a pending proposal, as listed.
func awaiting(c *api.Client) int {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	as, err := apitest.Agents(ctx, c)
	if err != nil {
		return -1
	}
	k := 0
	for _, a := range as {
		if a.State == api.StateAwaitingDecision && a.Pending != nil {
			k++
		}
	}
	return k
}

// restarted is what one restart measured: until the socket answered, until every agent
// was listed awaiting its decision, one listing then, and resident memory then (MB).
type restarted struct {
	ready, listed, list time.Duration
	rss, peak           float64
}

// restartUntilListed starts the binary and measures it until all n agents are listed
// awaiting their decision.
func restartUntilListed(b *testing.B, bin, cfgPath, stateDir, socket string, n int) restarted {
	cmd := exec.Command(bin, "--config", cfgPath, "--state-dir", stateDir, "--socket", socket)
	cmd.Env = append(os.Environ(), "HOME="+b.TempDir())
	began := time.Now()
	grp, err := procgroup.Start(cmd)
	if err != nil {
		b.Fatal(err)
	}
	defer grp.End(syscall.SIGTERM, time.Minute)
	var r restarted
	c := &api.Client{Socket: socket}
	if !testutil.Wait(time.Minute, func() bool { _, err := api.StatusRoute.Do(context.Background(), c, "", api.None{}); return err == nil }) {
		b.Fatal("the restarted daemon did not answer on its socket")
	}
	r.ready = time.Since(began)
	if !testutil.Wait(5*time.Minute, func() bool { return awaiting(c) == n }) {
		b.Fatalf("after the restart %d of %d agents are listed awaiting a decision", awaiting(c), n)
	}
	r.listed = time.Since(began)
	r.rss, r.peak = procMemMB(b, cmd.Process.Pid)
	t0 := time.Now()
	awaiting(c)
	r.list = time.Since(t0)
	return r
}

// procMemMB reads VmRSS and VmHWM of a process, in MB.
func procMemMB(b *testing.B, pid int) (rss, peak float64) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
		if k == "VmRSS" {
			rss = kb / 1024
		} else {
			peak = kb / 1024
		}
	}
	return rss, peak
}

// buildAgentd builds cmd/agentd into a temp dir, from the module this file is in (the
// compiled benchmark may run from anywhere: scripts/bench.sh runs it in a temp dir).
func buildAgentd(b *testing.B) string {
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		b.Fatal("cannot find the module: no caller information")
	}
	dir := b.TempDir()
	cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "./cmd/agentd")
	cmd.Dir = filepath.Join(filepath.Dir(self), "..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build in %s: %v\n%s", cmd.Dir, err, out)
	}
	return filepath.Join(dir, "agentd")
}
