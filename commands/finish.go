package commands

import (
	"context"
	"encoding/json"
)

// finish ends the run; the agent loop stops when it succeeds and reports its reason.
type finish struct{}

type finishArgs struct {
	Reason string `json:"reason" desc:"summary of the outcome" max:"300"`
}

var finishSpec = Spec{
	Name:        Finish,
	Description: "End the task: done, or impossible",
	Params:      FromStruct(finishArgs{}),
	Class:       ClassMessage,
	Idempotent:  true,
}

func init() { Register(finish{}) }

func (finish) Spec() Spec { return finishSpec }

func (finish) Execute(_ context.Context, _ Env, raw json.RawMessage) (string, error) {
	var a finishArgs
	if err := DecodeArgs(Finish, raw, &a); err != nil {
		return "", err
	}
	if a.Reason == "" {
		return "finished", nil
	}
	return a.Reason, nil
}
