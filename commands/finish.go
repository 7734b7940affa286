package commands

import (
	"context"
)

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

func init() { Register(&funcCommand[finishArgs]{finishSpec, finish}) }

// finish ends the run; the agent loop stops when it succeeds and reports its reason.
func finish(_ context.Context, _ Env, a finishArgs) (string, error) {
	if a.Reason == "" {
		return "finished", nil
	}
	return a.Reason, nil
}
