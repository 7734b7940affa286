package effect

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/commands/shell"
)

// BenchmarkEffectPreview puts the effect preview beside the plain sandboxed run of the
// same command, in one run, on a workspace of 1,000 files (1 KiB each, in 10 folders):
// for `true`, and for a line that appends to 100 of them. It reports each one's
// milliseconds per command, the preview's cost over the plain run (target ≤ 150 ms),
// for the 100-file line the apply that approving does, and the agent's first preview,
// which makes its copy whole. It does so for both ways a preview runs: over an overlay
// on the workspace (a daemon that may mount, as root) and in a copy of it (one that may
// not).
func BenchmarkEffectPreview(b *testing.B) {
	for _, c := range []struct {
		name  string
		mount bool
	}{{"overlay", true}, {"copy", false}} {
		b.Run(c.name, func(b *testing.B) {
			if c.mount && !mayMount {
				b.Skip("the daemon may not mount here (not root): no overlay")
			}
			defer func(was bool) { mayMount = was }(mayMount)
			mayMount = c.mount
			benchmarkPreview(b)
		})
	}
}

func benchmarkPreview(b *testing.B) {
	f := newFixture(b, shell.Options{})
	files := map[string]string{}
	for i := range 1000 {
		files[fmt.Sprintf("d%d/f%d.txt", i%10, i)] = strings.Repeat(fmt.Sprintf("line %d\n", i), 256)[:1024]
	}
	write(b, f.ws, files)
	touch := "for i in $(seq 0 99); do echo x >> d$((i%10))/f$i.txt; done"
	ctx := context.Background()
	env := commands.Env{Workspace: f.ws, AgentID: "a-1"}
	lim := commands.Limits{Timeout: time.Minute}
	args := func(line string) json.RawMessage {
		a, _ := json.Marshal(map[string]string{"command_line": line})
		return a
	}
	// The first preview of an agent makes its copy whole (a file created per file); the
	// copy is kept, and later previews write only what differs. Both are reported.
	cold := time.Now()
	if eff, _ := f.p.Run(ctx, f.sh, env, args("true"), lim, 0); !eff.Appliable() {
		b.Fatalf("no preview: %+v", eff)
	}
	first := time.Since(cold)
	var plainTrue, pvTrue, plainTouch, pvTouch, apply time.Duration
	for b.Loop() {
		t0 := time.Now()
		if _, err := commands.Run(ctx, f.sh, env, args("true"), lim); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if eff, _ := f.p.Run(ctx, f.sh, env, args("true"), lim, 0); !eff.Appliable() {
			b.Fatalf("no preview: %+v", eff)
		}
		t2 := time.Now()
		if _, err := commands.Run(ctx, f.sh, env, args(touch), lim); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		eff, _ := f.p.Run(ctx, f.sh, env, args(touch), lim, 0)
		if !eff.Appliable() || !strings.HasPrefix(eff.Summary, "changes 100 files") {
			b.Fatalf("preview: %+v", eff)
		}
		t4 := time.Now()
		if _, err := f.p.Apply(ctx, "a-1", f.ws, eff); err != nil {
			b.Fatal(err)
		}
		t5 := time.Now()
		plainTrue += t1.Sub(t0)
		pvTrue += t2.Sub(t1)
		plainTouch += t3.Sub(t2)
		pvTouch += t4.Sub(t3)
		apply += t5.Sub(t4)
	}
	n := float64(b.N)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / n }
	b.ReportMetric(ms(plainTrue), "true-plain-ms")
	b.ReportMetric(ms(pvTrue), "true-preview-ms")
	b.ReportMetric(ms(pvTrue-plainTrue), "true-over-ms")
	b.ReportMetric(ms(plainTouch), "touch100-plain-ms")
	b.ReportMetric(ms(pvTouch), "touch100-preview-ms")
	b.ReportMetric(ms(pvTouch-plainTouch), "touch100-over-ms")
	b.ReportMetric(ms(apply), "touch100-apply-ms")
	b.ReportMetric(float64(first)/float64(time.Millisecond), "first-preview-ms")
}
