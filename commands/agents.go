package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// The sub-agent commands (AutoGPT 0.2's): an agent delegates a sub-task to a helper agent
// hosted by the same daemon. They are not in DefaultNames: config enables them by listing
// them in [agent] commands.
const (
	StartAgent   = "start_agent"
	MessageAgent = "message_agent"
	ListAgents   = "list_agents"
	DeleteAgent  = "delete_agent"
)

// HelpersFolder is the folder of a workspace that holds its helpers' workspaces,
// <workspace>/agents/<key>. The agent's own commands see it read-only, and a change
// applied to the agent's workspace leaves it out: each helper owns its own.
const HelpersFolder = "agents"

// Helpers is the running agent's helper agents as the sub-agent commands reach them. The
// daemon binds one to each execution; Env.Helpers is nil where there is none.
type Helpers interface {
	// Start creates the helper key with its task and starts its run; the command's
	// result is the run's end, delivered later.
	Start(ctx context.Context, key, task, prompt string) error
	// Message gives the idle helper key a follow-up task; the result comes as for Start.
	Message(ctx context.Context, key, message string) error
	// List describes the agent's helpers, one line each.
	List(ctx context.Context) ([]string, error)
	// Delete stops and removes the helper key and its own helpers.
	Delete(ctx context.Context, key string) error
}

// ErrAwaiting is what a command returns once it has handed its work to someone who
// answers later (a helper agent): the agent loop leaves the proposal started, and the
// daemon records the result when it comes. It is not a failure.
var ErrAwaiting = errors.New("the result comes later")

// ErrNoHelpers is what the sub-agent commands fail with where the daemon binds no Helpers.
var ErrNoHelpers = errors.New("helper agents are not available here")

type startAgentArgs struct {
	Name   string `json:"name" desc:"lowercase-with-dashes" max:"30"`
	Task   string `json:"task" desc:"its role in a few words" max:"200"`
	Prompt string `json:"prompt" desc:"what to do and report" max:"1000"`
}

type messageAgentArgs struct {
	Key     string `json:"key" desc:"helper name" max:"30"`
	Message string `json:"message" desc:"its next task" max:"1000"`
}

type deleteAgentArgs struct {
	Key string `json:"key" desc:"helper name" max:"30"`
}

var (
	startAgentSpec = Spec{
		Name: StartAgent, Description: "Delegate a sub-task to a new helper agent; the result is its report",
		Params: FromStruct(startAgentArgs{}), Class: ClassExecute, Subject: "name",
	}
	messageAgentSpec = Spec{
		Name: MessageAgent, Description: "Give an idle helper a new task; the result is its report",
		Params: FromStruct(messageAgentArgs{}), Class: ClassExecute, Subject: "key",
	}
	listAgentsSpec = Spec{
		Name: ListAgents, Description: "List your helper agents and their states",
		Params: Object(), Class: ClassRead, Idempotent: true,
	}
	deleteAgentSpec = Spec{
		Name: DeleteAgent, Description: "Stop and remove a helper agent",
		Params: FromStruct(deleteAgentArgs{}), Class: ClassExecute, Subject: "key", Idempotent: true,
	}
)

func startAgent(ctx context.Context, env Env, a startAgentArgs) (string, error) {
	if env.Helpers == nil {
		return "", ErrNoHelpers
	}
	a.Task, a.Prompt = strings.TrimSpace(a.Task), strings.TrimSpace(a.Prompt)
	if a.Prompt == "" {
		a.Prompt = a.Task
	}
	if a.Prompt == "" {
		return "", fmt.Errorf("%s: empty task and prompt: say what the helper must do", StartAgent)
	}
	if err := env.Helpers.Start(ctx, strings.TrimSpace(a.Name), a.Task, a.Prompt); err != nil {
		return "", err
	}
	return "", ErrAwaiting
}

func messageAgent(ctx context.Context, env Env, a messageAgentArgs) (string, error) {
	if env.Helpers == nil {
		return "", ErrNoHelpers
	}
	if strings.TrimSpace(a.Message) == "" {
		return "", fmt.Errorf("%s: empty message: give the helper its next task", MessageAgent)
	}
	if err := env.Helpers.Message(ctx, strings.TrimSpace(a.Key), strings.TrimSpace(a.Message)); err != nil {
		return "", err
	}
	return "", ErrAwaiting
}

type listAgents struct{}

func (listAgents) Spec() Spec { return listAgentsSpec }

func (listAgents) Execute(ctx context.Context, env Env, _ json.RawMessage) (string, error) {
	if env.Helpers == nil {
		return "", ErrNoHelpers
	}
	lines, err := env.Helpers.List(ctx)
	if err != nil {
		return "", err
	}
	if len(lines) == 0 {
		return "you have no helper agents; start one with start_agent", nil
	}
	return fmt.Sprintf("%d helper agents:\n%s", len(lines), strings.Join(lines, "\n")), nil
}

func deleteAgent(ctx context.Context, env Env, a deleteAgentArgs) (string, error) {
	if env.Helpers == nil {
		return "", ErrNoHelpers
	}
	key := strings.TrimSpace(a.Key)
	if err := env.Helpers.Delete(ctx, key); err != nil {
		return "", err
	}
	return "deleted helper " + key, nil
}

func init() {
	Register(&funcCommand[startAgentArgs]{startAgentSpec, startAgent})
	Register(&funcCommand[messageAgentArgs]{messageAgentSpec, messageAgent})
	Register(listAgents{})
	Register(&funcCommand[deleteAgentArgs]{deleteAgentSpec, deleteAgent})
}
