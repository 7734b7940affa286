package shell

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/commands/permission"
)

// BenchmarkSandboxOverhead runs `true` through execute_shell unsandboxed and sandboxed in
// turn and reports each one's wall time and the sandbox's cost, per command. The target is
// at most 30 ms of overhead.
func BenchmarkSandboxOverhead(b *testing.B) {
	bwrap := bwrapHere(b)
	none, err := NewExecuteShell(Options{Sandbox: SandboxNone})
	if err != nil {
		b.Fatal(err)
	}
	boxed, err := NewExecuteShell(Options{Sandbox: SandboxBwrap, Bwrap: bwrap})
	if err != nil {
		b.Fatal(err)
	}
	benchInTurn(b, "none", none, "sandboxed", boxed)
}

// benchInTurn runs `true` through base and then through c, every iteration, and reports
// each one's wall time per command (as NAME-ms/cmd), c's overhead over base and their ratio.
func benchInTurn(b *testing.B, baseName string, base commands.Command, name string, c commands.Command) {
	ctx := context.Background()
	ws := workspace(b)
	var tBase, tC time.Duration
	for b.Loop() {
		start := time.Now()
		if _, err := run(ctx, b, base, ws, shellLine("true"), time.Minute); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		if _, err := run(ctx, b, c, ws, shellLine("true"), time.Minute); err != nil {
			b.Fatal(err)
		}
		tBase, tC = tBase+mid.Sub(start), tC+time.Since(mid)
	}
	b.ReportMetric(msPerOp(b, tBase), baseName+"-ms/cmd")
	b.ReportMetric(msPerOp(b, tC), name+"-ms/cmd")
	b.ReportMetric(msPerOp(b, tC-tBase), "overhead-ms/cmd")
	b.ReportMetric(float64(tC)/float64(tBase), "ratio")
}

// msPerOp is d, spent over all of b's iterations, in milliseconds per iteration.
func msPerOp(b *testing.B, d time.Duration) float64 {
	return float64(d) / float64(time.Millisecond) / float64(b.N)
}

// BenchmarkBoundedProfile runs `true` in the sandbox as a person's approval runs it, as a
// pattern's approval does (bounded: read-only workspace, no network, empty HOME), and
// bounded under a deny rule on a path in a workspace of 1,000 files, in turn, and reports
// each per command with its ratio to the first.
func BenchmarkBoundedProfile(b *testing.B) {
	bwrap := bwrapHere(b)
	c, err := NewExecuteShell(Options{Sandbox: SandboxBwrap, Bwrap: bwrap})
	if err != nil {
		b.Fatal(err)
	}
	ws := workspace(b)
	for i := range 1000 {
		dir := filepath.Join(ws, fmt.Sprintf("d%02d", i%50))
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.txt", i)), []byte("x"), 0o644)
	}
	os.MkdirAll(filepath.Join(ws, "secrets"), 0o755)
	os.WriteFile(filepath.Join(ws, "secrets", "key"), []byte("k"), 0o644)
	rules, _ := permission.ParseRules("config", nil, []string{"read_file(secrets/*)", "read_file(*.pem)"})
	profiles := []commands.Profile{{}, {Bounded: true}, {Bounded: true, Paths: permission.Denied(rules)}}
	spent := make([]time.Duration, len(profiles))
	for b.Loop() {
		for i, p := range profiles {
			start := time.Now()
			if out, err := runAs(b, c, ws, p, "true"); err != nil {
				b.Fatal(err, out)
			}
			spent[i] += time.Since(start)
		}
	}
	b.ReportMetric(msPerOp(b, spent[0]), "person-ms/cmd")
	b.ReportMetric(msPerOp(b, spent[1]), "bounded-ms/cmd")
	b.ReportMetric(msPerOp(b, spent[2]), "bounded+deny-ms/cmd")
	b.ReportMetric(float64(spent[1])/float64(spent[0]), "bounded-ratio")
	b.ReportMetric(float64(spent[2])/float64(spent[0]), "deny-ratio")
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
	plain, err := NewExecuteShell(Options{Sandbox: SandboxBwrap, Bwrap: bwrap})
	if err != nil {
		b.Fatal(err)
	}
	boxed, err := NewExecuteShell(Options{Sandbox: SandboxBwrap, Bwrap: bwrap, Boxes: boxes})
	if err != nil {
		b.Fatal(err)
	}
	benchInTurn(b, "sandboxed", plain, "boxed", boxed)
}
