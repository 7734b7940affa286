package team

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/llm"
	"github.com/agentd/agentd/daemon/run"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/display"
)

// Bounds on what a role sees and says, so prompts stay within small models' contexts.
const (
	historyTurns = 12   // most recent messages of the phase a role sees
	messageChars = 2000 // a message longer than this is cut in prompts
	replyTokens  = 512  // a chat role's reply
)

// taskBytes bounds an agent role's turn task: under the supervisor's cap, with room to spare.
const taskBytes = api.MaxTextBytes - 100

// system is a role's system prompt for a turn: who it is, the state's and the phase's
// prompts, and the CAMEL rules of its side.
func system(r *store.TeamRun, wf *Workflow, st *State, cur *Phase, role *Role, other string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s, in a team following the workflow %q.\n", run.Identity(role.Name, role.Description), wf.Name)
	if p := strings.TrimSpace(Render(role.Prompt, r.Vars)); p != "" {
		b.WriteString(p + "\n")
	}
	if p := strings.TrimSpace(Render(st.Prompt, r.Vars)); p != "" {
		b.WriteString("\n" + p + "\n")
	}
	fmt.Fprintf(&b, "\nPhase %s: %s\n\n", cur.Name, strings.TrimSpace(Render(cur.Prompt, r.Vars)))
	if role.Name == cur.Instructor {
		fmt.Fprintf(&b, "You instruct %s, one instruction at a time, each starting with \"Instruction:\". Never do the work yourself.", other)
	} else {
		fmt.Fprintf(&b, "%s instructs you. Answer each instruction with a solution starting with \"Solution:\" that does what it asks. Never give instructions.", other)
	}
	b.WriteString(" When the phase's goal is reached, write a line starting with <INFO> followed by the conclusion, and nothing after it.")
	return b.String()
}

// chatTurn asks the model for a chat role's next message.
func (e *Engine) chatTurn(ctx context.Context, r *store.TeamRun, wf *Workflow, st *State, cur *Phase, role *Role, other string, hist []api.TeamTurn) (string, error) {
	ctx = batchWork(ctx, r)
	msgs := []llm.Message{{Role: "system", Content: system(r, wf, st, cur, role, other)}}
	if len(hist) > historyTurns {
		hist = hist[len(hist)-historyTurns:]
	}
	for _, h := range hist {
		who := "user"
		if h.Role == role.Name {
			who = "assistant"
		}
		msgs = append(msgs, llm.Message{Role: who, Content: display.Cut(h.Text, messageChars, display.Ellipsis)})
	}
	if len(hist) == 0 {
		msgs = append(msgs, llm.Message{Role: "user", Content: "Task: " + r.Vars["task"] + "\nBegin: give your first instruction."})
	}
	res, err := e.opt.LLM.Chat(ctx, e.request(ctx, msgs, replyTokens))
	if err != nil {
		return "", modelErr(err)
	}
	return strings.TrimSpace(res.Content), nil
}

// modelErr marks an error the loop retries (the loop checks its own context first, so a
// stop or a shutdown is not retried).
func modelErr(err error) error { return &modelError{err: err} }

// agentTask is a command role's turn, as its agent's task: the role, the phase, the
// conversation so far, and how to reply.
func agentTask(r *store.TeamRun, wf *Workflow, st *State, cur *Phase, role *Role, other string, hist []api.TeamTurn) string {
	head := system(r, wf, st, cur, role, other) +
		fmt.Sprintf("\n\nUse your commands (%s) for the work. Then call finish with your reply to %s as its reason (at most 300 characters).",
			strings.Join(role.Commands, ", "), other)
	var conv []string
	for _, h := range hist {
		conv = append(conv, fmt.Sprintf("[%s] %s", h.Role, display.Cut(h.Text, messageChars, display.Ellipsis)))
	}
	if len(conv) == 0 {
		conv = []string{"(nothing yet: you speak first)"}
	}
	// Keep the conversation's end when it is too long.
	for len(conv) > 1 && len(head)+len(strings.Join(conv, "\n"))+32 > taskBytes {
		conv = conv[1:]
	}
	return display.Cut(head+"\n\nConversation so far:\n"+strings.Join(conv, "\n"), taskBytes, display.Ellipsis)
}

// agentRunOptions bound a role's turn: its step budget and its allow patterns. finish
// is always allowed: it is the role's reply to the other role, a message with no effect,
// which a person would otherwise approve on every turn. Every other command is decided
// as the role's allow patterns and the daemon's policy say.
func agentRunOptions(r *store.TeamRun, role *Role) run.Options {
	allow := append([]string{"finish"}, role.Allow...)
	return run.Options{Budget: run.Budget{MaxSteps: role.MaxSteps}, Allow: allow, By: "team run " + r.ID}
}

// choice is the model's pick of the next state.
type choice struct {
	Next   string `json:"next"`
	Reason string `json:"reason"`
}

// choose asks the model to pick the next state among options, with the choice
// constrained to their names by the reply's schema.
func (e *Engine) choose(ctx context.Context, r *store.TeamRun, wf *Workflow, st *State, options []string) (string, string, error) {
	ctx = batchWork(ctx, r)
	schema := commands.Object(
		commands.Prop{Name: "next", Schema: &commands.Schema{Type: "string", Enum: options, Description: "the next state"}},
		commands.Prop{Name: "reason", Schema: commands.String("why, in one sentence", 200)},
	)
	var b strings.Builder
	fmt.Fprintf(&b, "You route a team following the workflow %q. It has finished state %s", wf.Name, st.Name)
	if p := strings.TrimSpace(Render(st.Prompt, r.Vars)); p != "" {
		fmt.Fprintf(&b, " (%s)", p)
	}
	b.WriteString(". Pick the state it goes to next.\n\nVariables:\n")
	for _, k := range sortedKeys(r.Vars) {
		fmt.Fprintf(&b, "- %s: %s\n", k, display.Cut(strings.ReplaceAll(r.Vars[k], "\n", " "), 300, display.Ellipsis))
	}
	b.WriteString("\nNext states:\n")
	for _, o := range options {
		desc := "end the run"
		if s := wf.States[o]; s != nil {
			desc = display.Cut(strings.TrimSpace(Render(s.Prompt, r.Vars)), 200, display.Ellipsis)
		}
		fmt.Fprintf(&b, "- %s: %s\n", o, desc)
	}
	b.WriteString("\nReply with one JSON object.")
	var ch choice
	_, err := llm.Generate(ctx, e.opt.LLM, e.request(ctx, []llm.Message{{Role: "user", Content: b.String()}}, 256), schema, &ch)
	var inv *llm.InvalidReplyError
	if errors.As(err, &inv) {
		return options[0], "the model gave no valid choice; took the first next state", nil
	}
	if err != nil {
		return "", "", modelErr(err)
	}
	return ch.Next, "the model chose it: " + cmp.Or(strings.TrimSpace(ch.Reason), "chosen by the model"), nil
}

// reflection is the model's conclusion of a phase that ended without <INFO>.
type reflection struct {
	Conclusion string `json:"conclusion"`
}

// reflect asks the model for a phase's conclusion from its transcript.
func (e *Engine) reflect(ctx context.Context, r *store.TeamRun, wf *Workflow, st *State, cur *Phase, hist []api.TeamTurn) (string, error) {
	ctx = batchWork(ctx, r)
	schema := commands.Object(commands.Prop{Name: "conclusion", Schema: commands.String("the phase's conclusion, as its result", 1000)})
	var b strings.Builder
	fmt.Fprintf(&b, "Two roles of a team worked on this goal: %s\nTheir conversation ended without a conclusion. Read it and write the conclusion it reached (the value of %q).\n\n",
		strings.TrimSpace(Render(cur.Prompt, r.Vars)), cur.Store)
	if len(hist) > historyTurns {
		hist = hist[len(hist)-historyTurns:]
	}
	for _, h := range hist {
		fmt.Fprintf(&b, "[%s] %s\n", h.Role, display.Cut(h.Text, messageChars, display.Ellipsis))
	}
	b.WriteString("\nReply with one JSON object.")
	var out reflection
	_, err := llm.Generate(ctx, e.opt.LLM, e.request(ctx, []llm.Message{{Role: "user", Content: b.String()}}, replyTokens), schema, &out)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out.Conclusion), nil
}
