package agent

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/llm"
	"github.com/agentd/agentd/daemon/run"
	"github.com/agentd/agentd/internal/display"
)

// PromptInput is everything one step's prompt is made of: the agent's identity and task,
// and what its components provided.
type PromptInput struct {
	Name        string
	Description string
	Task        string
	Goals       []string
	Directives  commands.Directives // from the DirectiveProviders
	Commands    commands.Set        // from the CommandProviders
	Messages    []string            // from the MessageProviders (history, open files, time)
	// Notes are extra instructions for this step only (e.g. "you repeated yourself").
	Notes []string
}

// callToAction ends every prompt; it is what the schema-constrained reply answers.
const callToAction = `Determine exactly one command to use next, based on the task and your progress so far. ` +
	`Reply with one JSON object: "thoughts" (observations, text, reasoning, self_criticism, plan, speak), then "command" (name, args).`

// BuildPrompt renders the messages for one step: the system message (identity, directives,
// commands), the task, the components' messages, and the call to action.
func BuildPrompt(in PromptInput) []llm.Message {
	var sys strings.Builder
	sys.WriteString(run.Identity(in.Name, in.Description) + ".\n")
	list(&sys, "Constraints", in.Directives.Constraints)
	list(&sys, "Resources", in.Directives.Resources)
	sys.WriteString("\nCommands:\n")
	for _, c := range in.Commands {
		sys.WriteString(CommandLine(c.Spec()))
		sys.WriteByte('\n')
	}
	list(&sys, "Best practices", in.Directives.BestPractices)

	var task strings.Builder
	fmt.Fprintf(&task, "Your task:\n%s\n", strings.TrimSpace(in.Task))
	if len(in.Goals) > 0 {
		list(&task, "Goals", in.Goals)
	}
	msgs := []llm.Message{
		{Role: "system", Content: strings.TrimSpace(sys.String())},
		{Role: "user", Content: strings.TrimSpace(task.String())},
	}
	for _, m := range in.Messages {
		msgs = append(msgs, llm.Message{Role: "user", Content: m})
	}
	var cta strings.Builder
	for _, n := range in.Notes {
		cta.WriteString(n)
		cta.WriteByte('\n')
	}
	cta.WriteString(callToAction)
	return append(msgs, llm.Message{Role: "user", Content: cta.String()})
}

func list(b *strings.Builder, title string, items []string) {
	if len(items) == 0 {
		return
	}
	fmt.Fprintf(b, "\n%s:\n", title)
	for i, it := range items {
		fmt.Fprintf(b, "%d. %s\n", i+1, strings.TrimSpace(it))
	}
}

// CommandLine renders one command for the prompt: `- name(param: desc, opt?: desc): description`.
func CommandLine(s commands.Spec) string {
	var params []string
	required := map[string]bool{}
	for _, r := range s.Params.Required {
		required[r] = true
	}
	for _, p := range s.Params.Properties {
		name := p.Name
		if !required[name] {
			name += "?"
		}
		if p.Schema.Description != "" {
			name += ": " + p.Schema.Description
		}
		params = append(params, name)
	}
	return fmt.Sprintf("- %s(%s): %s", s.Name, strings.Join(params, ", "), s.Description)
}

// resultCut bounds how much of one result goes into the prompt.
const resultCut = 400

// EpisodeText renders one episode in a few lines.
func EpisodeText(e api.Episode) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Step %d: %s → %s", e.Step, CallText(e.Command, e.Args), e.Outcome)
	if r := strings.TrimSpace(e.Reasoning); r != "" {
		fmt.Fprintf(&b, "\n  Reasoning: %s", display.Cut(strings.TrimSpace(r), 200, display.Ellipsis))
	}
	switch e.Outcome {
	case "feedback":
		fmt.Fprintf(&b, "\n  Not run. Human feedback: %s", display.Cut(strings.TrimSpace(e.Feedback), resultCut, display.Ellipsis))
	case "denied":
		b.WriteString("\n  Not run: the human denied it.")
	default:
		if r := strings.TrimSpace(e.Result); r != "" {
			fmt.Fprintf(&b, "\n  Result: %s", strings.ReplaceAll(display.Cut(strings.TrimSpace(r), resultCut, display.Ellipsis), "\n", "\n    "))
		}
	}
	return b.String()
}

// CallText renders a command with its args as `name(k="v", n=3)` in canonical key order.
func CallText(name string, args json.RawMessage) string {
	canon, err := commands.CanonicalArgs(args)
	var m map[string]json.RawMessage
	if err != nil || json.Unmarshal(canon, &m) != nil || len(m) == 0 {
		return name + "()"
	}
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+display.Cut(strings.TrimSpace(string(m[k])), 120, display.Ellipsis))
	}
	return name + "(" + strings.Join(parts, ", ") + ")"
}

// PromptChars counts the characters of the messages' contents.
func PromptChars(msgs []llm.Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Content)
	}
	return n
}
