package agent

// Benchmarks for DESIGN §7's step targets. They report figures (b.ReportMetric) and never
// fail on them; scripts/bench.sh runs them with sensible -benchtime values.
//
//	BenchmarkStepOverhead      daemon overhead per step, instant fake model (p99 ≤ 5 ms), also
//	                           with long-term memory: 1,000 episodes and 100k memories
//	BenchmarkFirstStepPrompt   first-step prompt size with the default commands (≤ 2,600 chars)
//	BenchmarkStepVsBareChat    agentd step ÷ bare /api/chat on the real server (bench_real_test.go)

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	ollama "github.com/ollama/ollama/api"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/llm"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/ollamatest"
	"github.com/agentd/agentd/internal/randid"
	"github.com/agentd/agentd/memory"
)

// drainJSON consumes a subscription the way the local API's event stream does: it encodes
// every event as JSON. It returns when the subscription is closed.
func drainJSON(ch <-chan api.Event, dropped *atomic.Bool) {
	enc := json.NewEncoder(io.Discard)
	for ev := range ch {
		enc.Encode(ev)
	}
	dropped.Store(true) // closed: unsubscribed at the end, or dropped for being slow
}

// benchGoals give the benchmark agents a task the way `agentctl new NAME -g …` does.
var benchGoals = []string{"List the files in your workspace", "Summarize what they contain in summary.txt"}

const benchDescription = "an agent that keeps its workspace tidy"

// BenchmarkStepOverhead measures the daemon's own cost per step against a fake model that
// answers instantly: approval by policy, execution of a cheap command (list_folder), the
// episode, the next prompt, the model call over loopback and the proposal — every
// transaction on SQLite (WAL, synchronous=FULL) in a temp dir — with three subscribers on
// the event broker. One op is one step, proposal to proposal, so ns/op is the mean step.
//
// Metrics: step-p50/p99 (whole step), daemon-p50/p99 (step minus its model call),
// own-p50/p99 (step minus its model call and its command's run: what the daemon adds
// around the two; the command, a write_file, creates a file and syncs it and its folder),
// cmd-p50/p99 (the command's run, as agentd_command_duration_seconds has it),
// call-p50/p99 (the /api/chat round trip to the fake as the client saw it) and
// fake-p50 (the fake's handler time, its total_duration).
//
// The agent gains a proposal, a decision, an episode and four audit rows per op, so
// "episodes=0" ends a -benchtime=2000x run with 2,000 steps of history: queries that scan
// an agent's history show up as figures that rise with -benchtime.
//
// With memories > 0 long-term memory is on (DESIGN §7's figure: a 1,000-episode agent with
// 100k memories in the index): each step also searches the index for the prompt's relevant
// memories, stores the episode's memory and indexes it, and every eighth step or so asks
// the model for history summaries (summary-calls/step reports them). Summaries are made
// beside the steps, so their work competes with the steps for the two cores rather than
// adding to a step's time.
func BenchmarkStepOverhead(b *testing.B) {
	for _, c := range []struct{ episodes, memories int }{{0, 0}, {1000, 0}, {1000, 100_000}} {
		name := fmt.Sprintf("episodes=%d", c.episodes)
		if c.memories > 0 {
			name += fmt.Sprintf("/memories=%d", c.memories)
		}
		b.Run(name, func(b *testing.B) { benchStepOverhead(b, c.episodes, c.memories) })
	}
}

func benchStepOverhead(b *testing.B, episodes, memories int) {
	sup, a, rec, cmds := newOverheadSupervisor(b, episodes, memories)
	events, unsub := sup.events.Subscribe(a.ID, 0)
	defer unsub()
	// Two more subscribers encode every event, as followers on the local API do.
	var dropped atomic.Bool
	for range 2 {
		ch, stop := sup.events.Subscribe("", 0)
		defer stop()
		go drainJSON(ch, &dropped)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := sup.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer func() { cancel(); sup.Wait() }()

	var at []time.Time // publish time of every proposal, in order
	next := func() {
		timeout := time.NewTimer(10 * time.Second)
		defer timeout.Stop()
		for {
			select {
			case ev, ok := <-events:
				if !ok {
					b.Fatal("the benchmark's subscription was dropped: it fell behind")
				}
				switch ev.Type {
				case api.EventProposal:
					at = append(at, ev.Time)
					return
				case api.EventError:
					b.Fatalf("agent error: %s", ev.Message)
				}
			case <-timeout.C:
				got, _ := sup.agentViews.Agent(context.Background(), a.ID)
				b.Fatalf("no proposal for 10s; agent = %+v", got)
			}
		}
	}
	const warm = 3 // the first steps also open connections and probe the model
	for range warm {
		next()
	}
	for b.Loop() {
		next()
	}
	b.StopTimer()
	if dropped.Load() {
		b.Error("a draining subscriber was dropped: it fell behind")
	}
	cancel()
	sup.Wait()
	reportSteps(b, at, rec.calls(0), cmds.durations(), warm)
	if memories > 0 {
		b.ReportMetric(float64(sup.episodeHistory.summaryCalls.Load())/float64(len(at)), "summary-calls/step")
	}
}

// stepCalls leaves out the history summary calls: proposal k came from step call k.
func stepCalls(calls []*chatCall) []*chatCall {
	var out []*chatCall
	for _, c := range calls {
		if !bytes.Contains(c.reqBody, []byte(`"lines"`)) {
			out = append(out, c)
		}
	}
	return out
}

// newOverheadSupervisor returns a supervisor on a fresh store and a fake model that
// always proposes a cheap write_file, with one continuous agent that has the given number
// of finished steps behind it. The agent's loop starts with the supervisor.
func newOverheadSupervisor(b *testing.B, episodes, memories int) (*Supervisor, *api.Agent, *chatRecorder, *commandTimes) {
	fake := ollamatest.NewFake(b)
	fake.SetDefault(func(*ollama.ChatRequest) string { return nextWrite() })
	// History summaries are asked for beside the steps: they get their own answers, so
	// the steps' replies keep alternating.
	var summaries atomic.Int64
	fake.OnChat(summaryOrStep(&summaries))

	rec := newChatRecorder()
	c, err := llm.New(fake.URL(), &http.Client{Transport: rec})
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	st, err := store.Open(context.Background(), filepath.Join(dir, "agentd.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	cmds := &commandTimes{}
	var mem MemoryOptions
	if memories > 0 {
		ix, err := memory.Open(filepath.Join(dir, "memory"), memory.Options{BatchDelay: IndexBatchDelay}) // as the daemon opens it
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { ix.Close() })
		mem = MemoryOf(config.Default().Memory, ix)
	}
	sup, err := New(testOptions(func(o *Options) {
		o.Store, o.LLM, o.Model, o.StateDir = st, c, ollamatest.TinyModelName, dir
		withDefaultDirectives(o)
		o.Commands, o.Memory, o.Metrics = commands.DefaultNames, mem, cmds
	}))
	if err != nil {
		b.Fatal(err)
	}
	// Created before Start, so its loop only begins once the history is in place.
	a, err := sup.runs.CreateAgent(context.Background(), api.CreateAgentRequest{
		Name: "bench", Description: benchDescription, Goals: benchGoals,
		Policy: &api.Policy{Mode: "continuous", ContinuousLimit: math.MaxInt32},
	})
	if err != nil {
		b.Fatal(err)
	}
	if episodes > 0 {
		seedHistory(b, st, a, episodes)
	}
	if memories > 0 {
		seedMemories(b, st, mem.Index, a.ID, memories)
		// A fresh index asks for a rebuild; have it now, not in the measured steps.
		if err := sup.memoryService.rebuildMemory(context.Background()); err != nil {
			b.Fatal(err)
		}
		// The bulk load leaves seconds of segment merging behind; a daemon that has
		// gathered 100k memories over its life has a settled index. Measure that one.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := mem.Index.Settle(ctx, time.Second); err != nil {
			b.Fatal(err)
		}
	}
	return sup, a, rec, cmds
}

// reportSteps reports the step figures from the proposals' publish times, the model
// calls and the commands' run times, skipping the first warm proposals. Proposal k came
// from step call k: every fake reply is valid, so there are no retries. History summaries
// are made beside the steps, not in them: their calls are not a step's. The step from
// proposal k-1 to proposal k ran command k-1.
func reportSteps(b *testing.B, at []time.Time, all []*chatCall, cmds []time.Duration, warm int) {
	calls := stepCalls(all)
	if len(calls) < len(at) {
		b.Fatalf("%d model calls for %d proposals", len(calls), len(at))
	}
	if len(cmds) < len(at)-1 {
		b.Fatalf("%d commands ran for %d proposals", len(cmds), len(at))
	}
	var step, daemon, own, cmd, call, handler []time.Duration
	for k := warm; k < len(at); k++ {
		s := at[k].Sub(at[k-1])
		step = append(step, s)
		call = append(call, calls[k].dur())
		daemon = append(daemon, s-calls[k].dur())
		cmd = append(cmd, cmds[k-1])
		own = append(own, s-calls[k].dur()-cmds[k-1])
		handler = append(handler, calls[k].final().TotalDuration)
	}
	b.ReportMetric(ms(pct(step, .5)), "ms/step-p50")
	b.ReportMetric(ms(pct(step, .99)), "ms/step-p99")
	b.ReportMetric(ms(pct(daemon, .5)), "ms/daemon-p50")
	b.ReportMetric(ms(pct(daemon, .99)), "ms/daemon-p99")
	b.ReportMetric(ms(pct(own, .5)), "ms/own-p50")
	b.ReportMetric(ms(pct(own, .99)), "ms/own-p99")
	b.ReportMetric(ms(pct(cmd, .5)), "ms/cmd-p50")
	b.ReportMetric(ms(pct(cmd, .99)), "ms/cmd-p99")
	b.ReportMetric(ms(pct(call, .5)), "ms/call-p50")
	b.ReportMetric(ms(pct(call, .99)), "ms/call-p99")
	b.ReportMetric(ms(pct(handler, .5)), "ms/fake-p50")
}

// seedHistory gives the agent n finished steps, with the rows a real run leaves behind:
// a proposal, a decision, an episode and four audit entries each.
func seedHistory(tb testing.TB, st *store.Store, a *api.Agent, n int) {
	tb.Helper()
	err := st.Tx(context.Background(), func(tx *store.Tx) error {
		for i := 1; i <= n; i++ {
			args := json.RawMessage(fmt.Sprintf(`{"path":"notes/%04d.txt"}`, i))
			p := &api.Proposal{
				ID: randid.ID("p-"), AgentID: a.ID, RunID: a.RunID, Step: i, Command: "read_file", Args: args,
				Hash: Hash("read_file", args), Status: api.ProposalSucceeded, Model: ollamatest.TinyModelName,
				Thoughts: api.Thoughts{Observations: "a note", Text: "read the next note", Reasoning: "notes hold the facts I need",
					SelfCriticism: "slow", Plan: "read, then summarize", Speak: "Reading the next note."},
				Result: fmt.Sprintf("note %d: nothing new here, just a line of text to make the row realistic", i),
			}
			if err := tx.InsertProposal(p); err != nil {
				return err
			}
			if err := tx.InsertDecision(&api.Decision{ProposalID: p.ID, Kind: api.DecisionApprove, Count: 1, Source: "policy", By: "continuous"}); err != nil {
				return err
			}
			if err := tx.InsertEpisode(a.ID, episodeOf(p, "succeeded", p.Result, "")); err != nil {
				return err
			}
			for _, kind := range []string{"proposal", "decision", "started", "succeeded"} {
				tx.Audit(a.ID, kind, map[string]string{"proposal": p.ID, "command": p.Command})
			}
		}
		sa, err := tx.Agent(a.ID)
		if err != nil {
			return err
		}
		sa.Step = n
		return tx.UpdateAgent(sa)
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// firstStepInput is the first step of an agent created with a name, a description and
// goals, under the default configuration's directives.
// It is what the default components produce: the built-in commands, then the context
// component's, and the clock's message.
func firstStepInput(tb testing.TB, name string) PromptInput {
	set, err := commands.Resolve(commands.DefaultNames)
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	step := &commands.Step{Now: firstStepNow}
	more, _ := commands.ContextItems{}.Commands(ctx, step)
	clock, _ := commands.Clock{}.Messages(ctx, step)
	return PromptInput{
		Name: name, Description: benchDescription, Task: "Achieve the goals below.", Goals: benchGoals,
		Directives: toDirectives(config.Default().Agent.Directives()),
		Commands:   append(set, more...), Messages: clock,
	}
}

// firstStepNow is the clock of the first-step benchmarks.
var firstStepNow = time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)

// BenchmarkFirstStepPrompt builds the first-step prompt with the default commands and
// directives and reports its size: chars/prompt; tokens/prompt (prompt_eval_count)
// when the real server is available, and schema-bytes. The tiny model's vocabulary is
// bytes and a space is "▁" (3 bytes), so its count runs above the character count; real
// models' vocabularies need about a quarter as many tokens as characters.
func BenchmarkFirstStepPrompt(b *testing.B) {
	in := firstStepInput(b, "bench")
	var msgs []llm.Message
	for b.Loop() {
		msgs = BuildPrompt(in)
	}
	chars := PromptChars(msgs)
	format, _ := json.Marshal(commands.ReplySchema(in.Commands))
	b.ReportMetric(float64(chars), "chars/prompt")
	b.ReportMetric(float64(len(in.Commands)), "commands")
	b.ReportMetric(float64(len(format)), "schema-bytes")
	if _, err := ollamatest.Binary(); err != nil {
		b.Logf("first-step prompt: %d characters, %d commands (no real server for tokens: %v)", chars, len(in.Commands), err)
		return
	}
	srv := ollamatest.StartReal(b)
	c, err := llm.New(srv.URL(), nil)
	if err != nil {
		b.Fatal(err)
	}
	// One token of reply is enough: only prompt_eval_count matters here.
	res, err := c.Chat(context.Background(), llm.ChatRequest{
		Model: ollamatest.TinyModelName, Messages: msgs, Format: format, NumCtx: ollamatest.TinyContextLength, NumPredict: 1,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(res.PromptTokens), "tokens/prompt")
	b.Logf("first-step prompt: %d characters, %d tokens on the tiny model (byte vocabulary), %d commands, schema %d bytes",
		chars, res.PromptTokens, len(in.Commands), len(format))
}

// BenchmarkPromptSize reports the prompt an agent sends at steps 5, 50, 200 and 1,000,
// with long-term memory on (10,000 memories) and the fake's 8,192-token context:
// chars/prompt, tokens/prompt (as the fake counts them) and num_ctx. The prompt grows with
// the history until the budget (or the older-lines cap) is reached, then stays flat
// however long the agent lives. One op is one step; the figures are the first step's.
//
//	go test ./daemon/agent -run '^$' -bench PromptSize -benchtime 1x
func BenchmarkPromptSize(b *testing.B) {
	for _, step := range []int{5, 50, 200, 1000} {
		b.Run(fmt.Sprintf("step=%d", step), func(b *testing.B) {
			sup, a, rec, _ := newOverheadSupervisor(b, step-1, 10_000)
			events, unsub := sup.events.Subscribe(a.ID, 0)
			defer unsub()
			ctx, cancel := context.WithCancel(context.Background())
			if err := sup.Start(ctx); err != nil {
				b.Fatal(err)
			}
			defer func() { cancel(); sup.Wait() }()
			next := func() {
				timeout := time.After(10 * time.Second)
				for {
					select {
					case ev := <-events:
						if ev.Type == api.EventProposal {
							return
						}
						if ev.Type == api.EventError {
							b.Fatalf("agent error: %s", ev.Message)
						}
					case <-timeout:
						b.Fatal("no proposal for 10s")
					}
				}
			}
			for b.Loop() {
				next()
			}
			calls := stepCalls(rec.calls(0))
			if len(calls) == 0 {
				b.Fatal("no model call")
			}
			req, err := calls[0].request()
			if err != nil {
				b.Fatal(err)
			}
			chars := 0
			for _, m := range req.Messages {
				chars += len(m.Content)
			}
			b.ReportMetric(float64(chars), "chars/prompt")
			b.ReportMetric(float64(fakePromptTokens(req.Messages)), "tokens/prompt")
			if n, ok := req.Options["num_ctx"].(float64); ok {
				b.ReportMetric(n, "num_ctx")
			}
		})
	}
}

// BenchmarkContextAssembly measures the context assembly: the prompt for the next
// step of an agent with 1,000 episodes behind it and 100,000 memories in the index
// (directives, commands, goal state, the relevant memories searched in Bleve, the history
// with its one-line entries), as each step builds it. Between two assemblies the agent
// records one more episode, as a step does (its memory goes to the index's write batch),
// so no assembly reuses the last one's reads. Reports the p50 and p99 of one assembly.
//
//	go test ./daemon/agent -run '^$' -bench ContextAssembly -benchtime 2000x
func BenchmarkContextAssembly(b *testing.B) {
	sup, a, _, _ := newOverheadSupervisor(b, 1000, 100_000)
	ctx := context.Background()
	l := sup.live()
	var took []time.Duration
	step := 1000
	for b.Loop() {
		b.StopTimer()
		step++
		args := json.RawMessage(fmt.Sprintf(`{"path":"notes/%04d.txt"}`, step))
		p := &api.Proposal{ID: randid.ID("p-"), AgentID: a.ID, RunID: a.RunID, Step: step, Command: "read_file", Args: args,
			Thoughts: api.Thoughts{Reasoning: "notes hold the facts I need", Plan: "read, then summarize"}}
		err := sup.st.Tx(ctx, func(tx *store.Tx) error {
			return sup.recordEpisode(tx, a.ID, p, episodeOf(p, "succeeded", fmt.Sprintf("note %d: a line of text", step), ""))
		})
		if err != nil {
			b.Fatal(err)
		}
		var sa *store.Agent
		if err := sup.st.View(ctx, func(tx *store.Tx) (err error) { sa, err = tx.Agent(a.ID); return err }); err != nil {
			b.Fatal(err)
		}
		sa.Step = step
		b.StartTimer()
		start := time.Now()
		_, msgs := sup.prompt(ctx, l, sa, sup.stepOf(sa), l.Model, 8192, nil)
		took = append(took, time.Since(start))
		if len(msgs) == 0 {
			b.Fatal("empty prompt")
		}
	}
	b.ReportMetric(ms(pct(took, .5)), "ms/assembly-p50")
	b.ReportMetric(ms(pct(took, .99)), "ms/assembly-p99")
}
