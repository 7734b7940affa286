package integration

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/internal/ollamatest"
	"github.com/agentd/agentd/internal/testutil"
)

// snap is what the API shows of one agent.
type snap struct {
	agent     *api.Agent
	proposals []api.Proposal
	episodes  []api.Episode
}

func snapshot(t *testing.T, c *api.Client, ids map[string]string) map[string]snap {
	t.Helper()
	ctx := context.Background()
	out := map[string]snap{}
	for name, id := range ids {
		a, err := api.AgentRoute.Do(ctx, c, id, api.None{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ps, err := api.ProposalsRoute.Do(ctx, c, id, api.None{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		eps, err := api.HistoryRoute.Do(ctx, c, id, api.None{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = snap{a, ps, eps}
	}
	return out
}

// sameAs checks that nothing about the agent changed across a restart: its state, step,
// pending proposal, every proposal and every episode.
func sameAs(t *testing.T, name string, before, after snap) {
	t.Helper()
	b, a := before.agent, after.agent
	if a.State != b.State || a.StateReason != b.StateReason || a.Step != b.Step || a.RunID != b.RunID ||
		a.PromptTokens != b.PromptTokens || a.EvalTokens != b.EvalTokens {
		t.Errorf("%s changed across the restart:\nbefore %s\nafter  %s", name, jsonString(b), jsonString(a))
	}
	if (a.Pending == nil) != (b.Pending == nil) || (a.Pending != nil && (a.Pending.ID != b.Pending.ID || a.Pending.Status != b.Pending.Status)) {
		t.Errorf("%s: pending proposal %s before the restart, %s after", name, jsonString(b.Pending), jsonString(a.Pending))
	}
	key := func(p api.Proposal) string {
		return strings.Join([]string{p.ID, string(p.Status), p.Hash, p.Command, string(p.Args)}, " ")
	}
	if !slices.Equal(mapSlice(before.proposals, key), mapSlice(after.proposals, key)) {
		t.Errorf("%s: proposals changed across the restart:\nbefore %s\nafter  %s", name, jsonString(before.proposals), jsonString(after.proposals))
	}
	ekey := func(e api.Episode) string {
		return e.ProposalID + " " + e.Outcome + " " + e.Result + " " + e.Feedback
	}
	if !slices.Equal(mapSlice(before.episodes, ekey), mapSlice(after.episodes, ekey)) {
		t.Errorf("%s: history changed across the restart:\nbefore %s\nafter  %s", name, jsonString(before.episodes), jsonString(after.episodes))
	}
}

func mapSlice[T any](s []T, f func(T) string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = f(v)
	}
	return out
}

// TestCrashRecovery kills the daemon with SIGKILL at the moments that matter — a model
// call in flight, proposals awaiting decisions, a non-idempotent command between started
// and its result, right after a deny and a feedback were acknowledged — and checks after
// each restart that nothing was lost, nothing re-ran, and every agent resumed.
func TestCrashRecovery(t *testing.T) {
	begin := time.Now()
	r := newCrashRig(t)
	r.killThinkingAndDenied()
	r.killMidCommand()
	r.killAfterFeedback()
	r.reapprove()
	t.Logf("TestCrashRecovery took %v", time.Since(begin).Round(time.Millisecond))
}

// crashRig is TestCrashRecovery's daemon (this test binary, with test_slow), its fake
// model and five agents: alpha, bravo, charlie, delta and echo.
type crashRig struct {
	t       *testing.T
	fake    *ollamatest.Fake
	models  *router
	d       *daemon
	c       *api.Client
	slowDir string
	ids     map[string]string        // name → agent id
	first   map[string]*api.Proposal // name → its first proposal
}

func newCrashRig(t *testing.T) *crashRig {
	r := &crashRig{t: t, fake: ollamatest.NewFake(t), slowDir: t.TempDir(), ids: map[string]string{}, first: map[string]*api.Proposal{}}
	r.models = route(r.fake, func(agent string, n int) string {
		switch {
		case agent == "charlie" && n == 0:
			return reply("test_slow", map[string]string{"label": "once"})
		case agent == "echo" && n == 0:
			return reply("write_file", map[string]string{"path": "echo.txt", "contents": "x"})
		}
		return listFolder(n)
	})
	cmds := append(slices.Clone(commands.DefaultNames), "test_slow")
	r.d = newDaemon(t, daemonOpts{config: configText(r.fake.URL(), 4096, cmds), env: []string{slowDirEnv + "=" + r.slowDir}})
	t.Logf("daemon ready in %v", r.d.start().Round(time.Millisecond))
	r.c = r.d.client()
	// Four agents reach their first proposal with an instant model.
	names := []string{"bravo", "charlie", "delta", "echo"}
	for _, name := range names {
		r.ids[name] = create(t, r.c, name).ID
	}
	for _, name := range names {
		r.first[name] = waitAgent(t, r.c, r.ids[name], name+"'s first proposal", 10*time.Second, awaiting).Pending
	}
	if r.first["charlie"].Command != "test_slow" || r.first["echo"].Command != "write_file" {
		t.Fatalf("charlie proposed %s, echo %s", r.first["charlie"].Command, r.first["echo"].Command)
	}
	return r
}

// crash kills the daemon, checks that the decision just acknowledged on proposal p is
// stored, and starts the daemon again; it returns the snapshot taken after the restart.
func (r *crashRig) crash(what string, p *api.Proposal) map[string]snap {
	t := r.t
	t.Helper()
	r.d.kill()
	if n := storedDecisions(t, r.d.stateDir, p.ID)[p.ID]; n != 1 {
		t.Errorf("%s: %d decisions stored on %s (%s), want 1", what, n, p.ID, p.Command)
	}
	r.fake.SetDelay(0)
	t.Logf("killed %s; restart took %v", what, r.d.start().Round(time.Millisecond))
	r.c = r.d.client()
	return r.snapshot()
}

func (r *crashRig) snapshot() map[string]snap { return snapshot(r.t, r.c, r.ids) }

// killThinkingAndDenied: (a) alpha's model call is in flight, (b) bravo, charlie and delta
// await decisions, and echo's proposal is denied the moment before the kill.
func (r *crashRig) killThinkingAndDenied() {
	t, c := r.t, r.c
	r.fake.SetDelay(time.Hour)
	r.ids["alpha"] = create(t, c, "alpha").ID
	testutil.Eventually(t, 10*time.Second, "alpha's model call", func() bool { return r.models.requested("alpha") == 1 })
	waitAgent(t, c, r.ids["alpha"], "alpha thinking", 5*time.Second, func(a *api.Agent) bool { return a.State == api.StateThinking })
	before := r.snapshot()
	decide(t, c, r.ids["echo"], r.first["echo"], api.DecisionDeny, "")
	after := r.crash("alpha thinking, bravo/charlie/delta awaiting, echo just denied", r.first["echo"])
	for _, name := range []string{"bravo", "charlie", "delta"} {
		sameAs(t, name, before[name], after[name])
	}
	echo := after["echo"]
	if echo.agent.State != api.StateIdle || !strings.Contains(echo.agent.StateReason, "denied") || echo.agent.Pending != nil {
		t.Errorf("echo after the restart: %s; want idle, denied", jsonString(echo.agent))
	}
	if len(echo.proposals) != 1 || echo.proposals[0].Status != api.ProposalDenied ||
		len(echo.episodes) != 1 || echo.episodes[0].Outcome != "denied" {
		t.Errorf("echo lost its deny: proposals %s, history %s", jsonString(echo.proposals), jsonString(echo.episodes))
	}
	// The agent that was thinking thinks again and proposes.
	alpha := waitAgent(t, r.c, r.ids["alpha"], "alpha's proposal after the restart", 10*time.Second, awaiting)
	if alpha.Step != 1 || r.models.requested("alpha") != 2 {
		t.Errorf("alpha after the restart: step %d, %d model calls; want step 1 after 2 calls", alpha.Step, r.models.requested("alpha"))
	}
	if _, err := os.Stat(filepath.Join(r.slowDir, "starts")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("test_slow ran without an approval")
	}
}

// killMidCommand: (c) test_slow is approved and the daemon dies while it runs. After the
// restart it is interrupted, shown again for a decision with a reason, and not re-run.
func (r *crashRig) killMidCommand() {
	t, slow := r.t, r.first["charlie"]
	decide(t, r.c, r.ids["charlie"], slow, api.DecisionApprove, "")
	testutil.Eventually(t, 10*time.Second, "test_slow to start", func() bool { return slowStarts(r.slowDir) == 1 })
	waitAgent(t, r.c, r.ids["charlie"], "charlie executing", 5*time.Second, func(a *api.Agent) bool { return a.State == api.StateExecuting })
	before := r.snapshot()
	after := r.crash("test_slow between started and its result", slow)
	for _, name := range []string{"alpha", "bravo", "delta", "echo"} {
		sameAs(t, name, before[name], after[name])
	}
	ch := after["charlie"].agent
	if ch.State != api.StateAwaitingDecision || !strings.Contains(ch.StateReason, "test_slow") ||
		ch.Pending == nil || ch.Pending.ID != slow.ID || ch.Pending.Status != api.ProposalInterrupted {
		t.Errorf("charlie after a kill mid-command: %s; want awaiting_decision on the interrupted test_slow with a reason", jsonString(ch))
	}
	if ps := after["charlie"].proposals; len(ps) != 1 || ps[0].Status != api.ProposalInterrupted {
		t.Errorf("charlie's proposals: %s; want the one test_slow, interrupted", jsonString(ps))
	}
	if eps := after["charlie"].episodes; len(eps) != 0 {
		t.Errorf("an interrupted command left episodes: %s", jsonString(eps))
	}
	// A re-run would have started within this window.
	testutil.Hold(300*time.Millisecond, func() bool { return slowStarts(r.slowDir) == 1 })
	if n := slowStarts(r.slowDir); n != 1 {
		t.Fatalf("test_slow started %d times, want 1: the restart re-ran a command that is not idempotent", n)
	}
}

// killAfterFeedback: (d) the daemon dies the moment delta's feedback is acknowledged.
func (r *crashRig) killAfterFeedback() {
	t, p := r.t, r.first["delta"]
	before := r.snapshot()
	decide(t, r.c, r.ids["delta"], p, api.DecisionFeedback, "look somewhere else")
	after := r.crash("right after a feedback", p)
	for _, name := range []string{"alpha", "bravo", "charlie", "echo"} {
		sameAs(t, name, before[name], after[name])
	}
	ps, eps := after["delta"].proposals, after["delta"].episodes
	if len(ps) == 0 || ps[0].ID != p.ID || ps[0].Status != api.ProposalFeedback ||
		len(eps) != 1 || eps[0].Outcome != "feedback" || eps[0].Feedback != "look somewhere else" {
		t.Errorf("delta lost its feedback: proposals %s, history %s", jsonString(ps), jsonString(eps))
	}
	delta := waitAgent(t, r.c, r.ids["delta"], "delta's next proposal", 10*time.Second, func(a *api.Agent) bool {
		return awaiting(a) && a.Pending.ID != p.ID
	})
	if delta.Step != 2 {
		t.Errorf("delta's proposal after feedback is step %d, want 2", delta.Step)
	}
}

// reapprove approves the interrupted test_slow: it runs exactly once more. Then a clean
// stop, and every decision made is in the store, once.
func (r *crashRig) reapprove() {
	t, slow := r.t, r.first["charlie"]
	decide(t, r.c, r.ids["charlie"], slow, api.DecisionApprove, "")
	if _, err := api.DecideRoute.Do(context.Background(), r.c, r.ids["charlie"], api.DecideRequest{ProposalID: slow.ID, Kind: api.DecisionApprove}); !errors.Is(err, api.ErrConflict) {
		t.Errorf("a second approval of the interrupted proposal: err = %v, want a conflict", err)
	}
	testutil.Eventually(t, 10*time.Second, "test_slow to start again", func() bool { return slowStarts(r.slowDir) == 2 })
	if err := os.WriteFile(filepath.Join(r.slowDir, "release"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	charlie := waitAgent(t, r.c, r.ids["charlie"], "charlie's next proposal", 10*time.Second, func(a *api.Agent) bool {
		return awaiting(a) && a.Pending.ID != slow.ID
	})
	eps, err := api.HistoryRoute.Do(context.Background(), r.c, r.ids["charlie"], api.None{})
	if err != nil {
		t.Fatal(err)
	}
	if len(eps) != 1 || eps[0].ProposalID != slow.ID || eps[0].Outcome != "succeeded" || charlie.Step != 2 {
		t.Errorf("after the re-approved test_slow: step %d, history %s", charlie.Step, jsonString(eps))
	}
	if n := slowStarts(r.slowDir); n != 2 {
		t.Errorf("test_slow started %d times, want 2", n)
	}
	if code, _ := r.d.term(10 * time.Second); code != 0 {
		t.Errorf("agentd exited %d on SIGTERM", code)
	}
	echo, delta, bravo := r.first["echo"].ID, r.first["delta"].ID, r.first["bravo"].ID
	got := storedDecisions(t, r.d.stateDir, echo, slow.ID, delta, bravo)
	for id, n := range map[string]int{echo: 1, slow.ID: 2, delta: 1, bravo: 0} {
		if got[id] != n {
			t.Errorf("proposal %s has %d stored decisions, want %d", id, got[id], n)
		}
	}
}

// TestSIGTERMGraceful stops the real agentd with SIGTERM while a model call is in flight:
// it exits 0 within a few seconds, removes its socket, and on restart the agent thinks again.
func TestSIGTERMGraceful(t *testing.T) {
	fake := ollamatest.NewFake(t)
	models := route(fake, func(agent string, n int) string { return listFolder(n) })
	d := newDaemon(t, daemonOpts{binary: true, config: configText(fake.URL(), 4096, nil)})
	t.Logf("daemon ready in %v", d.start().Round(time.Millisecond))
	c := d.client()

	fake.SetDelay(time.Hour)
	a := create(t, c, "sierra")
	testutil.Eventually(t, 10*time.Second, "sierra's model call", func() bool { return models.requested("sierra") == 1 })
	waitAgent(t, c, a.ID, "sierra thinking", 5*time.Second, func(a *api.Agent) bool { return a.State == api.StateThinking })

	code, took := d.term(10 * time.Second)
	t.Logf("SIGTERM with a model call in flight: exit %d after %v", code, took.Round(time.Millisecond))
	if code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	if took > 5*time.Second {
		t.Errorf("shutdown took %v, want a few seconds at most", took)
	}
	if _, err := os.Lstat(d.socket); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("socket %s left behind after a clean shutdown (err = %v)", d.socket, err)
	}
	if st := storedAgent(t, d.stateDir, a.ID); st.State != api.StateThinking || st.Step != 0 {
		t.Errorf("stored agent after SIGTERM: state %s, step %d; want thinking, 0", st.State, st.Step)
	}

	fake.SetDelay(0)
	t.Logf("restart took %v", d.start().Round(time.Millisecond))
	got := waitAgent(t, d.client(), a.ID, "sierra's proposal after the restart", 10*time.Second, awaiting)
	if got.Step != 1 || models.requested("sierra") != 2 {
		t.Errorf("after the restart: step %d after %d model calls; want step 1 after 2", got.Step, models.requested("sierra"))
	}
}

// TestSystemdNotify runs the real agentd as a Type=notify unit would: with NOTIFY_SOCKET
// set, it sends READY=1 once its API socket answers and STOPPING=1 on SIGTERM.
func TestSystemdNotify(t *testing.T) {
	path := filepath.Join(testutil.ShortTempDir(t), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	msgs := make(chan string, 16)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, _, err := conn.ReadFromUnix(buf)
			if err != nil {
				close(msgs)
				return
			}
			msgs <- string(buf[:n])
		}
	}()
	next := func(want string) {
		t.Helper()
		select {
		case m := <-msgs:
			if !strings.Contains(m, want) {
				t.Fatalf("notification %q, want %s", m, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no %s notification within 30s", want)
		}
	}

	fake := ollamatest.NewFake(t)
	d := newDaemon(t, daemonOpts{binary: true, config: configText(fake.URL(), 4096, nil), env: []string{"NOTIFY_SOCKET=" + path}})
	d.start() // returns once the socket answers; READY=1 was sent just before
	next("READY=1")
	if code, _ := d.term(10 * time.Second); code != 0 {
		t.Fatalf("exit code %d after SIGTERM", code)
	}
	next("STOPPING=1")
}
