package shell

import (
	"context"
	"testing"
	"time"
)

// BenchmarkSandboxOverhead runs `true` through execute_shell unsandboxed and sandboxed in
// turn and reports each one's wall time and the sandbox's cost, per command. The target is
// at most 30 ms of overhead.
func BenchmarkSandboxOverhead(b *testing.B) {
	bwrap := bwrapHere(b)
	ctx := context.Background()
	none, err := NewExecuteShell(Options{Sandbox: SandboxNone})
	if err != nil {
		b.Fatal(err)
	}
	boxed, err := NewExecuteShell(Options{Sandbox: SandboxBwrap, Bwrap: bwrap})
	if err != nil {
		b.Fatal(err)
	}
	ws := workspace(b)
	var tNone, tBox time.Duration
	for b.Loop() {
		start := time.Now()
		if _, err := run(ctx, b, none, ws, shellLine("true"), time.Minute); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		if _, err := run(ctx, b, boxed, ws, shellLine("true"), time.Minute); err != nil {
			b.Fatal(err)
		}
		tNone, tBox = tNone+mid.Sub(start), tBox+time.Since(mid)
	}
	n := float64(b.N)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / n }
	b.ReportMetric(ms(tNone), "none-ms/cmd")
	b.ReportMetric(ms(tBox), "sandboxed-ms/cmd")
	b.ReportMetric(ms(tBox-tNone), "overhead-ms/cmd")
	b.ReportMetric(float64(tBox)/float64(tNone), "ratio")
}

// BenchmarkAgentLimitsOverhead runs `true` through execute_shell in today's sandbox and in
// the same sandbox inside the agent's box (its cgroup), in turn, and reports each one's
// wall time per command, the box's cost and the ratio.
func BenchmarkAgentLimitsOverhead(b *testing.B) {
	bwrap := bwrapHere(b)
	boxes := NewBoxes(Limits{})
	defer boxes.Close()
	if !boxes.Active() {
		line, _ := boxes.Describe()
		b.Skipf("no cgroups for agents here: %s", line)
	}
	ctx := context.Background()
	plain, err := NewExecuteShell(Options{Sandbox: SandboxBwrap, Bwrap: bwrap})
	if err != nil {
		b.Fatal(err)
	}
	boxed, err := NewExecuteShell(Options{Sandbox: SandboxBwrap, Bwrap: bwrap, Boxes: boxes})
	if err != nil {
		b.Fatal(err)
	}
	ws := workspace(b)
	var tPlain, tBoxed time.Duration
	for b.Loop() {
		start := time.Now()
		if _, err := run(ctx, b, plain, ws, shellLine("true"), time.Minute); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		if _, err := run(ctx, b, boxed, ws, shellLine("true"), time.Minute); err != nil {
			b.Fatal(err)
		}
		tPlain, tBoxed = tPlain+mid.Sub(start), tBoxed+time.Since(mid)
	}
	n := float64(b.N)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / n }
	b.ReportMetric(ms(tPlain), "sandboxed-ms/cmd")
	b.ReportMetric(ms(tBoxed), "boxed-ms/cmd")
	b.ReportMetric(ms(tBoxed-tPlain), "overhead-ms/cmd")
	b.ReportMetric(float64(tBoxed)/float64(tPlain), "ratio")
}
