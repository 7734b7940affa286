package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	ollama "github.com/ollama/ollama/api"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/store"
)

// byAgent answers each chat request from the script of the agent the prompt is for
// ("You are NAME, …"), so a parent and its helpers can think in any order. An agent
// whose script ran out asks a question, which parks it.
type byAgent struct {
	mu sync.Mutex
	q  map[string][]string
}

func (b *byAgent) script(name string, replies ...string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.q[name] = append(b.q[name], replies...)
}

// bossStartsA scripts the boss to start helper a, and a's model to answer with replies.
func (b *byAgent) bossStartsA(replies ...string) {
	b.script("boss", reply("start_agent", map[string]string{"name": "a", "task": "t", "prompt": "go"}))
	b.script("boss/a", replies...)
}

func (b *byAgent) reply(req *ollama.ChatRequest) (string, error) {
	if len(req.Messages) == 0 {
		return "", errors.New("no messages")
	}
	first, _, _ := strings.Cut(req.Messages[0].Content, "\n")
	name, _, _ := strings.Cut(strings.TrimPrefix(first, "You are "), ",")
	b.mu.Lock()
	defer b.mu.Unlock()
	if q := b.q[name]; len(q) > 0 {
		b.q[name] = q[1:]
		return q[0], nil
	}
	return reply("ask_user", map[string]string{"question": "nothing scripted for " + name}), nil
}

var helperCommands = append(slices.Clone(testCommands), commands.StartAgent, commands.MessageAgent, commands.ListAgents, commands.DeleteAgent)

func newHelperHarness(t *testing.T, mod ...func(*Options)) (*harness, *byAgent) {
	b := &byAgent{q: map[string][]string{}}
	h := newHarness(t, append([]func(*Options){func(o *Options) { o.Commands = helperCommands }}, mod...)...)
	h.fake.OnChat(b.reply)
	return h, b
}

func (h *harness) boss() *api.Agent {
	return h.create(api.CreateAgentRequest{Name: "boss", Description: "a lead", Goals: []string{"get things done"}})
}

// approve approves the agent's next proposal, which must be command.
func (h *harness) approve(id, command string) *api.Proposal {
	h.t.Helper()
	p := h.pending(id)
	if p.Command != command {
		h.t.Fatalf("pending proposal of %s = %s %s, want %s", id, p.Command, p.Args, command)
	}
	if _, err := h.decide(id, p, "y"); err != nil {
		h.t.Fatal(err)
	}
	return p
}

// helper waits for the agent named name to exist.
func (h *harness) helper(name string) *api.Agent {
	h.t.Helper()
	return h.waitFor(name, "helper "+name, func(*api.Agent) bool { return true })
}

// episode waits for the agent's episode of proposal p.
func (h *harness) episode(id string, p *api.Proposal) api.Episode {
	h.t.Helper()
	var found []api.Episode
	h.waitFor(id, "the episode of "+p.ID, func(*api.Agent) bool {
		found = nil
		for _, e := range h.history(id) {
			if e.ProposalID == p.ID {
				found = append(found, e)
			}
		}
		return len(found) > 0
	})
	if len(found) != 1 {
		h.t.Fatalf("%d episodes for %s, want 1: %+v", len(found), p.ID, found)
	}
	return found[0]
}

func TestHelperLifecycle(t *testing.T) {
	h, b := newHelperHarness(t)
	b.script("boss",
		reply("start_agent", map[string]string{"name": "fetcher", "task": "writes files", "prompt": "write a.txt"}),
		reply("message_agent", map[string]string{"key": "fetcher", "message": "write b.txt"}),
		reply("list_agents", map[string]string{}),
		reply("delete_agent", map[string]string{"key": "fetcher"}),
		reply("finish", map[string]string{"reason": "all done"}))
	b.script("boss/fetcher",
		reply("write_file", map[string]string{"path": "a.txt", "contents": "A"}),
		reply("finish", map[string]string{"reason": "wrote a.txt"}),
		reply("finish", map[string]string{"reason": "b.txt is not needed"}))
	boss := h.boss()

	start := h.approve(boss.ID, "start_agent")
	helper := h.helper("boss/fetcher")
	if helper.ParentID != boss.ID || helper.Description != "writes files" || helper.Task != "write a.txt" {
		t.Fatalf("helper = %+v", helper)
	}
	if want := filepath.Join(boss.Workspace, "agents", "fetcher"); helper.Workspace != want {
		t.Fatalf("helper workspace = %s, want %s", helper.Workspace, want)
	}
	h.approve(helper.ID, "write_file")
	if a, _ := h.sup.agentViews.Agent(context.Background(), boss.ID); a.State != api.StateExecuting || a.Pending != nil {
		t.Fatalf("boss while its helper works: state %s, pending %v; want executing with nothing to decide", a.State, a.Pending)
	}
	h.approve(helper.ID, "finish")
	ep := h.episode(boss.ID, start)
	if ep.Outcome != "succeeded" || ep.Result != "helper fetcher finished: wrote a.txt" {
		t.Fatalf("start_agent episode = %+v", ep)
	}
	if got, err := os.ReadFile(filepath.Join(helper.Workspace, "a.txt")); err != nil || string(got) != "A" {
		t.Fatalf("helper's file = %q, %v", got, err)
	}

	msg := h.approve(boss.ID, "message_agent")
	h.approve(helper.ID, "finish")
	if ep := h.episode(boss.ID, msg); ep.Result != "helper fetcher finished: b.txt is not needed" {
		t.Fatalf("message_agent episode = %+v", ep)
	}

	list := h.approve(boss.ID, "list_agents")
	if ep := h.episode(boss.ID, list); !strings.Contains(ep.Result, "fetcher: idle") || !strings.Contains(ep.Result, "writes files") {
		t.Fatalf("list_agents episode = %+v", ep)
	}

	del := h.approve(boss.ID, "delete_agent")
	if ep := h.episode(boss.ID, del); ep.Result != "deleted helper fetcher" {
		t.Fatalf("delete_agent episode = %+v", ep)
	}
	if _, err := h.sup.agentViews.Agent(context.Background(), helper.ID); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("deleted helper: %v", err)
	}
	if _, err := os.Stat(helper.Workspace); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("deleted helper's workspace: %v", err)
	}
	h.approve(boss.ID, "finish")
	h.waitFor(boss.ID, "boss idle", func(a *api.Agent) bool { return a.State == api.StateIdle })
}

func TestHelperLimits(t *testing.T) {
	h, b := newHelperHarness(t, func(o *Options) { o.MaxHelperDepth, o.MaxHelpers = 1, 1 })
	b.script("boss",
		reply("start_agent", map[string]string{"name": "one", "task": "t", "prompt": "go"}),
		reply("start_agent", map[string]string{"name": "two", "task": "t", "prompt": "go"}),
		reply("start_agent", map[string]string{"name": "one", "task": "t", "prompt": "again"}),
		reply("message_agent", map[string]string{"key": "nobody", "message": "hi"}))
	b.script("boss/one", reply("finish", map[string]string{"reason": "ok"}))
	boss := h.boss()
	first := h.approve(boss.ID, "start_agent")
	one := h.helper("boss/one")
	h.approve(one.ID, "finish")
	h.episode(boss.ID, first)

	tests := []struct{ command, want string }{
		{"start_agent", "you have 1 helpers, the most allowed"},
		{"start_agent", "you have a helper named one already"},
		{"message_agent", `you have no helper "nobody"; your helpers: one`},
	}
	for _, tt := range tests {
		p := h.approve(boss.ID, tt.command)
		if ep := h.episode(boss.ID, p); ep.Outcome != "failed" || !strings.Contains(ep.Result, tt.want) {
			t.Errorf("%s: episode = %+v, want a failure saying %q", tt.command, ep, tt.want)
		}
	}
	var n int
	h.st.View(context.Background(), func(tx *store.Tx) error {
		hs, err := tx.Helpers(boss.ID)
		n = len(hs)
		return err
	})
	if n != 1 {
		t.Fatalf("boss has %d helpers, want 1", n)
	}
}

func TestStoppingAParentStopsItsHelpers(t *testing.T) {
	h, b := newHelperHarness(t)
	b.bossStartsA(
		reply("start_agent", map[string]string{"name": "b", "task": "t", "prompt": "go"}))
	b.script("boss/a/b", reply("write_file", map[string]string{"path": "x", "contents": "x"}))
	boss := h.boss()
	start := h.approve(boss.ID, "start_agent")
	a := h.helper("boss/a")
	h.approve(a.ID, "start_agent")
	ab := h.helper("boss/a/b")
	h.pending(ab.ID)
	if ab.Workspace != filepath.Join(boss.Workspace, "agents", "a", "agents", "b") {
		t.Fatalf("nested helper workspace = %s", ab.Workspace)
	}
	if _, err := h.sup.runs.Stop(context.Background(), boss.ID); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{a.ID, ab.ID} {
		got := h.waitFor(id, "helper stopped", func(a *api.Agent) bool { return a.State == api.StateIdle })
		if got.StateReason != "stopped: its parent's run ended" {
			t.Errorf("%s: reason %q", got.Name, got.StateReason)
		}
	}
	ps, _ := h.sup.agentViews.Proposals(context.Background(), boss.ID)
	if p := ps[len(ps)-1]; p.ID != start.ID || p.Status != api.ProposalFailed || !strings.Contains(p.Result, "withdrawn") {
		t.Fatalf("boss's start_agent after stop = %+v", p)
	}
}

// Removing a parent removes its helpers, and the daemon is told of each agent removed
// (OnAgentRemoved), so that what it keeps per agent (a cgroup) goes with them.
func TestDeletingAParentRemovesItsHelpers(t *testing.T) {
	var mu sync.Mutex
	var removed []string
	h, b := newHelperHarness(t, func(o *Options) {
		o.OnAgentRemoved = func(id string) { mu.Lock(); removed = append(removed, id); mu.Unlock() }
	})
	b.bossStartsA(reply("write_file", map[string]string{"path": "x", "contents": "x"}))
	boss := h.boss()
	h.approve(boss.ID, "start_agent")
	a := h.helper("boss/a")
	h.pending(a.ID)
	if err := h.sup.runs.DeleteAgent(context.Background(), "boss"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{boss.ID, a.ID} {
		if _, err := h.sup.agentViews.Agent(context.Background(), id); !errors.Is(err, api.ErrNotFound) {
			t.Errorf("agent %s after its parent's removal: %v", id, err)
		}
	}
	if _, err := os.Stat(boss.Workspace); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("boss's workspace: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if slices.Sort(removed); !slices.Equal(removed, slices.Sorted(slices.Values([]string{boss.ID, a.ID}))) {
		t.Errorf("told of the removal of %v, want boss and its helper %v", removed, []string{boss.ID, a.ID})
	}
}

func TestRemovingAHelperFailsTheWait(t *testing.T) {
	h, b := newHelperHarness(t)
	b.bossStartsA(reply("write_file", map[string]string{"path": "x", "contents": "x"}))
	boss := h.boss()
	start := h.approve(boss.ID, "start_agent")
	h.pending(h.helper("boss/a").ID)
	if err := h.sup.runs.DeleteAgent(context.Background(), "boss/a"); err != nil {
		t.Fatal(err)
	}
	if ep := h.episode(boss.ID, start); ep.Outcome != "failed" || ep.Result != "Error: helper a was removed before it finished" {
		t.Fatalf("episode = %+v", ep)
	}
}

func TestHelperFollowsParentPolicy(t *testing.T) {
	h, b := newHelperHarness(t)
	b.bossStartsA(reply("write_file", map[string]string{"path": "x", "contents": "x"}), reply("finish", map[string]string{"reason": "wrote x"}))
	boss := h.boss()
	if _, err := h.sup.policyService.AddPermission(context.Background(), boss.ID, api.PermissionRequest{Effect: "allow", Pattern: "write_file(*)"}); err != nil {
		t.Fatal(err)
	}
	h.approve(boss.ID, "start_agent")
	a := h.helper("boss/a")
	p := h.pending(a.ID) // write_file ran by the parent's pattern; finish asks
	if p.Command != "finish" {
		t.Fatalf("helper's pending = %s, want finish (write_file allowed by the parent's pattern)", p.Command)
	}
}

func TestPausingAParentPausesItsHelpers(t *testing.T) {
	h, b := newHelperHarness(t)
	b.bossStartsA(reply("start_agent", map[string]string{"name": "b", "task": "t", "prompt": "go"}),
		reply("finish", map[string]string{"reason": "b reported"}))
	b.script("boss/a/b", reply("write_file", map[string]string{"path": "x", "contents": "x"}),
		reply("finish", map[string]string{"reason": "wrote x"}))
	ctx := context.Background()
	boss := h.boss()
	start := h.approve(boss.ID, "start_agent")
	a := h.helper("boss/a")
	h.approve(a.ID, "start_agent")
	ab := h.helper("boss/a/b")
	write := h.pending(ab.ID)

	if _, err := h.sup.runs.Pause(ctx, boss.ID); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{a.ID, ab.ID} {
		got, _ := h.sup.agentViews.Agent(ctx, id)
		if got.State != api.StatePaused || got.StateReason != "paused: boss was paused" {
			t.Fatalf("%s after its top agent paused: %s (%s)", got.Name, got.State, got.StateReason)
		}
	}
	// Approved while paused, it does not run until the pause ends.
	if _, err := h.decide(ab.ID, write, "y"); err != nil {
		t.Fatal(err)
	}
	if got, _ := h.sup.agentViews.Agent(ctx, ab.ID); got.State != api.StatePaused {
		t.Fatalf("paused helper after an approval: %s", got.State)
	}
	if _, err := os.Stat(filepath.Join(ab.Workspace, "x")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a paused helper ran its command: %v", err)
	}

	// A helper a person paused on its own stays paused when its parent resumes.
	if _, err := h.sup.runs.Resume(ctx, boss.ID); err != nil {
		t.Fatal(err)
	}
	h.waitFor(ab.ID, "resumed helper asks to finish", func(x *api.Agent) bool { return x.Pending != nil && x.Pending.Command == "finish" })
	if _, err := os.Stat(filepath.Join(ab.Workspace, "x")); err != nil {
		t.Fatalf("resumed helper's file: %v", err)
	}
	if _, err := h.sup.runs.Pause(ctx, ab.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := h.sup.runs.Pause(ctx, boss.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := h.sup.runs.Resume(ctx, boss.ID); err != nil {
		t.Fatal(err)
	}
	h.waitFor(a.ID, "a resumed, waiting for b", func(x *api.Agent) bool { return x.State == api.StateExecuting })
	if got, _ := h.sup.agentViews.Agent(ctx, ab.ID); got.State != api.StatePaused || got.StateReason != "paused by a person" {
		t.Fatalf("helper a person paused, after its parent resumed: %s (%s)", got.State, got.StateReason)
	}
	if _, err := h.sup.runs.Resume(ctx, ab.ID); err != nil {
		t.Fatal(err)
	}
	h.approve(ab.ID, "finish")
	h.approve(a.ID, "finish")
	if ep := h.episode(boss.ID, start); ep.Result != "helper a finished: b reported" {
		t.Fatalf("boss's start_agent = %+v", ep)
	}
}

// TestHelpersDrawFromTheParentsApprovals: `y -4` on the parent approves it and the next
// three proposals of the family, whoever makes them; then everyone asks again.
func TestHelpersDrawFromTheParentsApprovals(t *testing.T) {
	h, b := newHelperHarness(t)
	b.script("boss",
		reply("start_agent", map[string]string{"name": "a", "task": "t", "prompt": "go"}),
		reply("list_folder", map[string]string{"path": "."}),
		reply("finish", map[string]string{"reason": "all done"}))
	b.script("boss/a",
		reply("write_file", map[string]string{"path": "x", "contents": "x"}),
		reply("write_file", map[string]string{"path": "y", "contents": "y"}),
		reply("list_folder", map[string]string{"path": "."}),
		reply("finish", map[string]string{"reason": "wrote x and y"}))
	ctx := context.Background()
	boss := h.boss()
	start := h.pending(boss.ID)
	if _, err := h.decide(boss.ID, start, "y -4"); err != nil {
		t.Fatal(err)
	}
	a := h.helper("boss/a")
	if p := h.pending(a.ID); p.Command != "finish" {
		t.Fatalf("helper asked about %s first, want finish (the three before drawn from boss's y -4)", p.Command)
	}
	var by []string
	for _, e := range h.history(a.ID) {
		by = append(by, e.Command)
	}
	if strings.Join(by, ",") != "write_file,write_file,list_folder" {
		t.Fatalf("helper ran %v unasked", by)
	}
	if got, _ := h.sup.agentViews.Agent(ctx, boss.ID); got.Policy.Mode != "ask" || got.Policy.AutoSteps != 0 {
		t.Fatalf("boss's policy after its helper drew all approvals = %+v", got.Policy)
	}
	if got, _ := h.sup.agentViews.Agent(ctx, a.ID); got.Policy.Mode != "ask" || got.Policy.AutoSteps != 0 {
		t.Fatalf("helper's own policy = %+v, want ask (it never holds approvals)", got.Policy)
	}
	// `y -2` on the helper's proposal is the family's too: boss's list_folder runs unasked.
	fin := h.pending(a.ID)
	if _, err := h.decide(a.ID, fin, "y -2"); err != nil {
		t.Fatal(err)
	}
	h.episode(boss.ID, start)
	if p := h.pending(boss.ID); p.Command != "finish" {
		t.Fatalf("boss asked about %s, want finish (list_folder drawn from the y -2 given on its helper)", p.Command)
	}
}

// TestHelperFollowsParentsContinuousMode: the parent's continuous mode approves its
// helper's proposals up to the limit, counted in the helper's run.
func TestHelperFollowsParentsContinuousMode(t *testing.T) {
	h, b := newHelperHarness(t)
	b.bossStartsA(
		reply("write_file", map[string]string{"path": "x", "contents": "x"}),
		reply("write_file", map[string]string{"path": "y", "contents": "y"}),
		reply("finish", map[string]string{"reason": "done"}))
	ctx := context.Background()
	boss := h.create(api.CreateAgentRequest{Name: "boss", Description: "a lead", Goals: []string{"g"},
		Policy: &api.Policy{Mode: "continuous", ContinuousLimit: 2}})
	h.approve(boss.ID, "start_agent") // execute-class: asks even in continuous mode
	a := h.helper("boss/a")
	// Steps 1 and 2 are within boss's continuous limit; step 3 asks.
	if p := h.pending(a.ID); p.Command != "finish" || p.Step != 3 {
		t.Fatalf("helper's first question: step %d %s, want step 3 finish", p.Step, p.Command)
	}
	ds, err := h.sup.agentViews.Proposals(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if ds[0].Status != api.ProposalSucceeded {
		t.Fatalf("helper's first proposal = %s", ds[0].Status)
	}
}

// TestStartAgentNotOfferedAtMaxDepth: a helper as deep as helpers may nest is not offered
// start_agent or message_agent (prompt, schema, agentctl commands); a direct call still
// gets the depth error.
func TestStartAgentNotOfferedAtMaxDepth(t *testing.T) {
	h, b := newHelperHarness(t, func(o *Options) { o.MaxHelperDepth = 1 })
	var mu sync.Mutex
	prompts := map[string]string{} // agent name → its last request, prompt and schema
	h.fake.OnChat(func(req *ollama.ChatRequest) (string, error) {
		first, _, _ := strings.Cut(req.Messages[0].Content, "\n")
		name, _, _ := strings.Cut(strings.TrimPrefix(first, "You are "), ",")
		mu.Lock()
		prompts[name] = joinContent(req.Messages) + string(req.Format)
		mu.Unlock()
		return b.reply(req)
	})
	b.script("boss", reply("start_agent", map[string]string{"name": "one", "task": "t", "prompt": "go"}))
	b.script("boss/one", reply("list_folder", map[string]string{"path": "."}))
	ctx := context.Background()
	boss := h.boss()
	h.approve(boss.ID, "start_agent")
	one := h.helper("boss/one")
	p := h.pending(one.ID)

	mu.Lock()
	bossPrompt, onePrompt := prompts["boss"], prompts["boss/one"]
	mu.Unlock()
	for _, c := range []string{commands.StartAgent, commands.MessageAgent} {
		if !strings.Contains(bossPrompt, c) {
			t.Errorf("boss (depth 0) is not offered %s", c)
		}
		if strings.Contains(onePrompt, c) {
			t.Errorf("boss/one (depth 1 of 1) is offered %s", c)
		}
	}
	if !strings.Contains(onePrompt, commands.ListAgents) {
		t.Errorf("boss/one lost list_agents too")
	}
	infos, err := h.sup.policyService.Commands(ctx, one.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, ci := range infos {
		if ci.Name == commands.StartAgent || ci.Name == commands.MessageAgent {
			t.Errorf("agentctl commands boss/one lists %s", ci.Name)
		}
	}

	// A direct call, as if the model had proposed it anyway, gets the error that says why.
	// The proposal is marked started as an execution would: the agent's runner is held
	// off meanwhile (its lock), or on a slow machine it may still be in its round, find a
	// started proposal it did not start, and record it interrupted.
	r := h.sup.runner(one.ID)
	r.mu.Lock()
	defer r.mu.Unlock()
	err = h.st.Tx(ctx, func(tx *store.Tx) error {
		_, err := tx.SetProposalStatus(p.ID, api.ProposalStarted, nil, api.ProposalPending)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	err = helperEnv{s: h.sup.helpers, parentID: one.ID, proposalID: p.ID}.Start(ctx, "deeper", "t", "go")
	if err == nil || !strings.Contains(err.Error(), "nested 1 deep at most") {
		t.Fatalf("direct start_agent at max depth: %v, want the depth error", err)
	}
}
