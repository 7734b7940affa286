package commands

import (
	"context"
	"encoding/json"
	"errors"
)

// askUser is a question for the person following the agent. The agent loop never executes
// it: it posts the question where the run is followed and waits for the answer.
type askUser struct{}

type askUserArgs struct {
	Question string `json:"question" desc:"one clear question" max:"300"`
}

var askUserSpec = Spec{
	Name:        AskUser,
	Description: "Ask the person a question and wait for the answer",
	Params:      FromStruct(askUserArgs{}),
	Class:       ClassMessage,
	Idempotent:  true,
}

func init() { Register(askUser{}) }

func (askUser) Spec() Spec { return askUserSpec }

// errAskUserExecuted reports a loop that ran ask_user instead of asking the person.
var errAskUserExecuted = errors.New("ask_user: not executable: the agent loop posts the question to the person and returns the answer")

func (askUser) Execute(context.Context, Env, json.RawMessage) (string, error) {
	return "", errAskUserExecuted
}
