package bots

import (
	"fmt"

	"github.com/agentd/agentd/api"
)

// startHelp answers "?", "help" or "h" where a run would start: it starts none.
const startHelp = "Tell me a task and an agent starts on it in a thread, like: @agentd summarize the notes in my workspace. " +
	"Each command it proposes waits there for you: reply y, y -N, y!, n, n! or feedback (? in the thread shows what each does). " +
	"/agent help lists the commands."

// helpNote is the help a person asked for in a thread where agent a runs, to be told to
// them alone; "" when text asks for none. Where a proposal waits, "?", "help" and "h"
// ask for it (sent on, they would be feedback that drops the proposal); at a question
// only a lone "?" does, since "help" may well be the answer.
func helpNote(a *api.Agent, text string) string {
	switch {
	case a.Question != nil:
		if api.IsAnswerHelp(text) {
			return api.AnswerHelp
		}
		return ""
	case !api.IsHelp(text):
		return ""
	case a.Pending != nil:
		return fmt.Sprintf("Step %d (%s) still waits for your decision: use its buttons, or reply in this thread with one of:\n%s",
			a.Pending.Step, a.Pending.Command, api.DecisionHelp)
	case a.State == api.StateIdle || a.State == api.StateFailed:
		return fmt.Sprintf("Agent %s is %s: nothing waits for a decision. Write a new task in words and it starts its next run.", a.Name, a.State)
	}
	return fmt.Sprintf("Agent %s is %s: nothing waits for a decision yet. When it proposes a command, reply with one of:\n%s", a.Name, a.State, api.DecisionHelp)
}
