package agent

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/client"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/memory"
)

// memorySection is the prompt's memory section, "" when it has none.
func memorySection(prompt string) string {
	i := strings.Index(prompt, "Relevant memories (")
	if i < 0 {
		return ""
	}
	s := prompt[i:]
	if j := strings.Index(s, "\nProgress so far:"); j >= 0 {
		s = s[:j]
	}
	if j := strings.Index(s, "\nThe current time is"); j >= 0 {
		s = s[:j]
	}
	return s
}

// At num_ctx 2048 the memory section gets its reserve (memory.SectionBudget: the figure the
// recall benchmark's prompt mode measures with), the prompt still fits beside the reply,
// and the evidence ranked below long, near-identical memories reaches the prompt.
func TestMemoryPromptAtSmallContext(t *testing.T) {
	dir := t.TempDir()
	ix := openIndex(t, dir)
	t.Cleanup(func() { ix.Close() })
	f := newPromptFixture(t, Options{Directives: config.Default().Directives(), Memory: MemoryOptions{Index: ix}})
	ctx := context.Background()
	a, err := f.sup.runs.CreateAgent(ctx, client.CreateAgentRequest{Name: "keeper", Description: benchDescription,
		Task: "When is the invoice for the garden shed due?", Start: new(bool)})
	if err != nil {
		t.Fatal(err)
	}
	long := "The invoice for the garden shed came by mail today. " + strings.Repeat("It lists the wood, the screws, the paint and the labour in many lines. ", 12)
	var ms []store.Memory
	for i := range 6 { // long near-copies: one is worth showing, as a snippet
		ms = append(ms, store.Memory{ID: fmt.Sprintf("m-copy-%d", i), AgentID: a.ID, Kind: "note", Text: long + fmt.Sprint(i)})
	}
	for i, w := range []string{"roses bloom early", "tomatoes need stakes", "the hose leaks again", "moles dug three holes",
		"the gate squeaks", "apples fell overnight", "weeds took the path", "birds ate the seeds"} {
		ms = append(ms, store.Memory{ID: fmt.Sprintf("m-other-%d", i), AgentID: a.ID, Kind: "chat", Source: "Ann",
			Text: "Ann: in the garden shed corner, " + w + " and the invoice pile grows"})
	}
	ms = append(ms, store.Memory{ID: "m-evidence", AgentID: a.ID, Kind: "chat", Source: "Ann",
		Text: "Ann: the shed invoice is due on 3 March", Created: time.Date(2026, 2, 1, 10, 0, 0, 0, time.UTC)})
	if err := f.st.Tx(ctx, func(tx *store.Tx) error { return f.sup.memoryService.remember(tx, ms...) }); err != nil {
		t.Fatal(err)
	}
	flush(t, ix)
	var sa *store.Agent
	if err := f.st.View(ctx, func(tx *store.Tx) (err error) { sa, err = tx.Agent(a.ID); return err }); err != nil {
		t.Fatal(err)
	}
	_, msgs := f.sup.prompt(ctx, f.sup.live(), sa, f.sup.stepOf(sa), "m", 2048, nil)
	prompt := render(msgs)
	if chars := PromptChars(msgs); float64(chars) > float64(2048-replyReserve(2048))*defaultCharsPerToken {
		t.Errorf("prompt of %d chars exceeds num_ctx 2048 less the reply reserve", chars)
	}
	sec := memorySection(prompt)
	if !strings.Contains(sec, "the shed invoice is due on 3 March") || !strings.Contains(sec, "1 Feb 2026") {
		t.Errorf("the evidence (and its date) is not in the memory section:\n%s", sec)
	}
	if n := strings.Count(sec, "came by mail today"); n != 1 {
		t.Errorf("the near-identical long memory is shown %d times, want once:\n%s", n, sec)
	}
	if !strings.Contains(sec, "…") {
		t.Errorf("the long memory is not cut to a snippet:\n%s", sec)
	}
	if reserve := memory.SectionBudget(2048, defaultCharsPerToken); len(sec) > reserve || len(sec) < reserve/2 {
		t.Errorf("memory section is %d chars; want up to its reserve of %d, and most of it with this many memories:\n%s", len(sec), reserve, sec)
	}
}

func TestMemoryBudget(t *testing.T) {
	cases := []struct {
		name             string
		left, ctx, limit int
		want             int
	}{
		{name: "small_context_gets_its_reserve", left: 2400, ctx: 2048, limit: 2500, want: 1536},
		{name: "reserve_leaves_history_its_floor", left: 1500, ctx: 2048, limit: 2500, want: 900},
		{name: "share_when_more_than_reserve", left: 20000, ctx: 4096, limit: 2500, want: 7500},
		{name: "configured_limit_caps_it", left: 20000, ctx: 4096, limit: 1000, want: 3000},
		{name: "unknown_context_uses_the_share", left: 2400, ctx: 0, limit: 2500, want: 960},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := memoryBudget(&commands.Step{Budget: c.left, ContextTokens: c.ctx}, c.limit, 3)
			if got != c.want {
				t.Errorf("memoryBudget(left %d, num_ctx %d, limit %d) = %d, want %d", c.left, c.ctx, c.limit, got, c.want)
			}
		})
	}
}
