package api

import (
	"errors"
	"strings"
)

// DecisionHelp says what each answer at a decision prompt does. Every front end shows
// this text (agentctl follow, the chat threads), so the words are explained once.
const DecisionHelp = `  y        run it
  y -N     run it and the next N-1 proposals of this run without asking (a grant)
  y!       run it, and from now on run this exact command with these exact args
           unasked (a grant; other args ask again, and so does a shell or Python line
           once another step changed the workspace, or may have; agentctl policy
           widens or revokes it)
  n        don't run it; the run ends and the agent waits for a new task
  n!       like n, and refuse this exact command from now on
  TEXT     anything else is feedback: the command does not run, the agent reads TEXT
  ?        this help (or help, h); the proposal keeps waiting`

// AnswerHelp says how to answer an agent's question (ask_user). There the whole text is
// the answer, even "help" or "h"; only a lone "?" shows this instead.
const AnswerHelp = `The agent asked a question: what you send is its answer, word for word, and the
agent goes on with it. Write the answer in words ("?" alone shows this help).`

// ErrHelp is what ParseDecision returns for "?", "help" or "h": the person asked what
// the answers are. Its text is DecisionHelp: show it, and leave the proposal waiting.
var ErrHelp = errors.New("the proposal still waits; answer with one of:\n" + DecisionHelp)

// IsHelp reports whether text asks for the help at a decision prompt: "?", "help" or
// "h", in any case, spaces around ignored. Longer text ("help me with X", "?? why") is
// feedback.
func IsHelp(text string) bool {
	switch strings.ToLower(strings.TrimSpace(text)) {
	case "?", "help", "h":
		return true
	}
	return false
}

// IsAnswerHelp reports whether text, typed at a question, asks how to answer rather than
// answering: a lone "?" (a question may well be answered "help" or "h").
func IsAnswerHelp(text string) bool { return strings.TrimSpace(text) == "?" }
