package agent

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/client"
	"github.com/agentd/agentd/daemon/llm"
)

var update = flag.Bool("update", false, "rewrite golden files")

// baseDirectives mirror the config defaults' shape; the golden files pin the rendering.
var baseDirectives = client.Directives{
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

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (go test -update to accept):\n%s", name, got)
	}
}

func TestPromptGolden(t *testing.T) {
	set, err := commands.Resolve(commands.DefaultNames)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 21, 9, 30, 0, 0, time.UTC)
	cases := []struct {
		name string
		in   PromptInput
	}{
		{"prompt_first_step.golden", PromptInput{
			Name: "haiku-writer", Description: "an agent that writes short poems", Task: "Write a haiku about autumn into haiku.txt.",
			Directives: baseDirectives, Commands: set, Now: now,
		}},
		{"prompt_goals_history.golden", PromptInput{
			Name: "tester", Description: "a test agent", Task: "Achieve the goals below.", Goals: []string{"List the files", "Summarize them"},
			Directives: baseDirectives, Commands: set, Now: now,
			Episodes: []client.Episode{
				{Step: 1, Command: "list_folder", Args: json.RawMessage(`{"path":"."}`), Reasoning: "see what is there", Outcome: "succeeded", Result: "a.txt\nb/"},
				{Step: 2, Command: "write_file", Args: json.RawMessage(`{"path":"x","contents":"y"}`), Reasoning: "note", Outcome: "feedback", Feedback: "read a.txt first"},
				{Step: 3, Command: "read_file", Args: json.RawMessage(`{"path":"../etc"}`), Reasoning: "look", Outcome: "failed", Result: "Error: path leaves the workspace"},
				{Step: 4, Command: "finish", Args: json.RawMessage(`{"reason":"x"}`), Outcome: "denied"},
			},
			Notes: []string{"You proposed the same command with the same arguments twice in a row."},
		}},
	}
	for _, c := range cases {
		t.Run(strings.TrimSuffix(c.name, ".golden"), func(t *testing.T) {
			golden(t, c.name, render(BuildPrompt(c.in)))
		})
	}
}

// TestFirstStepPromptSize reports the first-step prompt size with this commands.
// The commands issue sets the target for nine commands (≤ 2,600 characters).
func TestFirstStepPromptSize(t *testing.T) {
	set, _ := commands.Resolve(commands.DefaultNames)
	msgs := BuildPrompt(PromptInput{
		Name: "haiku-writer", Description: "an agent that writes short poems", Task: "Write a haiku about autumn into haiku.txt.",
		Directives: baseDirectives, Commands: set, Now: time.Date(2026, 11, 21, 9, 30, 0, 0, time.UTC),
	})
	n := PromptChars(msgs)
	t.Logf("first-step prompt: %d characters, %d commands", n, len(set))
	if n > 2600 {
		t.Errorf("first-step prompt is %d characters, over 2,600", n)
	}
}

func TestFitHistoryStaysInBudget(t *testing.T) {
	s := &Supervisor{}
	set, _ := commands.Resolve(commands.DefaultNames)
	in := PromptInput{Name: "x", Description: "y", Task: "z", Commands: set, Now: time.Unix(0, 0)}
	var eps []client.Episode
	for i := 1; i <= 1000; i++ {
		eps = append(eps, client.Episode{Step: i, Command: "read_file", Args: json.RawMessage(`{"path":"f"}`), Outcome: "succeeded", Result: strings.Repeat("r", 2000)})
	}
	for _, numCtx := range []int{2048, 4096, 8192} {
		kept := s.fitHistory(in, eps, numCtx)
		in.Episodes = kept
		chars := PromptChars(BuildPrompt(in))
		if float64(chars) > float64(numCtx-replyReserve(numCtx))*defaultCharsPerToken {
			t.Errorf("num_ctx %d: prompt %d chars exceeds the budget", numCtx, chars)
		}
		if len(kept) > 0 && kept[len(kept)-1].Step != 1000 {
			t.Errorf("num_ctx %d: newest episode not kept", numCtx)
		}
		in.Episodes = nil
	}
}

func TestLongTaskIsCutToFit(t *testing.T) {
	s := &Supervisor{}
	set, _ := commands.Resolve(commands.DefaultNames)
	in := PromptInput{Name: "x", Description: "y", Task: strings.Repeat("do the thing. ", 570), Commands: set, Now: time.Unix(0, 0)}
	for _, numCtx := range []int{2048, 3000} {
		in := in
		in.Task = s.fitTask(in, numCtx)
		chars := PromptChars(BuildPrompt(in))
		if float64(chars) > float64(numCtx-replyReserve(numCtx))*defaultCharsPerToken {
			t.Errorf("num_ctx %d: prompt %d chars exceeds the budget", numCtx, chars)
		}
		if !strings.HasSuffix(in.Task, "context]") {
			t.Errorf("num_ctx %d: cut task carries no note", numCtx)
		}
	}
	if got := s.fitTask(PromptInput{Task: "short", Commands: set}, 8192); got != "short" {
		t.Errorf("a short task was changed: %q", got)
	}
}
