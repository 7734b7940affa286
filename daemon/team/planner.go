package team

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/llm"
	"github.com/agentd/agentd/internal/display"
)

// The planner (AutoAgents, Chen et al. 2023): from a task the model proposes the roles —
// picked from a library or made up, each with a description, a prompt and the commands it
// may use — and a numbered plan, each step a two-role phase. An observer checks roles and
// plan against rules and, when it finds problems, the model revises once with them spelled
// out. The result is a workflow file (one state running the steps in order) that Parse
// accepts, to be saved, read, edited and run like any other.

// Library are the roles the planner may pick as they are.
var Library = []PlanRole{
	{Name: "ceo", Description: "decides what the customer gets and keeps the work on the task"},
	{Name: "cto", Description: "chooses the technology and reviews designs"},
	{Name: "programmer", Description: "writes complete, runnable code into files", Commands: []string{"list_folder", "read_file", "write_file"}},
	{Name: "reviewer", Description: "reads code or text and finds what is wrong"},
	{Name: "tester", Description: "checks the result against the task, case by case"},
	{Name: "researcher", Description: "finds and reads sources and answers from them"},
	{Name: "writer", Description: "turns notes into clear text in files", Commands: []string{"read_file", "write_file"}},
	{Name: "summarizer", Description: "summarizes the team's results into the final answer"},
}

// PlanRole is a role the planner proposes.
type PlanRole struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Prompt      string   `json:"prompt"`
	Commands    []string `json:"commands"`
}

// PlanStep is one step of the plan: a two-role phase whose conclusion goes to Output.
type PlanStep struct {
	Step       string `json:"step"`
	Instructor string `json:"instructor"`
	Assistant  string `json:"assistant"`
	Output     string `json:"output"`
}

// Plan is the planner's proposal.
type Plan struct {
	Roles []PlanRole `json:"roles"`
	Steps []PlanStep `json:"plan"`
}

// Planned is a plan made into a workflow file.
type Planned struct {
	Plan     Plan
	Workflow string   // TOML that Parse accepts
	Revised  bool     // the observer found problems and the model revised the plan once
	Problems []string // what the observer found in the first plan
}

const (
	maxPlanRoles = 6
	maxPlanSteps = 8
)

// planSchema constrains the plan's shape; commands are an enum of what the daemon offers.
func planSchema(cmds []string) *commands.Schema {
	cmdItem := &commands.Schema{Type: "string", Enum: cmds}
	if len(cmds) == 0 {
		cmdItem = commands.String("a command name", 40)
	}
	role := commands.Object(
		commands.Prop{Name: "name", Schema: commands.String("lowercase_name of the role", 24)},
		commands.Prop{Name: "description", Schema: commands.String("who the role is, one line", 160)},
		commands.Prop{Name: "prompt", Schema: commands.String("how the role works", 300)},
		commands.Prop{Name: "commands", Schema: &commands.Schema{Type: "array", Items: cmdItem, MaxItems: commands.Ptr(6)}},
	)
	step := commands.Object(
		commands.Prop{Name: "step", Schema: commands.String("what this step settles", 200)},
		commands.Prop{Name: "instructor", Schema: commands.String("the role that instructs", 24)},
		commands.Prop{Name: "assistant", Schema: commands.String("the role that does the work", 24)},
		commands.Prop{Name: "output", Schema: commands.String("lowercase_name of the variable the step's result goes to", 24)},
	)
	return commands.Object(
		commands.Prop{Name: "roles", Schema: &commands.Schema{Type: "array", Items: role, MinItems: commands.Ptr(2), MaxItems: commands.Ptr(maxPlanRoles)}},
		commands.Prop{Name: "plan", Schema: &commands.Schema{Type: "array", Items: step, MinItems: commands.Ptr(1), MaxItems: commands.Ptr(maxPlanSteps)}},
	)
}

// Observe checks a plan against the rules and returns its problems: valid, unique names;
// steps naming two different roles of the plan; only commands the daemon offers; a
// summarizing role that concludes the last step.
func Observe(p Plan, offered []string) []string {
	var probs []string
	roles := map[string]bool{}
	summarizer := ""
	for i, r := range p.Roles {
		switch {
		case !isName(r.Name):
			probs = append(probs, fmt.Sprintf("role %d: name %q must be lowercase letters, digits and _, starting with a letter", i+1, r.Name))
		case roles[r.Name]:
			probs = append(probs, fmt.Sprintf("role %s appears twice", r.Name))
		}
		roles[r.Name] = true
		if strings.TrimSpace(r.Description) == "" {
			probs = append(probs, fmt.Sprintf("role %s has no description", r.Name))
		}
		for _, c := range r.Commands {
			if !slices.Contains(offered, c) {
				probs = append(probs, fmt.Sprintf("role %s uses %q, which is not a command: use only %s", r.Name, c, strings.Join(offered, ", ")))
			}
		}
		if strings.Contains(strings.ToLower(r.Name+" "+r.Description), "summar") && summarizer == "" {
			summarizer = r.Name
		}
	}
	if summarizer == "" {
		probs = append(probs, "no summarizing role: add one (e.g. summarizer) that concludes the last step with the final answer")
	}
	outputs := map[string]bool{}
	for i, s := range p.Steps {
		n := i + 1
		for _, r := range []string{s.Instructor, s.Assistant} {
			if !roles[r] {
				probs = append(probs, fmt.Sprintf("step %d names role %q, which is not in roles", n, r))
			}
		}
		if s.Instructor == s.Assistant {
			probs = append(probs, fmt.Sprintf("step %d: instructor and assistant are both %q: use two roles", n, s.Assistant))
		}
		switch {
		case !isName(s.Output) || s.Output == "task":
			probs = append(probs, fmt.Sprintf("step %d: output %q must be a lowercase_name other than task", n, s.Output))
		case outputs[s.Output]:
			probs = append(probs, fmt.Sprintf("step %d: output %s is used by an earlier step", n, s.Output))
		}
		outputs[s.Output] = true
		if strings.TrimSpace(s.Step) == "" {
			probs = append(probs, fmt.Sprintf("step %d says nothing", n))
		}
	}
	if k := len(p.Steps); k > 0 && summarizer != "" && p.Steps[k-1].Instructor != summarizer && p.Steps[k-1].Assistant != summarizer {
		probs = append(probs, fmt.Sprintf("the last step must involve the summarizing role %s", summarizer))
	}
	return probs
}

// PlanTeam is the planner as the API serves it.
func (e *Engine) PlanTeam(ctx context.Context, req api.TeamPlanRequest) (*api.TeamPlan, error) {
	p, err := e.Plan(ctx, req.Task)
	if err != nil {
		return nil, err
	}
	return &api.TeamPlan{Workflow: p.Workflow, Revised: p.Revised, Problems: p.Problems}, nil
}

// Plan asks the model for roles and a plan for task, has them observed and revised once,
// and returns the workflow. Problems left after the revision are an error.
func (e *Engine) Plan(ctx context.Context, task string) (*Planned, error) {
	task, err := checkTask(task)
	if err != nil {
		return nil, err
	}
	infos, err := e.opt.Agents.Commands(ctx, "")
	if err != nil {
		return nil, err
	}
	var offered []string
	for _, ci := range infos {
		if ci.Name != commands.Finish && ci.Name != commands.AskUser {
			offered = append(offered, ci.Name)
		}
	}
	schema := planSchema(offered)
	msgs := []llm.Message{{Role: "user", Content: planPrompt(task, offered)}}
	var p Plan
	if err := e.generate(ctx, msgs, schema, &p); err != nil {
		return nil, err
	}
	out := &Planned{Plan: p}
	if out.Problems = Observe(p, offered); len(out.Problems) > 0 {
		first, _ := json.Marshal(p)
		msgs = append(msgs,
			llm.Message{Role: "assistant", Content: string(first)},
			llm.Message{Role: "user", Content: "An observer checked the roles and the plan and found these problems:\n- " +
				strings.Join(out.Problems, "\n- ") + "\nRevise them and reply with the whole corrected JSON object."})
		var revised Plan
		if err := e.generate(ctx, msgs, schema, &revised); err != nil {
			return nil, err
		}
		out.Plan, out.Revised = revised, true
		if left := Observe(revised, offered); len(left) > 0 {
			return nil, api.Errorf(api.ErrConflict, "the model's plan still has problems after one revision: %s", strings.Join(left, "; "))
		}
	}
	out.Workflow = planWorkflow(task, out.Plan)
	if _, err := Parse("planned.toml", []byte(out.Workflow)); err != nil {
		return nil, fmt.Errorf("team: the planned workflow does not parse (a bug): %w", err)
	}
	return out, nil
}

func (e *Engine) generate(ctx context.Context, msgs []llm.Message, schema *commands.Schema, out any) error {
	_, err := llm.Generate(ctx, e.opt.LLM, e.request(ctx, msgs, 2048), schema, out)
	var inv *llm.InvalidReplyError
	if errors.As(err, &inv) {
		return api.Errorf(api.ErrConflict, "the model gave no valid plan: %s", strings.Join(inv.Problems, "; "))
	}
	if err != nil {
		return fmt.Errorf("team: planning: %w", err)
	}
	return nil
}

func planPrompt(task string, offered []string) string {
	var b strings.Builder
	b.WriteString("You plan the work of a small team of AI roles for this task:\n\n" + task + "\n\n")
	b.WriteString("Choose 2 to 6 roles. Take roles from this library when they fit, or create new ones with a name, a one-line description, a prompt and the commands they need:\n")
	for _, r := range Library {
		fmt.Fprintf(&b, "- %s: %s", r.Name, r.Description)
		if len(r.Commands) > 0 {
			fmt.Fprintf(&b, " (commands: %s)", strings.Join(r.Commands, ", "))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "Commands roles may use: %s. Roles that only talk need none.\n\n", strings.Join(offered, ", "))
	b.WriteString("Then write a numbered plan of 1 to 8 steps. In each step one role instructs another; the step's result goes to a variable named by output, which later steps can use. ")
	b.WriteString("Include a summarizing role, and let the last step involve it to give the final answer.\n\nReply with one JSON object.")
	return b.String()
}

// planWorkflow writes a plan as a workflow file: the roles, one phase per step (each
// prompt naming the earlier steps' results), and one state that runs them in order.
func planWorkflow(task string, p Plan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Planned by agentd for the task: %s\n# Read it, edit it, then: agentctl team run FILE TASK\n\n", oneLineText(task, 200))
	fmt.Fprintf(&b, "name = %s\ndescription = %s\nroot = \"work\"\nmax_turns = %d\n", tomlString("planned"), tomlString(oneLineText(task, 200)), len(p.Steps)*8)
	for _, r := range p.Roles {
		fmt.Fprintf(&b, "\n[roles.%s]\ndescription = %s\n", r.Name, tomlString(literal(r.Description)))
		if strings.TrimSpace(r.Prompt) != "" {
			fmt.Fprintf(&b, "prompt = %s\n", tomlString(literal(r.Prompt)))
		}
		if len(r.Commands) > 0 {
			fmt.Fprintf(&b, "commands = %s\n", tomlList(r.Commands))
		}
	}
	var phases, earlier []string
	for i, s := range p.Steps {
		name := fmt.Sprintf("step%d", i+1)
		phases = append(phases, name)
		prompt := fmt.Sprintf("Step %d of the plan for {{task}}: %s", i+1, literal(s.Step))
		if len(earlier) > 0 {
			prompt += "\nResults so far:"
			for _, o := range earlier {
				prompt += fmt.Sprintf("\n- %s: {{%s}}", o, o)
			}
		}
		prompt += fmt.Sprintf("\nEnd with a line starting with <INFO> and the step's result (%s).", s.Output)
		fmt.Fprintf(&b, "\n[phases.%s]\ninstructor = %s\nassistant = %s\nprompt = %s\nstore = %s\nmax_turns = 6\nreflect = true\n",
			name, tomlString(s.Instructor), tomlString(s.Assistant), tomlString(prompt), tomlString(s.Output))
		earlier = append(earlier, s.Output)
	}
	fmt.Fprintf(&b, "\n[states.work]\nprompt = %s\nphases = %s\nnext = [\"end\"]\n", tomlString("The team works through the plan."), tomlList(phases))
	return b.String()
}

// tomlString quotes s as a TOML basic string (JSON's escapes are TOML's).
func tomlString(s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSpace(buf.String())
}

func tomlList(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = tomlString(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func oneLineText(s string, n int) string {
	return display.Cut(strings.Join(strings.Fields(s), " "), n, display.Ellipsis)
}

// literal keeps the model's text from reading as a {{placeholder}}.
func literal(s string) string { return strings.ReplaceAll(s, "{{", "{ {") }
