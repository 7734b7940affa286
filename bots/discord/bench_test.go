package discord

import (
	"slices"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/chattest"
)

// BenchmarkApprovalRoundTrip measures an Approve click on the loopback fake until the
// approved command starts: INTERACTION_CREATE on the gateway → discordgo → the deferred
// update → relay → Supervisor.Decide → the agent loop → the command. The target is
// p99 ≤ 50 ms; figures are reported, never checked.
func BenchmarkApprovalRoundTrip(b *testing.B) {
	e := newEnv(b)
	for i := 0; i < b.N; i++ {
		e.Script(reply("bots_test_touch", map[string]string{"what": "bench"}))
	}
	thread := e.startRun("benchmark")
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		p := e.proposal(thread, i+1)
		chattest.Drain()
		b.StartTimer()
		start := time.Now()
		e.click(uAlice, thread, p, ActionApprove)
		select {
		case <-chattest.Touched:
		case <-time.After(10 * time.Second):
			logs := e.Logs.String()
			b.Fatalf("step %d: the command never started\n%s", i+1, logs[max(0, len(logs)-6000):])
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	pct := func(q float64) float64 {
		return float64(lat[min(len(lat)-1, int(q*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}
