package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/commands/web"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/llm"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/memory"
)

// baseDirectives mirror the config defaults' shape; the golden files pin the rendering.
var baseDirectives = api.Directives{
	Constraints:   []string{"Work only inside your workspace.", "Ask the user when a decision is theirs to make."},
	Resources:     []string{"Files in your workspace."},
	BestPractices: []string{"Check your work before you finish."},
}

func render(msgs []llm.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString("--- " + m.Role + " ---\n")
		b.WriteString(m.Content)
		b.WriteString("\n")
	}
	return b.String()
}

// promptFixture is a supervisor on a temp store whose agents are never started: the
// prompt tests build a step's prompt through it exactly as think does.
type promptFixture struct {
	t   testing.TB
	sup *Supervisor
	st  *store.Store
}

var promptNow = time.Date(2026, 11, 21, 9, 30, 0, 0, time.UTC)

func newPromptFixture(t testing.TB, mod ...func(*Options)) *promptFixture {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(context.Background(), filepath.Join(dir, "agentd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	lc, err := llm.New("http://127.0.0.1:9", nil) // never called
	if err != nil {
		t.Fatal(err)
	}
	opt := testOptions(func(o *Options) {
		o.Constraints, o.Resources, o.BestPractices = baseDirectives.Constraints, baseDirectives.Resources, baseDirectives.BestPractices
	})
	for _, m := range mod {
		m(&opt)
	}
	opt.Store, opt.LLM, opt.Model, opt.StateDir = st, lc, "m", dir
	opt.Now = func() time.Time { return promptNow }
	sup, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	return &promptFixture{t: t, sup: sup, st: st}
}

// prompt creates the agent, gives it the episodes and renders its next step's prompt.
func (f *promptFixture) prompt(req api.CreateAgentRequest, eps []api.Episode, numCtx int, notes ...string) (PromptInput, []llm.Message) {
	f.t.Helper()
	ctx := context.Background()
	ca, err := f.sup.runs.CreateAgent(ctx, req)
	if err != nil {
		f.t.Fatal(err)
	}
	var a *store.Agent
	err = f.st.Tx(ctx, func(tx *store.Tx) (err error) {
		for i := range eps {
			if err := tx.InsertEpisode(ca.ID, &eps[i]); err != nil {
				return err
			}
		}
		a, err = tx.Agent(ca.ID)
		return err
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return f.sup.prompt(ctx, f.sup.live(), a, f.sup.stepOf(a), "m", numCtx, notes)
}

func TestPromptGolden(t *testing.T) {
	cases := []struct {
		name  string
		req   api.CreateAgentRequest
		eps   []api.Episode
		notes []string
	}{
		{name: "prompt_first_step.golden", req: api.CreateAgentRequest{
			Name: "haiku-writer", Description: "an agent that writes short poems", Task: "Write a haiku about autumn into haiku.txt.",
		}},
		{name: "prompt_goals_history.golden", req: api.CreateAgentRequest{
			Name: "tester", Description: "a test agent", Goals: []string{"List the files", "Summarize them"},
		}, eps: []api.Episode{
			{Step: 1, Command: "list_folder", Args: json.RawMessage(`{"path":"."}`), Reasoning: "see what is there", Outcome: "succeeded", Result: "a.txt\nb/"},
			{Step: 2, Command: "write_file", Args: json.RawMessage(`{"path":"x","contents":"y"}`), Reasoning: "note", Outcome: "feedback", Feedback: "read a.txt first"},
			{Step: 3, Command: "read_file", Args: json.RawMessage(`{"path":"../etc"}`), Reasoning: "look", Outcome: "failed", Result: "Error: path leaves the workspace"},
			{Step: 4, Command: "finish", Args: json.RawMessage(`{"reason":"x"}`), Outcome: "denied"},
		}, notes: []string{"You proposed the same command with the same arguments twice in a row."}},
	}
	for _, c := range cases {
		t.Run(strings.TrimSuffix(c.name, ".golden"), func(t *testing.T) {
			f := newPromptFixture(t)
			_, msgs := f.prompt(c.req, c.eps, 8192, c.notes...)
			testutil.Golden(t, filepath.Join("testdata", c.name), []byte(render(msgs)))
		})
	}
}

// TestFirstStepPromptSize measures the first-step prompt with the nine commands of
// AutoGPT 0.5.1's example (list_folder, open_file, open_folder, read_file, write_file,
// ask_user, web_search, read_webpage, finish) — target ≤ 2,600 characters; AutoGPT's
// is about 5,150 — and pins it in a golden file.
func TestFirstStepPromptSize(t *testing.T) {
	f := newPromptFixture(t, func(o *Options) {
		withDefaultDirectives(o)
		o.Components = []commands.Component{commands.CommandList{ID: "web", Cmds: commands.Set{web.NewWebSearch(nil, 0), web.NewReadWebpage(nil, nil)}}}
	})
	in, msgs := f.prompt(api.CreateAgentRequest{
		Name: "haiku-writer", Description: "an agent that writes short poems", Task: "Write a haiku about autumn into haiku.txt.",
	}, nil, 8192)
	want := []string{"list_folder", "open_file", "open_folder", "read_file", "write_file", "ask_user", "web_search", "read_webpage", "finish"}
	got := in.Commands.Names()
	if len(got) != len(want) {
		t.Fatalf("commands = %v, want the nine of %v", got, want)
	}
	for _, n := range want {
		if _, ok := in.Commands.Get(n); !ok {
			t.Fatalf("commands = %v: %s missing", got, n)
		}
	}
	n := PromptChars(msgs)
	t.Logf("first-step prompt with AutoGPT's nine commands: %d characters (target ≤ 2,600; AutoGPT 0.5.1: ~5,150)", n)
	testutil.Golden(t, "testdata/prompt_nine_commands.golden", []byte(render(msgs)+fmt.Sprintf("--- %d characters ---\n", n)))
	if n > 2600 {
		t.Errorf("first-step prompt is %d characters, over 2,600", n)
	}
}

func TestHistoryStaysInBudget(t *testing.T) {
	var eps []api.Episode
	for i := 1; i <= 1000; i++ {
		eps = append(eps, api.Episode{Step: i, Command: "read_file", Args: json.RawMessage(`{"path":"f"}`), Outcome: "succeeded", Result: strings.Repeat("r", 2000)})
	}
	f := newPromptFixture(t, func(o *Options) { o.HistoryEpisodes = 1000 })
	for i, numCtx := range []int{2048, 4096, 8192} {
		_, msgs := f.prompt(api.CreateAgentRequest{Name: fmt.Sprintf("x%d", i), Description: "y", Task: "z"}, eps, numCtx)
		chars := PromptChars(msgs)
		if float64(chars) > float64(numCtx-replyReserve(numCtx))*defaultCharsPerToken {
			t.Errorf("num_ctx %d: prompt %d chars exceeds the budget", numCtx, chars)
		}
		progress := msgs[2].Content
		if !strings.HasPrefix(progress, "Progress so far:") || !strings.Contains(progress, "Step 1000:") {
			t.Errorf("num_ctx %d: newest episode not kept:\n%.300s", numCtx, progress)
		}
	}
}

func TestLongTaskIsCutToFit(t *testing.T) {
	s := &Supervisor{}
	set, _ := commands.Resolve(commands.DefaultNames)
	in := PromptInput{Name: "x", Description: "y", Task: strings.Repeat("do the thing. ", 570), Commands: set}
	for _, numCtx := range []int{2048, 3000} {
		in := in
		in.Task = s.model.fitTask(in, "m", numCtx)
		chars := PromptChars(BuildPrompt(in))
		if float64(chars) > float64(numCtx-replyReserve(numCtx))*defaultCharsPerToken {
			t.Errorf("num_ctx %d: prompt %d chars exceeds the budget", numCtx, chars)
		}
		if !strings.HasSuffix(in.Task, "context]") {
			t.Errorf("num_ctx %d: cut task carries no note", numCtx)
		}
	}
	if got := s.model.fitTask(PromptInput{Task: "short", Commands: set}, "m", 8192); got != "short" {
		t.Errorf("a short task was changed: %q", got)
	}
}

// TestSubAgentCommandsPromptCost pins the prompt with the sub-agent commands enabled and
// bounds what the four cost: they are offered only where config lists them.
func TestSubAgentCommandsPromptCost(t *testing.T) {
	req := api.CreateAgentRequest{Name: "lead", Description: "an agent that delegates", Task: "Collect three facts about autumn into facts.txt."}
	base := newPromptFixture(t, withDefaultDirectives)
	_, msgs := base.prompt(req, nil, 8192)
	without := PromptChars(msgs)
	names := append(slices.Clone(commands.DefaultNames), commands.StartAgent, commands.MessageAgent, commands.ListAgents, commands.DeleteAgent)
	f := newPromptFixture(t, func(o *Options) { withDefaultDirectives(o); o.Commands = names })
	in, msgs := f.prompt(req, nil, 8192)
	for _, n := range names {
		if _, ok := in.Commands.Get(n); !ok {
			t.Fatalf("commands = %v: %s missing", in.Commands.Names(), n)
		}
	}
	with := PromptChars(msgs)
	t.Logf("first-step prompt: %d characters without the sub-agent commands, %d with them (+%d)", without, with, with-without)
	testutil.Golden(t, "testdata/prompt_sub_agents.golden", []byte(render(msgs)+fmt.Sprintf("--- %d characters ---\n", with)))
	if with-without > 450 {
		t.Errorf("the four sub-agent commands cost %d prompt characters, over 450: keep their specs short", with-without)
	}
}

// The description follows "You are X, " mid-sentence, so a description written as
// its own sentence must not leave a capital after the comma.
func TestBuildPromptDescriptionReadsMidSentence(t *testing.T) {
	tests := []struct {
		name, desc, want string
	}{
		{"article_an_is_lowered", "An assistant that writes Go.", "You are ada, an assistant that writes Go."},
		{"article_a_is_lowered", "A careful reviewer", "You are ada, a careful reviewer."},
		{"the_is_lowered", "The team's tester", "You are ada, the team's tester."},
		{"acronym_keeps_capital", "NASA's archivist", "You are ada, NASA's archivist."},
		{"proper_noun_keeps_capital", "Go expert", "You are ada, Go expert."},
		{"lowercase_unchanged", "a helper", "You are ada, a helper."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msgs := BuildPrompt(PromptInput{Name: "ada", Description: tt.desc})
			first, _, _ := strings.Cut(msgs[0].Content, "\n")
			if first != tt.want {
				t.Fatalf("first line = %q, want %q", first, tt.want)
			}
		})
	}
}

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
	if j := strings.Index(s, "\n--- "); j >= 0 { // the next message, as render shows it
		s = s[:j]
	}
	return s
}

// At num_ctx 2048 the memory section gets its reserve (memory.SectionBudget: the figure the
// recall benchmark's prompt mode measures with), the prompt still fits beside the reply,
// and the evidence ranked below long, near-identical memories reaches the prompt.
func TestMemoryPromptAtSmallContext(t *testing.T) {
	f, ix, a := newMemoryKeeper(t, "When is the invoice for the garden shed due?")
	ctx := context.Background()
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
	msgs := f.memoryPrompt(ix, a.ID, 2048)
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
		history          bool
		want             int
	}{
		{name: "small_context_gets_its_reserve", left: 2700, ctx: 2048, limit: 2500, history: true, want: 2046},
		{name: "later_step_at_2048_leaves_history_its_floor", left: 2434, ctx: 2048, limit: 2500, history: true, want: 1834},
		{name: "first_step_at_2048_without_history_gets_the_reserve", left: 2434, ctx: 2048, limit: 2500, want: 2046},
		{name: "reserve_leaves_history_its_floor", left: 1500, ctx: 2048, limit: 2500, history: true, want: 900},
		{name: "without_history_at_most_what_is_left", left: 1500, ctx: 2048, limit: 2500, want: 1500},
		{name: "share_when_more_than_reserve", left: 20000, ctx: 4096, limit: 2500, history: true, want: 7500},
		{name: "configured_limit_caps_it", left: 20000, ctx: 4096, limit: 1000, history: true, want: 3000},
		{name: "unknown_context_uses_the_share", left: 2400, ctx: 0, limit: 2500, history: true, want: 960},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := memoryBudget(&commands.Step{Budget: c.left, ContextTokens: c.ctx}, c.limit, 3, c.history)
			if got != c.want {
				t.Errorf("memoryBudget(left %d, num_ctx %d, limit %d, history %v) = %d, want %d", c.left, c.ctx, c.limit, c.history, got, c.want)
			}
		})
	}
}

// At num_ctx 2048 a 1,000-episode agent with many memories matching its task gets a full
// memory section (about 18 memories, most as snippets) and its history's floor, and the
// prompt still fits the context beside the reply.
func TestMemoryPromptFitsAt2048With1000Episodes(t *testing.T) {
	f, ix, a := newMemoryKeeper(t, "Which supplier sent the garden shed invoice, and when is it due?")
	ctx := context.Background()
	day := time.Date(2026, 2, 1, 10, 0, 0, 0, time.UTC)
	var ms []store.Memory
	things := []string{"roof panels", "door hinges", "floor boards", "window glass", "paint tins", "gutter pipes", "shelf brackets",
		"wood stain", "lock set", "felt roll", "corner posts", "screws", "delivery", "labour", "skip hire", "concrete base"}
	moods := []string{"arrived late", "were the wrong size", "cost more than quoted", "came with a discount", "are missing from the list",
		"were paid in cash", "need a second coat", "were returned", "are on back order", "look fine"}
	for i := range 60 {
		who := []string{"Ann", "Bo", "Cy"}[i%3]
		ms = append(ms, store.Memory{ID: fmt.Sprintf("m-turn-%02d", i), AgentID: a.ID, Kind: "chat", Speaker: who,
			Source: "slack message from " + who, Created: day.Add(time.Duration(i) * 26 * time.Hour),
			Text: fmt.Sprintf("The %s for the garden shed %s; %s said the invoice from %s should wait until %s %s.", things[i%len(things)],
				moods[i%len(moods)], []string{"Dee", "Eli", "Flo"}[i%3], []string{"Timberland", "Oakworks", "ShedCo", "Pine & Sons"}[i%4],
				things[(i*7+3)%len(things)], moods[(i*3+1)%len(moods)])})
	}
	ms = append(ms, store.Memory{ID: "m-note", AgentID: a.ID, Kind: "note", Source: "memory_add", Created: day,
		Text: "The garden shed invoice from Oakworks is due on 3 March."})
	err := f.st.Tx(ctx, func(tx *store.Tx) error {
		for i := range 1000 {
			ep := api.Episode{Step: i + 1, Command: "read_file", Args: json.RawMessage(fmt.Sprintf(`{"path":"invoices/%d.txt"}`, i)),
				Reasoning: "check the next invoice for the garden shed", Outcome: "succeeded",
				Result: strings.Repeat(fmt.Sprintf("line %d of invoice %d for the garden shed. ", i, i), 20)}
			if err := tx.InsertEpisode(a.ID, &ep); err != nil {
				return err
			}
		}
		return f.sup.memoryService.remember(tx, ms...)
	})
	if err != nil {
		t.Fatal(err)
	}
	msgs := f.memoryPrompt(ix, a.ID, 2048)
	limit := float64(2048-replyReserve(2048)) * defaultCharsPerToken
	if chars := PromptChars(msgs); float64(chars) > limit {
		t.Errorf("prompt of %d chars exceeds num_ctx 2048 less the reply reserve (%.0f chars)", chars, limit)
	}
	prompt := render(msgs)
	sec := memorySection(prompt)
	if n := strings.Count(sec, "\n- "); n < 12 {
		t.Errorf("the memory section shows %d memories, want at least 12 at num_ctx 2048:\n%s", n, sec)
	}
	if !strings.Contains(sec, "due on 3 March") {
		t.Errorf("the note with the answer is not in the memory section:\n%s", sec)
	}
	if !strings.Contains(prompt, "Progress so far:") {
		t.Errorf("the history got no room beside the memories:\n%s", prompt)
	}
}

// The memory section as the model reads it at num_ctx 2048 (its reserve capped by the
// history's floor, as on a first step): the best memories whole, then snippets, the chat
// turns' frame reduced to day and speaker, a near-copy left out.
func TestMemorySectionGolden(t *testing.T) {
	day := time.Date(2023, 5, 8, 13, 56, 0, 0, time.UTC)
	turns := []struct{ who, text string }{
		{"Rosa", "I went to the night pottery class yesterday and it was so calming."},
		{"Teo", "Nice one, Rosa! What did you make at the pottery class that was so good?"},
		{"Rosa", "A tall green vase! The teacher showed us how to trim the base and I was so proud of it."},
		{"Teo", "I ran a trail race for the animal shelter last Saturday – it was hard but it made me want to train every week."},
		{"Rosa", "I went to the night pottery class yesterday and it was so calming!"}, // a near-copy of the first
		{"Teo", "We went sailing with the kids on the lake last week; a day on the water means everything to me."},
		{"Rosa", "I'm looking into teaching jobs at the art centre, so I can give people the calm I got from the class."},
		{"Teo", "My kids loved the baking workshop; we made our own bread and shaped it like turtles and stars."},
		{"Rosa", "The art centre said the pottery class letter helped my application a lot."},
	}
	var hits []memory.Hit
	for i, tu := range turns {
		hits = append(hits, memory.Hit{ID: fmt.Sprintf("m-%d", i), Kind: memory.KindChat, Speaker: tu.who, Source: "slack message from " + tu.who,
			Text: tu.text, Created: day.Add(time.Duration(i%3) * 26 * time.Hour), Score: 10 - float64(i)})
	}
	hits = append(hits, memory.Hit{ID: "m-note", Kind: memory.KindNote, Source: "memory_add", Text: "Rosa's pottery class meets on Tuesdays at 7 pm in the old mill.", Created: day, Score: 0.5})
	sec := memorySectionOf(memory.Prepare(hits, "When did Rosa go to the night pottery class?"), 600, memory.DefaultShown)
	if n := strings.Count(sec, "night pottery class yesterday"); n != 1 {
		t.Errorf("the near-copy is shown (%d times the same turn)", n)
	}
	if len(sec) > 600 {
		t.Errorf("section of %d chars, over its budget of 600", len(sec))
	}
	if len(memoryHead) != 96 {
		t.Errorf("the heading is %d chars: memory/recall_prompt_test.go's promptBudget counts 96; change both", len(memoryHead))
	}
	testutil.Golden(t, filepath.Join("testdata", "prompt_memory_section.golden"), []byte(sec))
}

// speakerChat is a thread as the chat relay remembers it: each message with its speaker
// and the thread's previous words as context. Only Ana's first message and her short
// answer say what the questions below ask about; the others talk about the same deadline.
var speakerChat = []api.MemoryAddRequest{
	{Kind: "chat", Text: "the deadline for the report is Monday", Source: "slack message from Bo", Speaker: "Bo"},
	{Kind: "chat", Text: "the deadline moved to Friday", Source: "slack message from Ana", Speaker: "Ana",
		Context: "the deadline for the report is Monday"},
	{Kind: "chat", Text: "I think the deadline is too tight", Source: "slack message from Cy", Speaker: "Cy",
		Context: "the deadline moved to Friday"},
	{Kind: "chat", Text: "about the deadline, we need more testers", Source: "slack message from Bo", Speaker: "Bo",
		Context: "I think the deadline is too tight"},
	{Kind: "chat", Text: "which release is that?", Source: "slack message from Cy", Speaker: "Cy"},
	{Kind: "chat", Text: "the green one", Source: "slack message from Ana", Speaker: "Ana",
		Context: "which colour did the customer pick for the banner?"},
}

// A chat memory's speaker is searched as a field: "what did Ana say about the deadline"
// finds Ana's words through the daemon's own search, says it matched the speaker, and a
// short answer is found by the words of the turn before it. A rebuild of the index from
// the database (agentctl memory reindex) keeps both.
func TestMemorySpeakerAndContextFoundAndKeptByReindex(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, withMemory(t))
	a := h.create(api.CreateAgentRequest{Name: "keeper", Description: "d", Goals: []string{"g"}, Start: new(bool)})
	svc := h.sup.memoryService
	for _, req := range speakerChat {
		req.Agent = "keeper"
		if _, err := svc.AddMemory(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string) {
		t.Helper()
		hits, err := svc.SearchMemory(ctx, api.MemorySearchRequest{Agent: "keeper", Query: "what did Ana say about the deadline?"})
		if err != nil || len(hits) == 0 {
			t.Fatalf("%s: search = %+v, %v", when, hits, err)
		}
		top := hits[0]
		if top.Text != "the deadline moved to Friday" || top.Speaker != "Ana" {
			t.Errorf("%s: top hit for Ana's words is %q by %q, want Ana's \"the deadline moved to Friday\"", when, top.Text, top.Speaker)
		}
		if top.Why == nil || !slices.Contains(top.Why.Fields, "speaker") || !slices.Contains(top.Why.Fields, "text") {
			t.Errorf("%s: top hit says why %+v; want the text and speaker fields", when, top.Why)
		}
		hits, err = svc.SearchMemory(ctx, api.MemorySearchRequest{Agent: "keeper", Query: "which colour did the customer pick?", K: 3})
		if err != nil || len(hits) == 0 || hits[0].Text != "the green one" {
			t.Errorf("%s: the short answer is not found by its question's words (its context): %+v, %v", when, hits, err)
		}
	}
	ix := h.opt.Memory.Index
	// A new index is first rebuilt from the (empty) store in the background.
	if !testutil.Wait(10*time.Second, func() bool { return !ix.NeedsRebuild() && !svc.mem.rebuilding.Load() }) {
		t.Fatalf("the first rebuild did not end: %+v", ix.Stats())
	}
	flush(t, ix)
	check("as added")
	if _, err := svc.ReindexMemory(ctx); err != nil {
		t.Fatal(err)
	}
	check("after reindex")
	ms := storedMemories(t, h.st, a.ID)
	i := slices.IndexFunc(ms, func(m store.Memory) bool { return m.Text == "the green one" })
	if i < 0 || ms[i].Speaker != "Ana" || !strings.Contains(ms[i].Context, "which colour") {
		t.Errorf("stored chat memory = %+v, want speaker Ana and the question as context", ms)
	}
}

// The prompt's memory line says who spoke, once: "Ana: …" in place of the relay's
// "slack message from Ana".
func TestMemoryPromptNamesTheSpeaker(t *testing.T) {
	f, ix, a := newMemoryKeeper(t, "What did Ana say about the deadline?")
	ctx := context.Background()
	for _, req := range speakerChat {
		req.Agent = a.ID
		if _, err := f.sup.memoryService.AddMemory(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	msgs := f.memoryPrompt(ix, a.ID, 4096)
	sec := memorySection(render(msgs))
	if !strings.Contains(sec, "\n- Ana: the deadline moved to Friday") {
		t.Errorf("the memory section does not say Ana said it:\n%s", sec)
	}
	if strings.Contains(sec, "message from") {
		t.Errorf("the memory section names the speaker twice (source and line):\n%s", sec)
	}
}

// An export line has a speaker or a source, as import reads it back: a relay's chat memory
// exports its speaker, an older chat memory without one its source as the speaker.
func TestExportRecordSpeaker(t *testing.T) {
	cases := []struct {
		name            string
		m               store.Memory
		speaker, source string
	}{
		{name: "relay_chat_exports_its_speaker", m: store.Memory{Kind: "chat", Source: "slack message from Ana", Speaker: "Ana"}, speaker: "Ana"},
		{name: "chat_without_speaker_exports_its_source_as_speaker", m: store.Memory{Kind: "chat", Source: "Rosa"}, speaker: "Rosa"},
		{name: "note_exports_its_source", m: store.Memory{Kind: "note", Source: "kickoff notes"}, source: "kickoff notes"},
		{name: "note_with_a_speaker_exports_the_speaker", m: store.Memory{Kind: "note", Source: "minutes", Speaker: "Bo"}, speaker: "Bo"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.m.Text = "x"
			r := exportRecord(c.m, nil)
			if r.Speaker != c.speaker || r.Source != c.source {
				t.Errorf("exported speaker %q, source %q; want %q, %q", r.Speaker, r.Source, c.speaker, c.source)
			}
			if err := r.Check(); err != nil {
				t.Errorf("import would refuse the exported record: %v", err)
			}
		})
	}
}

// newMemoryKeeper is a prompt fixture with long-term memory on and the default
// directives, and its agent keeper with task, not started.
func newMemoryKeeper(t *testing.T, task string) (*promptFixture, *memory.Index, *api.Agent) {
	t.Helper()
	ix := openIndex(t, t.TempDir())
	t.Cleanup(func() { ix.Close() })
	f := newPromptFixture(t, func(o *Options) {
		withDefaultDirectives(o)
		o.Memory = MemoryOf(config.Default().Memory, ix)
	})
	a, err := f.sup.runs.CreateAgent(context.Background(), api.CreateAgentRequest{Name: "keeper", Description: benchDescription, Task: task, Start: new(bool)})
	if err != nil {
		t.Fatal(err)
	}
	return f, ix, a
}

// memoryPrompt is agent id's next prompt at numCtx, once ix took the memories queued.
func (f *promptFixture) memoryPrompt(ix *memory.Index, id string, numCtx int) []llm.Message {
	f.t.Helper()
	flush(f.t, ix)
	ctx := context.Background()
	var sa *store.Agent
	if err := f.st.View(ctx, func(tx *store.Tx) (err error) { sa, err = tx.Agent(id); return err }); err != nil {
		f.t.Fatal(err)
	}
	_, msgs := f.sup.prompt(ctx, f.sup.live(), sa, f.sup.stepOf(sa), "m", numCtx, nil)
	return msgs
}
