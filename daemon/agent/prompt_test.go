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
	opt := testOptions(func(o *Options) { o.Directives = baseDirectives })
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
		o.Directives = config.Default().Directives()
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
	base := newPromptFixture(t, func(o *Options) { o.Directives = config.Default().Directives() })
	_, msgs := base.prompt(req, nil, 8192)
	without := PromptChars(msgs)
	names := append(slices.Clone(commands.DefaultNames), commands.StartAgent, commands.MessageAgent, commands.ListAgents, commands.DeleteAgent)
	f := newPromptFixture(t, func(o *Options) { o.Directives, o.Commands = config.Default().Directives(), names })
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
