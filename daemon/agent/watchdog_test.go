package agent

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ollama/ollama/api"

	"github.com/agentd/agentd/daemon/agent/watchdog"
	"github.com/agentd/agentd/daemon/client"
)

// loopMetrics records the loops the supervisor reports.
type loopMetrics struct {
	noMetrics
	mu    sync.Mutex
	loops []string
}

func (m *loopMetrics) Loop(kind, action string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.loops = append(m.loops, kind+":"+action)
}

func (m *loopMetrics) got() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.loops...)
}

// loopForever makes the fake model answer, after the scripted replies, with step(n) for
// its n-th unscripted reply (from 0).
func loopForever(h *harness, step func(n int) string) {
	var n atomic.Int64
	h.fake.SetDefault(func(*api.ChatRequest) string { return step(int(n.Add(1) - 1)) })
}

func withCommands(extra ...string) func(*Options) {
	return func(o *Options) { o.Commands = append(append([]string(nil), testCommands...), extra...) }
}

// TestWatchdogStopsEveryLoopShape runs each loop shape through the supervisor with an
// agent granted `y -20`, so only the watchdog can stop it: it is stopped within two
// rounds of the loop, its grant is cancelled, and a person is asked with the loop's kind
// and steps.
func TestWatchdogStopsEveryLoopShape(t *testing.T) {
	list := reply("list_folder", map[string]string{"path": "."})
	notes := reply("read_file", map[string]string{"path": "notes.txt"})
	write := func(path, text string) string {
		return reply("write_file", map[string]string{"path": path, "contents": text})
	}
	tests := []struct {
		name   string
		opt    func(*Options)
		script []string
		loop   func(n int) string
		kind   watchdog.Kind
		start  int // the loop's first step
		period int // steps in one round of it
		caught int // the step the watchdog asks about
	}{
		{name: "repeat", loop: func(int) string { return list }, kind: watchdog.Repeat, start: 1, period: 1, caught: 2},
		{name: "flip_flop", script: []string{write("notes.txt", "buy milk")},
			loop: func(n int) string { return []string{list, notes}[n%2] }, kind: watchdog.Cycle, start: 2, period: 2, caught: 5},
		{name: "period_3", script: []string{write("a", "A"), write("b", "B")},
			loop: func(n int) string {
				return []string{reply("read_file", map[string]string{"path": "a"}), reply("read_file", map[string]string{"path": "./b"}), list}[n%3]
			}, kind: watchdog.Cycle, start: 3, period: 3, caught: 8},
		{name: "failing_missing_files", loop: func(n int) string {
			return reply("read_file", map[string]string{"path": fmt.Sprintf("gone%d.txt", n)})
		}, kind: watchdog.Failing, start: 1, period: 3, caught: 4},
		{name: "no_progress_same_content", opt: func(o *Options) {
			o.Agents = map[string]AgentOverrides{"tester": {Watchdog: watchdog.Config{IdleSteps: 4}}}
		}, script: []string{write("c0", "TODO"), write("c1", "TODO"), write("c2", "TODO"), write("c3", "TODO"), write("c4", "TODO")},
			loop: func(n int) string { return reply("read_file", map[string]string{"path": fmt.Sprintf("c%d", n)}) },
			kind: watchdog.NoProgress, start: 7, period: 4, caught: 11},
		{name: "undo_write_delete", opt: withCommands("delete_file"), loop: func(n int) string {
			if n%2 == 0 {
				return write("tmp.txt", "draft")
			}
			return reply("delete_file", map[string]string{"path": "tmp.txt"})
		}, kind: watchdog.Undo, start: 1, period: 2, caught: 4},
		{name: "undo_append_again", opt: withCommands("append_to_file"), loop: func(n int) string {
			if n%2 == 0 {
				return reply("append_to_file", map[string]string{"path": "log.md", "text": "- checked\n"})
			}
			return reply("read_file", map[string]string{"path": "log.md"})
		}, kind: watchdog.Undo, start: 1, period: 2, caught: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m loopMetrics
			h := newHarness(t, func(o *Options) {
				o.Metrics = &m
				if tt.opt != nil {
					tt.opt(o)
				}
			})
			h.fake.Script(tt.script...)
			loopForever(h, tt.loop)
			a := autoAgent(h, 20)
			want := client.StatePaused
			if tt.kind == watchdog.Repeat {
				want = client.StateAwaitingDecision // asks on the proposal, as ever
			}
			got := h.waitFor(a.ID, "the watchdog's question", func(a *client.Agent) bool { return a.State == want && a.Pending != nil })
			if got.Pending.Step != tt.caught {
				t.Fatalf("asked at step %d (%s), want step %d", got.Pending.Step, got.StateReason, tt.caught)
			}
			if ran := len(h.history(a.ID)); ran != tt.caught-1 || tt.caught-tt.start > 2*tt.period {
				t.Errorf("%d steps ran, %d of the loop; want it stopped within two rounds of %d", ran, tt.caught-tt.start, tt.period)
			}
			for _, part := range []string{fmt.Sprintf("%d approvals left of its y -N grant are cancelled", 20-(tt.caught-1))} {
				if !strings.Contains(got.StateReason, part) {
					t.Errorf("reason %q lacks %q", got.StateReason, part)
				}
			}
			if tt.kind != watchdog.Repeat {
				for _, part := range []string{"(" + string(tt.kind) + ")", fmt.Sprintf("%d: ", tt.caught), "agentctl resume tester"} {
					if !strings.Contains(got.StateReason, part) {
						t.Errorf("reason %q lacks %q", got.StateReason, part)
					}
				}
			}
			if got.Policy.Mode != "ask" || got.Policy.AutoSteps != 0 {
				t.Errorf("policy after the watchdog = %+v, want the grant cancelled", got.Policy)
			}
			entries, err := h.sup.auditLog.Audit(context.Background(), client.AuditQuery{Agent: a.Name})
			if err != nil {
				t.Fatal(err)
			}
			audited := false
			for _, e := range entries {
				audited = audited || e.Kind == "watchdog" && strings.Contains(string(e.Detail), `"kind":"`+string(tt.kind)+`"`)
			}
			if !audited {
				t.Errorf("no watchdog entry of kind %s in the audit log", tt.kind)
			}
			if loops := m.got(); len(loops) != 1 || loops[0] != string(tt.kind)+":ask" {
				t.Errorf("loops counted = %v, want [%s:ask]", loops, tt.kind)
			}
		})
	}
}
