package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ollama "github.com/ollama/ollama/api"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/testutil"
)

// The history's line cache reads nothing while the agent's episode generation stands,
// then only new episodes, keeps the newest n, and shows a summary once the agent is
// forgotten after summaries were stored.
func TestOlderCache(t *testing.T) {
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "agentd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a := &store.Agent{Agent: api.Agent{ID: "a-1", Name: "one", State: api.StateIdle, Workspace: t.TempDir()}}
	add := func(from, to int) {
		t.Helper()
		err := st.Tx(context.Background(), func(tx *store.Tx) error {
			if from == 1 {
				if err := tx.InsertAgent(a); err != nil {
					return err
				}
			}
			for i := from; i <= to; i++ {
				if err := tx.InsertEpisode(a.ID, &api.Episode{RunID: "r", Step: i, ProposalID: fmt.Sprint("p-", i), Command: "read_file",
					Args: json.RawMessage(fmt.Sprintf(`{"path":"n%d"}`, i)), Outcome: "succeeded"}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	var c olderCache
	var gens episodeGens
	var recent []store.EpisodeLine // what recentEpisodes read, when set
	got := func(n int) string {
		t.Helper()
		var out []string
		lines, err := c.lines(context.Background(), st, &gens, a.ID, n, recent)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lines {
			out = append(out, l.text)
		}
		return strings.Join(out, " | ")
	}
	add(1, 3)
	if g, want := got(5), `Step 3: read_file(path="n3") → succeeded | Step 2: read_file(path="n2") → succeeded | Step 1: read_file(path="n1") → succeeded`; g != want {
		t.Fatalf("first read = %s\nwant %s", g, want)
	}
	add(4, 6)
	if g := got(5); !strings.HasPrefix(g, "Step 3:") {
		t.Fatalf("read again within a generation = %s; want the cached lines", g)
	}
	gens.bump(a.ID) // as recordEpisode does once the episodes commit
	if g := got(5); !strings.HasPrefix(g, `Step 6:`) || strings.Count(g, "|") != 4 || !strings.HasSuffix(g, `Step 2: read_file(path="n2") → succeeded`) {
		t.Fatalf("after three more = %s; want steps 6 down to 2", g)
	}
	// A summary shows once the agent is forgotten (summarize does that after storing).
	err = st.Tx(context.Background(), func(tx *store.Tx) error {
		heads, err := tx.EpisodeHeads(a.ID, 0, 1)
		if err != nil {
			return err
		}
		return tx.SetEpisodeSummary(a.ID, heads[0].ID, "read the sixth note")
	})
	if err != nil {
		t.Fatal(err)
	}
	if g := got(5); strings.Contains(g, "read the sixth note") {
		t.Fatalf("cached lines changed without forget: %s", g)
	}
	c.forget(a.ID)
	if g := got(5); !strings.HasPrefix(g, "Step 6: read the sixth note | Step 5:") {
		t.Fatalf("after forget = %s", g)
	}
	// New episodes that the latest ones (read for the verbatim history) reach back past
	// come from those, with no read of their own: a lie in recent shows it was used.
	add(7, 8)
	gens.bump(a.ID)
	err = st.View(context.Background(), func(tx *store.Tx) (err error) { recent, err = tx.EpisodeLines(a.ID, 4, 100); return })
	if err != nil {
		t.Fatal(err)
	}
	recent[len(recent)-1].Summary = "from recent"
	if g := got(5); !strings.HasPrefix(g, "Step 8: from recent | Step 7: read_file(path=\"n7\") → succeeded | Step 6: read the sixth note") {
		t.Fatalf("extended from recent = %s", g)
	}
}

// Summaries made beside the steps are stored with the agent's next result, their calls'
// tokens added to the agent once: a job that ends while a result is being recorded keeps
// its own summaries for the result after, and nothing is counted twice.
func TestSummariesStoredWithTheNextResultOnce(t *testing.T) {
	h := newHarness(t)
	a := h.create(api.CreateAgentRequest{Name: "sum", Start: new(bool)})
	seedHistory(t, h.st, a, 20)
	eh := h.sup.episodeHistory
	lines := episodeLines(t, h.st, a.ID, 20)
	first, second := lines[0].ID, lines[1].ID
	eh.stashSummaries(a.ID, madeSummaries{lines: map[int64]string{first: "one"}, promptTokens: 10, evalTokens: 1})

	record := func(during func()) *store.Agent {
		t.Helper()
		var got *store.Agent
		err := h.st.Tx(context.Background(), func(tx *store.Tx) error {
			cur, err := tx.Agent(a.ID)
			if err != nil {
				return err
			}
			if err := eh.writeSummaries(tx, cur); err != nil {
				return err
			}
			during()
			got = cur
			return tx.UpdateAgent(cur)
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	// A job ends while the first result is recorded: its summary waits for the next one.
	got := record(func() {
		eh.stashSummaries(a.ID, madeSummaries{lines: map[int64]string{second: "two"}, promptTokens: 5, evalTokens: 2})
	})
	if got.PromptTokens != 10 || got.EvalTokens != 1 {
		t.Errorf("tokens after the first result = %d/%d, want 10/1", got.PromptTokens, got.EvalTokens)
	}
	if left := eh.madeSummaries(a.ID); len(left.lines) != 1 || left.lines[second] != "two" || left.promptTokens != 5 || left.evalTokens != 2 {
		t.Errorf("waiting after the first result = %+v, want the second job's summary and tokens only", left)
	}
	got = record(func() {})
	if got.PromptTokens != 15 || got.EvalTokens != 3 {
		t.Errorf("tokens after the second result = %d/%d, want 15/3", got.PromptTokens, got.EvalTokens)
	}
	if left := eh.madeSummaries(a.ID); left.lines != nil || left.promptTokens != 0 {
		t.Errorf("waiting after the second result = %+v, want nothing", left)
	}
	got = record(func() {}) // nothing waits: nothing is added
	if got.PromptTokens != 15 {
		t.Errorf("tokens after a third result = %d, want 15", got.PromptTokens)
	}
	lines = episodeLines(t, h.st, a.ID, 20)
	if lines[0].Summary != "one" || lines[1].Summary != "two" {
		t.Errorf("stored summaries = %q, %q; want one, two", lines[0].Summary, lines[1].Summary)
	}
}

// Summaries made beside the steps, and their call's tokens, are stored with the next
// proposal too, so a step that ends in feedback (or an answer, or a helper's result) does
// not leave them in memory, where a restart would lose tokens the agent's budget counts.
func TestSummaryTokensReachTheAgentWithAFeedbackStep(t *testing.T) {
	h := newHarness(t)
	h.fake.OnChat(func(*ollama.ChatRequest) (string, error) {
		return reply("list_folder", map[string]string{"path": "."}), nil
	})
	a := h.create(api.CreateAgentRequest{Name: "fb", Description: "a test agent", Task: "test things"})
	p := h.pending(a.ID)
	eh := h.sup.episodeHistory
	lines := episodeLines(t, h.st, a.ID, 5)
	stash := madeSummaries{lines: map[int64]string{}, promptTokens: 1_000_000, evalTokens: 1}
	for _, l := range lines {
		stash.lines[l.ID] = "summarized"
	}
	eh.stashSummaries(a.ID, stash)
	before := h.waitFor(a.ID, "pending", func(a *api.Agent) bool { return a.Pending != nil })
	if _, err := h.decide(a.ID, p, "look in the other folder first"); err != nil {
		t.Fatal(err)
	}
	after := h.waitFor(a.ID, "the next proposal", func(a *api.Agent) bool { return a.Pending != nil && a.Pending.ID != p.ID })
	if got := after.PromptTokens - before.PromptTokens; got < 1_000_000 {
		t.Errorf("prompt tokens grew by %d over a feedback step: the summary call's 1,000,000 still wait in memory (%+v)",
			got, eh.madeSummaries(a.ID).promptTokens)
	}
}

// episodeLines reads the agent's latest n episodes as the prompt does (results cut short).
func episodeLines(t *testing.T, st *store.Store, agentID string, n int) []store.EpisodeLine {
	t.Helper()
	var lines []store.EpisodeLine
	if err := st.View(context.Background(), func(tx *store.Tx) (err error) {
		lines, err = tx.EpisodeLines(agentID, n, 10)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return lines
}

// Summaries made while the loop ran whose run then ends without another proposal or
// result (the person denies the proposal: the agent is idle) are stored with that
// decision, their call's tokens counted: they do not wait in memory, where a restart
// would lose them.
func TestSummaryTokensReachTheAgentWhenTheRunIsDenied(t *testing.T) {
	h := newHarness(t)
	a, p := h.proposed(reply("test_side_effect", map[string]string{"what": "x"}))
	before := h.waitFor(a.ID, "pending", func(a *api.Agent) bool { return a.Pending != nil })
	// A summary job that ended while the loop was waiting for the decision.
	h.sup.episodeHistory.stashSummaries(a.ID, madeSummaries{lines: map[int64]string{}, promptTokens: 1_000_000, evalTokens: 1})
	if _, err := h.decide(a.ID, p, "n"); err != nil {
		t.Fatal(err)
	}
	h.waitFor(a.ID, "idle", func(a *api.Agent) bool { return a.State == api.StateIdle })
	var after *api.Agent
	testutil.Wait(3*time.Second, func() bool {
		after = h.waitFor(a.ID, "idle", func(a *api.Agent) bool { return a.State == api.StateIdle })
		return after.PromptTokens-before.PromptTokens >= 1_000_000
	})
	if got := after.PromptTokens - before.PromptTokens; got < 1_000_000 {
		h.sup.mu.Lock()
		running := h.sup.runners[a.ID].running
		h.sup.mu.Unlock()
		t.Errorf("prompt tokens grew by %d after the run was denied: the summary call's 1,000,000 still wait in memory (%d); the idle agent's loop running = %v",
			got, h.sup.episodeHistory.madeSummaries(a.ID).promptTokens, running)
	}
}
