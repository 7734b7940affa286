package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/internal/ollamatest"
	"github.com/agentd/agentd/internal/testutil"
)

// driver moves one agent on the real tiny model. The random-weight model's proposals are
// anything the schema allows, so every branch is handled generically: a question is
// answered, a pause after invalid replies is resumed, an agent gone idle (it finished)
// gets a follow-up task. Only structure and counters are asserted, never content.
type driver struct {
	t        *testing.T
	c        *api.Client
	id       string
	deadline time.Time

	answers, resumes, tasks int
}

// decidable waits until the agent has a proposal awaiting a decision and returns the agent.
func (dr *driver) decidable() *api.Agent {
	t, ctx := dr.t, context.Background()
	t.Helper()
	for {
		a := waitAgent(t, dr.c, dr.id, "the agent to need a person", time.Until(dr.deadline), func(a *api.Agent) bool {
			switch a.State {
			case api.StateAwaitingDecision:
				return a.Pending != nil || a.Question != nil
			case api.StatePaused, api.StateIdle, api.StateFailed:
				return true
			}
			return false
		})
		if dr.answers+dr.resumes+dr.tasks > 20 {
			t.Fatalf("the agent keeps going round without a proposal to decide: %s", jsonString(a))
		}
		var err error
		switch {
		case a.State == api.StateAwaitingDecision && a.Pending != nil:
			return a
		case a.Question != nil:
			dr.answers++
			t.Logf("the model asked a question; answering it")
			err = api.AnswerRoute.Send(ctx, dr.c, dr.id, api.AnswerRequest{ProposalID: a.Question.ProposalID, Text: "Do what you think is best.", By: "tester"})
		case a.State == api.StatePaused:
			dr.resumes++
			t.Logf("agent paused (%s); resuming", a.StateReason)
			_, err = api.ResumeRoute.Do(ctx, dr.c, dr.id, api.None{})
		case a.State == api.StateIdle:
			dr.tasks++
			t.Logf("agent idle (%s); giving it a follow-up task", a.StateReason)
			_, err = api.TaskRoute.Do(ctx, dr.c, dr.id, api.TaskRequest{Task: "Write one more short note into notes.txt."})
		default:
			t.Fatalf("agent failed: %s", a.StateReason)
		}
		if err != nil {
			t.Fatalf("moving the agent on from %s: %v", a.State, err)
		}
	}
}

// eventLog collects the daemon's event stream from before the first agent exists.
type eventLog struct {
	mu     sync.Mutex
	events []api.Event
}

func followEvents(t *testing.T, socket string) *eventLog {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://local/v0/events", nil)
	hc := rawHTTP(socket)
	hc.Timeout = 0
	resp, err := hc.Do(req) // returns once the daemon has subscribed and sent the headers
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	l := &eventLog{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var ev api.Event
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				t.Errorf("bad event line %q: %v", sc.Bytes(), err)
				return
			}
			l.mu.Lock()
			l.events = append(l.events, ev)
			l.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return l
}

// decisions returns the decision events per proposal id.
func (l *eventLog) decisions() map[string][]api.Decision {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string][]api.Decision{}
	for _, ev := range l.events {
		if ev.Type == api.EventDecision && ev.Decision != nil {
			out[ev.Decision.ProposalID] = append(out[ev.Decision.ProposalID], *ev.Decision)
		}
	}
	return out
}

// ctl runs the agentctl binary against the daemon and returns its stdout.
func ctl(t *testing.T, socket string, args ...string) []byte {
	t.Helper()
	_, agentctl := binaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, agentctl, append([]string{"--socket", socket}, args...)...)
	cmd.Env = append(cmd.Environ(), "USER=tester")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("agentctl %q: %v\nstdout: %s\nstderr: %s", args, err, out, stderr.Bytes())
	}
	return out
}

// realBound bounds a real-Ollama test's run against hangs. It is not a performance check:
// the real-Ollama tests run in parallel, on two cores shared with other packages' tests,
// and a step of the tiny model (about 2,000 tokens a reply) took 12 s at load 12 and over
// 2 minutes with the cores busy twice over; a run of 4-5 steps must fit.
const realBound = 15 * time.Minute

func startRealDaemon(t *testing.T) (*ollamatest.Real, *daemon) {
	t.Helper()
	binaries(t)
	begin := time.Now()
	ollama := ollamatest.StartReal(t)
	t.Logf("real Ollama ready with %s in %v", ollamatest.TinyModelName, time.Since(begin).Round(time.Millisecond))
	// The product's own bound on a model call (10 minutes), not the fakes' 2: a loaded
	// machine takes minutes for one reply, and a call cut off is retried from the start.
	cfg := strings.Replace(configText(ollama.URL(), 8192, nil), `request_timeout = "2m"`, `request_timeout = "10m"`, 1)
	d := newDaemon(t, daemonOpts{binary: true, config: cfg})
	t.Logf("agentd ready in %v", d.start().Round(time.Millisecond))
	return ollama, d
}

// TestRealOllamaRun runs an agent made from a task with agentctl on the real Ollama server
// and the tiny model, for a few steps decided through agentctl and the api.
func TestRealOllamaRun(t *testing.T) {
	t.Parallel() // each real-Ollama test has its own server and daemon; together they fill both cores
	begin := time.Now()
	_, d := startRealDaemon(t)
	c := d.client()
	events := followEvents(t, d.socket)

	var a api.Agent
	if err := json.Unmarshal(ctl(t, d.socket, "--json", "run", "Write a short note about the weather into notes.txt"), &a); err != nil || a.ID == "" {
		t.Fatalf("agentctl --json run: %v (agent %s)", err, jsonString(a))
	}
	// A bound against hangs, not a performance check: a step takes 5-50s on two busy cores,
	// shared with the other real-Ollama tests.
	dr := &driver{t: t, c: c, id: a.ID, deadline: begin.Add(realBound)}

	// What we decided, by proposal id; "y -2" lets the daemon's policy approve the next one.
	// Each way of deciding once: a step on the real model costs 10-50 s, and TestOllamaDown
	// shows the run going on with a new proposal after feedback.
	ours := map[string]api.Decision{}
	plan := []string{"agentctl approve", "client approve -2", "client feedback"}
	last := time.Now()
	for _, action := range plan {
		ag := dr.decidable()
		p := ag.Pending
		t.Logf("step %d: %s proposed after %v (%d prompt, %d eval tokens); %s",
			p.Step, p.Command, time.Since(last).Round(time.Millisecond), p.PromptTokens, p.EvalTokens, action)
		last = time.Now()
		switch action {
		case "agentctl approve":
			var dec api.Decision
			if err := json.Unmarshal(ctl(t, d.socket, "--json", "approve", a.ID), &dec); err != nil {
				t.Fatalf("agentctl --json approve: %v", err)
			}
			if dec.ProposalID != p.ID || dec.Kind != api.DecisionApprove || dec.Source != "agentctl" || dec.By != "tester" {
				t.Errorf("agentctl approved %s, want an approval of %s by tester via agentctl", jsonString(dec), p.ID)
			}
			ours[p.ID] = dec
		case "client approve -2":
			dec, err := api.DecideRoute.Do(context.Background(), c, a.ID, api.DecideRequest{ProposalID: p.ID, Kind: api.DecisionApprove, Count: 2, By: "tester", Source: "integration"})
			if err != nil {
				t.Fatalf("approving %s with count 2: %v", p.ID, err)
			}
			ours[p.ID] = *dec
			// The first decision wins; a second one is refused.
			if _, err := api.DecideRoute.Do(context.Background(), c, a.ID, api.DecideRequest{ProposalID: p.ID, Kind: api.DecisionDeny}); !errors.Is(err, api.ErrConflict) {
				t.Errorf("a second decision on %s: err = %v, want a conflict", p.ID, err)
			}
		case "client feedback":
			ours[p.ID] = *decide(t, c, a.ID, p, api.DecisionFeedback, "Keep it shorter.")
		}
	}
	// Let every approved command finish before counting.
	var ps []api.Proposal
	testutil.Eventually(t, time.Until(dr.deadline), "approved commands to finish", func() bool {
		var err error
		ps, err = api.ProposalsRoute.Do(context.Background(), c, a.ID, api.None{})
		return err == nil && !slices.ContainsFunc(ps, func(p api.Proposal) bool {
			return p.Status == api.ProposalApproved || (p.Status == api.ProposalStarted && p.Command != commands.AskUser)
		})
	})
	t.Logf("%d steps decided in %v; %d proposals, %d answers, %d resumes, %d follow-up tasks",
		len(plan), time.Since(begin).Round(time.Millisecond), len(ps), dr.answers, dr.resumes, dr.tasks)
	// Every decided proposal's decision event has been read off the stream.
	testutil.Eventually(t, 10*time.Second, "the decision events", func() bool {
		decs := events.decisions()
		return !slices.ContainsFunc(ps, func(p api.Proposal) bool {
			return p.Status != api.ProposalPending && p.Status != api.ProposalSuperseded && len(decs[p.ID]) == 0
		})
	})
	checkRealRun(t, c, a.ID, ps, ours, events.decisions())

	// The CLI's JSON output parses as the client's types.
	var list []api.Agent
	if err := json.Unmarshal(ctl(t, d.socket, "ls", "--json"), &list); err != nil || len(list) != 1 || list[0].ID != a.ID {
		t.Errorf("agentctl ls --json: %v, %s", err, jsonString(list))
	}
	var st api.Status
	if err := json.Unmarshal(ctl(t, d.socket, "status", "--json"), &st); err != nil {
		t.Errorf("agentctl status --json: %v", err)
	} else if !st.Ollama.Reachable || st.Ollama.Model != ollamatest.TinyModelName || st.PID == 0 || sum(st.Agents) != 1 {
		t.Errorf("agentctl status --json: %s", jsonString(st))
	}
	if code, took := d.term(10 * time.Second); code != 0 {
		t.Errorf("agentd exited %d after SIGTERM (%v)", code, took)
	}
	t.Logf("TestRealOllamaRun took %v", time.Since(begin).Round(time.Millisecond))
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// checkRealRun checks the run's structure and counters: every proposal names a known
// command with args its schema accepts and carries token counts; every decision is
// recorded exactly once; every command that ran has its episode.
func checkRealRun(t *testing.T, c *api.Client, id string, ps []api.Proposal, ours map[string]api.Decision, decs map[string][]api.Decision) {
	t.Helper()
	ctx := context.Background()
	ag, err := api.AgentRoute.Do(ctx, c, id, api.None{})
	if err != nil {
		t.Fatal(err)
	}
	eps, err := api.HistoryRoute.Do(ctx, c, id, api.None{})
	if err != nil {
		t.Fatal(err)
	}
	episode := map[string]api.Episode{}
	for _, e := range eps {
		if _, dup := episode[e.ProposalID]; dup {
			t.Errorf("two episodes for proposal %s", e.ProposalID)
		}
		episode[e.ProposalID] = e
	}
	var promptTokens int64
	policy, finished := 0, 0
	infos, err := c.Commands(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ci := range infos {
		names = append(names, ci.Name)
	}
	for _, p := range ps {
		promptTokens += int64(p.PromptTokens)
		if !slices.Contains(names, p.Command) {
			t.Errorf("proposal %s names %q, not one of the agent's commands %v", p.ID, p.Command, names)
			continue
		}
		// Built-ins are checked here again; component commands (open_file, read_webpage...)
		// were checked against the same params by the daemon's reply schema.
		if cmd, ok := commands.Lookup(p.Command); ok {
			if err := commands.CheckArgs(cmd.Spec(), p.Args); err != nil {
				t.Errorf("proposal %s: %v", p.ID, err)
			}
		}
		if p.PromptTokens <= 0 || p.EvalTokens <= 0 || p.Model != ollamatest.TinyModelName || len(p.Hash) != 64 || p.Step < 1 || p.AgentID != id {
			t.Errorf("proposal %s: %s", p.ID, jsonString(p))
		}
		ds := decs[p.ID]
		if mine, ok := ours[p.ID]; ok {
			if len(ds) != 1 || ds[0].Kind != mine.Kind || ds[0].Source != mine.Source {
				t.Errorf("proposal %s: decided %s, decision events %s", p.ID, jsonString(mine), jsonString(ds))
			}
		} else if len(ds) > 0 {
			// Not ours: the daemon's own approval, by a rule (policy) or by the grant a
			// y -N made (grant, which names it).
			byGrant := ds[0].Source == "grant" && ds[0].Grant != "" && ds[0].GrantLabel != ""
			if len(ds) != 1 || ds[0].Kind != api.DecisionApprove || ds[0].Source != "policy" && !byGrant {
				t.Errorf("proposal %s: decisions nobody here made: %s", p.ID, jsonString(ds))
			}
			policy++
		}
		e, hasEpisode := episode[p.ID]
		switch p.Status {
		case api.ProposalSucceeded, api.ProposalFailed, api.ProposalFeedback:
			if !hasEpisode || e.Outcome != string(p.Status) || e.Step != p.Step || e.Command != p.Command {
				t.Errorf("proposal %s is %s; its episode: %s", p.ID, p.Status, jsonString(e))
			}
			if len(ds) != 1 {
				t.Errorf("proposal %s is %s after %d decisions, want 1", p.ID, p.Status, len(ds))
			}
			if p.Command == commands.Finish && p.Status == api.ProposalSucceeded {
				finished++
			}
		case api.ProposalStarted: // an open ask_user question
			if p.Command != commands.AskUser || len(ds) != 1 || hasEpisode {
				t.Errorf("proposal %s: started, with decisions %s and episode %v", p.ID, jsonString(ds), hasEpisode)
			}
		case api.ProposalPending, api.ProposalSuperseded:
			if len(ds) != 0 || hasEpisode {
				t.Errorf("proposal %s is %s but has decisions %s / an episode", p.ID, p.Status, jsonString(ds))
			}
		default:
			t.Errorf("proposal %s: unexpected status %s", p.ID, p.Status)
		}
		if d, ok := ours[p.ID]; ok && d.Kind == api.DecisionApprove && p.Status != api.ProposalSucceeded && p.Status != api.ProposalFailed {
			t.Errorf("approved proposal %s (%s) is %s, want succeeded or failed", p.ID, p.Command, p.Status)
		}
	}
	for pid := range ours {
		if !slices.ContainsFunc(ps, func(p api.Proposal) bool { return p.ID == pid }) {
			t.Errorf("decided proposal %s is not stored", pid)
		}
	}
	if len(eps) > len(ps) {
		t.Errorf("%d episodes for %d proposals", len(eps), len(ps))
	}
	if ag.PromptTokens < promptTokens || ag.PromptTokens <= 0 || ag.EvalTokens <= 0 {
		t.Errorf("agent token totals %d/%d, proposals' prompt tokens add up to %d", ag.PromptTokens, ag.EvalTokens, promptTokens)
	}
	t.Logf("%d proposals, %d episodes, %d decisions of ours, %d by policy, %d finishes; tokens %d prompt, %d eval",
		len(ps), len(eps), len(ours), policy, finished, ag.PromptTokens, ag.EvalTokens)
}

// TestOllamaDown takes the real Ollama server away under a running agent, twice: stopped
// before the agent's next step, and killed while it thinks. Each time the agent shows
// waiting_for_model with a reason, and once the server is back (same port, same models)
// the run goes on with a new proposal.
func TestOllamaDown(t *testing.T) {
	t.Parallel() // see TestRealOllamaRun
	begin := time.Now()
	ollama, d := startRealDaemon(t)
	c := d.client()
	a := create(t, c, "oscar")
	dr := &driver{t: t, c: c, id: a.ID, deadline: begin.Add(realBound)}
	p := dr.decidable().Pending
	t.Logf("first proposal (%s) after %v", p.Command, time.Since(begin).Round(time.Millisecond))

	for _, outage := range []struct {
		name     string
		thinking bool // take the server away while the agent thinks, not before
		stop     func()
	}{
		{"stopped before the next step", false, ollama.Stop},
		{"killed while the agent thinks", true, ollama.Kill},
	} {
		step := time.Now()
		if !outage.thinking {
			outage.stop()
		}
		// Feedback, whatever was proposed: the next thing the agent does is ask the model.
		decide(t, c, a.ID, p, api.DecisionFeedback, "Try something else.")
		if outage.thinking {
			waitAgent(t, c, a.ID, "thinking", 10*time.Second, func(a *api.Agent) bool { return a.State == api.StateThinking })
			time.Sleep(300 * time.Millisecond) // a step takes seconds: the call is under way
			outage.stop()
		}
		down := waitAgent(t, c, a.ID, "waiting_for_model", 30*time.Second, func(a *api.Agent) bool {
			return a.State == api.StateWaitingForModel && a.StateReason != ""
		})
		t.Logf("%s: waiting_for_model after %v: %s", outage.name, time.Since(step).Round(time.Millisecond), down.StateReason)
		st, err := api.StatusRoute.Do(context.Background(), c, "", api.None{})
		if err != nil || st.Ollama.Error == "" || st.Ollama.Reachable || st.Agents[string(api.StateWaitingForModel)] != 1 {
			t.Errorf("status with Ollama down: %s, %v", jsonString(st), err)
		} else {
			t.Logf("status with Ollama down: %s", jsonString(st.Ollama))
		}

		step = time.Now()
		ollama.Restart(t)
		restarted := time.Since(step)
		next := dr.decidable()
		t.Logf("%s: Ollama restarted in %v; next proposal (%s, step %d) %v after the restart", outage.name,
			restarted.Round(time.Millisecond), next.Pending.Command, next.Pending.Step, time.Since(step).Round(time.Millisecond))
		if next.Pending.ID == p.ID || next.Step <= p.Step {
			t.Errorf("the run did not go on: proposal %s at step %d before, now %s", p.ID, p.Step, jsonString(next))
		}
		if st, err := api.StatusRoute.Do(context.Background(), c, "", api.None{}); err != nil || st.Ollama.Error != "" || !st.Ollama.Reachable {
			t.Errorf("status after Ollama came back: %s, %v", jsonString(st), err)
		}
		p = next.Pending
	}
	t.Logf("TestOllamaDown took %v", time.Since(begin).Round(time.Millisecond))
}

// TestRealOllamaTeam runs the shipped software-company workflow on the real Ollama server
// and the tiny random-weight model, started with agentctl, and asserts only structure: the
// run terminates with a recorded reason within its turn limit, every phase end has a mode,
// and every proposal of a role agent went through a decision. Proposals the programmer
// makes are decided through the client (the first approved, the rest denied, which ends
// that role's turn), as a person would.
func TestRealOllamaTeam(t *testing.T) {
	t.Parallel() // see TestRealOllamaRun
	begin := time.Now()
	_, d := startRealDaemon(t)
	c := d.client()

	src, err := os.ReadFile("../../examples/teams/software_company.toml")
	if err != nil {
		t.Fatal(err)
	}
	// A smaller run than the example's, to bound the test's time; the shape is the same.
	// The random model sets language only now and then, so the example's design → code
	// condition made this test take 15 s or 3 minutes; it goes on to code every time here,
	// which is the part this test is for (the programmer's proposals decided by a person).
	// Six design turns, then the CTO's and the programmer's first turns in coding.
	const maxTurns = 8
	text := string(src)
	for _, e := range []struct{ from, to, why string }{
		{"max_turns = 80", fmt.Sprint("max_turns = ", maxTurns), "the run's turn limit: two design turns a phase, then coding"},
		// Random weights fill write_file's contents to its 2,000-character bound, about
		// 2,000 tokens a proposal: two proposals a programmer's turn, not eight.
		{"max_steps = 8", "max_steps = 2", "the programmer's steps a turn"},
		{"store = \"modality\"\nmax_turns = 6", "store = \"modality\"\nmax_turns = 2", "demand_analysis's turns"},
		{"store = \"language\"\nmax_turns = 4", "store = \"language\"\nmax_turns = 2", "language_choice's turns"},
		{"store = \"ideas\"\nmax_turns = 6", "store = \"ideas\"\nmax_turns = 2", "brainstorm's turns"},
		{`next = [{ state = "code", when = "language is set" }, "end"]`, `next = ["code"]`, "design's next state"},
	} {
		edited := strings.Replace(text, e.from, e.to, 1)
		if edited == text {
			t.Fatalf("the example's %q line (%s) is gone: update this test", e.from, e.why)
		}
		text = edited
	}
	file := filepath.Join(t.TempDir(), "software_company.toml")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	var r api.TeamRun
	if err := json.Unmarshal(ctl(t, d.socket, "--json", "team", "run", "--keep-agents", file, "a CLI that counts words"), &r); err != nil || r.ID == "" {
		t.Fatalf("agentctl --json team run: %v (%s)", err, jsonString(r))
	}

	// A bound against hangs, not a performance check.
	deadline := begin.Add(15 * time.Minute)
	ctx := context.Background()
	decided := map[string]bool{}
	for {
		cur, err := api.TeamRoute.Do(ctx, c, r.ID, api.None{})
		if err != nil {
			t.Fatal(err)
		}
		r = *cur
		if r.Status != api.TeamRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the team run did not end in time: %s", jsonString(r))
		}
		if r.Waiting != "" {
			if a, err := api.AgentRoute.Do(ctx, c, r.Waiting, api.None{}); err == nil {
				switch {
				case a.State == api.StateAwaitingDecision && a.Pending != nil && !decided[a.Pending.ID]:
					kind := api.DecisionDeny
					if len(decided) == 0 {
						kind = api.DecisionApprove
					}
					if _, err := api.DecideRoute.Do(ctx, c, a.ID, api.DecideRequest{ProposalID: a.Pending.ID, Kind: kind, By: "tester", Source: "integration"}); err != nil {
						t.Logf("deciding %s: %v", a.Pending.ID, err)
					}
					decided[a.Pending.ID] = true
				case a.Question != nil:
					api.AnswerRoute.Send(ctx, c, a.ID, api.AnswerRequest{ProposalID: a.Question.ProposalID, Text: "Do what you think is best.", By: "tester"})
				case a.State == api.StatePaused:
					api.ResumeRoute.Do(ctx, c, a.ID, api.None{})
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("team run %s ended %s after %d turns in %v: %s", r.ID, r.Status, r.Turns, time.Since(begin).Round(time.Millisecond), r.Reason)

	if r.Status != api.TeamFinished && r.Status != api.TeamTurnLimit {
		t.Errorf("status %s (%s), want finished or turn_limit", r.Status, r.Reason)
	}
	if r.Reason == "" || r.Turns > maxTurns || r.EndedAt.IsZero() {
		t.Errorf("run: %s", jsonString(r))
	}
	full, err := api.TeamRoute.Do(ctx, c, r.ID, api.None{})
	if err != nil {
		t.Fatal(err)
	}
	tr := full.Transcript
	if len(tr) == 0 || tr[len(tr)-1].Kind != api.TurnEnd || tr[len(tr)-1].Mode != r.Status {
		t.Fatalf("transcript does not end with the run's end: %s", jsonString(tr))
	}
	messages := 0
	for i, turn := range tr {
		if turn.Seq != i+1 {
			t.Errorf("turn %d has seq %d", i+1, turn.Seq)
		}
		switch turn.Kind {
		case api.TurnMessage:
			messages++
			if turn.Role == "" || turn.Phase == "" {
				t.Errorf("unlabelled message: %s", jsonString(turn))
			}
		case api.TurnPhaseEnd:
			if turn.Mode == "" || turn.Text == "" {
				t.Errorf("phase end without a reason: %s", jsonString(turn))
			}
		}
	}
	if messages != r.Turns {
		t.Errorf("%d messages in the transcript, the run counted %d turns", messages, r.Turns)
	}
	// Design ends after its six turns and always goes on to code: the programmer had a turn.
	if _, ok := full.Agents["programmer"]; !ok {
		t.Errorf("the run never reached the programmer: agents %s", jsonString(full.Agents))
	}
	t.Logf("%d programmer proposals decided here", len(decided))
	// Every proposal of a role agent was decided by a person or by the policy, never run
	// unasked (--keep-agents keeps the agents to look at).
	for role, id := range full.Agents {
		ps, err := api.ProposalsRoute.Do(ctx, c, id, api.None{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			if p.Status == api.ProposalSucceeded && p.Command == "write_file" && !decided[p.ID] {
				t.Errorf("role %s: write_file %s ran without a person's decision", role, p.ID)
			}
		}
	}
	var list []api.TeamRun
	if err := json.Unmarshal(ctl(t, d.socket, "--json", "team", "ls"), &list); err != nil || len(list) != 1 || list[0].ID != r.ID {
		t.Errorf("agentctl --json team ls: %v, %s", err, jsonString(list))
	}
}
