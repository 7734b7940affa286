// Package commands holds what an agent can do: the command registry, the built-in commands
// (finish, ask_user, workspace files) and the JSON Schemas the model's replies are held to.
//
// The daemon asks the registry which commands an agent may use, renders them into the prompt,
// builds the reply schema from their params (see ReplySchema) and runs the one the person
// approved through Execute. Every execution gets a timeout and an output cap and recovers
// from panics, so a command can fail but never take the agent or the daemon down.
package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Class says what kind of side effect a command has; policies key on it.
type Class string

// The side-effect classes.
const (
	ClassRead           Class = "read"
	ClassWriteWorkspace Class = "write_workspace"
	ClassNetwork        Class = "network"
	ClassExecute        Class = "execute"
	ClassMessage        Class = "message"
)

// Names of the commands the agent cycle treats specially.
const (
	Finish  = "finish"
	AskUser = "ask_user"
)

// DefaultNames are the built-in commands an agent gets when its config names none, in the
// order the prompt lists them. Treat it as read-only; copy it before changing.
var DefaultNames = []string{"list_folder", "read_file", "write_file", AskUser, Finish}

// Spec describes a command to the model, the policy and the person approving it.
type Spec struct {
	Name        string  // snake_case, unique in the registry
	Description string  // one line, shown in the prompt
	Params      *Schema // an object schema; its properties are the command's arguments
	Class       Class
	// Idempotent commands may be re-run automatically when a crash interrupted them.
	Idempotent bool
	// Subject names the string param that permission patterns such as
	// `execute_shell(git status*)` match against; "" matches the values of all string
	// args joined by spaces, in param order.
	Subject string
}

// Env is what a command may touch while it runs.
type Env struct {
	// Workspace is the agent's workspace directory; file commands may not leave it.
	Workspace string
	// AgentID names the agent running the command.
	AgentID string
	// State is the agent's durable private state; nil where the caller keeps none.
	State State
	// Memory is the agent's long-term memory (memory_add, memory_search); nil without one.
	Memory Memory
	// Helpers are the agent's helper agents (the sub-agent commands); nil without.
	Helpers Helpers
	// Profile bounds the programs an execute command starts, by who approved it.
	Profile Profile
	// SeenAt, when set, is the path a sandboxed program sees Workspace at: an effect
	// preview runs on a copy of the workspace bound at the workspace's own path, so that
	// nothing the command reads ($PWD, paths it prints) tells it runs ahead.
	SeenAt string
}

// Command is one thing an agent can do.
//
// Lifecycle: registered once at init (Register panics on a duplicate name); Spec is read
// whenever a prompt or schema is built; Execute runs once per approved proposal, with args
// already validated against Spec().Params, under a context carrying the execution timeout.
type Command interface {
	Spec() Spec
	Execute(ctx context.Context, env Env, args json.RawMessage) (string, error)
}

var (
	regMu    sync.RWMutex
	registry = map[string]Command{}
)

// Register adds a command to the global registry. It panics on a duplicate or empty name,
// or a Params schema that is not an object: both are programming errors found at init.
func Register(c Command) {
	s := c.Spec()
	if s.Name == "" {
		panic("commands: Register with an empty name")
	}
	if s.Params == nil || s.Params.Type != "object" {
		panic(fmt.Sprintf("commands: %s: Params must be an object schema", s.Name))
	}
	if err := s.Params.CheckGrammarLimits(); err != nil {
		panic(fmt.Sprintf("commands: %s: %v", s.Name, err))
	}
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := registry[s.Name]; dup {
		panic(fmt.Sprintf("commands: %s registered twice", s.Name))
	}
	registry[s.Name] = c
}

// funcCommand is a command that decodes its args into an A and hands them to run, for
// commands that keep no state of their own. It is used by pointer: a func field would make
// two of them panic when compared as Commands.
type funcCommand[A any] struct {
	spec Spec
	run  func(ctx context.Context, env Env, a A) (string, error)
}

func (c funcCommand[A]) Spec() Spec { return c.spec }

func (c funcCommand[A]) Execute(ctx context.Context, env Env, raw json.RawMessage) (string, error) {
	var a A
	if err := DecodeArgs(c.spec.Name, raw, &a); err != nil {
		return "", err
	}
	return c.run(ctx, env, a)
}

// Lookup returns the named command.
func Lookup(name string) (Command, bool) {
	regMu.RLock()
	defer regMu.RUnlock()
	c, ok := registry[name]
	return c, ok
}

// All returns every registered command, sorted by name.
func All() []Command {
	regMu.RLock()
	defer regMu.RUnlock()
	return slices.SortedFunc(maps.Values(registry), func(a, b Command) int { return strings.Compare(a.Spec().Name, b.Spec().Name) })
}

// Set is the ordered list of commands one agent may use now.
type Set []Command

// Resolve returns the named commands in the given order; an unknown name is an error.
func Resolve(names []string) (Set, error) {
	var s Set
	for _, n := range names {
		c, ok := Lookup(n)
		if !ok {
			return nil, fmt.Errorf("commands: unknown command %q", n)
		}
		s = append(s, c)
	}
	return s, nil
}

// Get returns the command in the set with that name.
func (s Set) Get(name string) (Command, bool) {
	i := slices.IndexFunc(s, func(c Command) bool { return c.Spec().Name == name })
	if i < 0 {
		return nil, false
	}
	return s[i], true
}

// Names lists the set's command names in order.
func (s Set) Names() []string {
	n := make([]string, len(s))
	for i, c := range s {
		n[i] = c.Spec().Name
	}
	return n
}

// Limits bound one execution.
type Limits struct {
	Timeout   time.Duration // default 60s
	OutputCap int           // bytes of result kept; default 16 KiB
}

// ErrPanic marks an execution that panicked; the panic value is in the message.
var ErrPanic = errors.New("command panicked")

// cancelGrace is how long Run waits, once the context ends, for the command to return its
// own error before giving up on it. A stopped sandboxed command returns what it printed and
// what its box's limits did, which takes the kernel a while to kill and reap on a loaded
// machine; a command that ignores its context is still given up on after this.
const cancelGrace = 2 * time.Second

// Run executes c with args under lim: it validates args against the command's params,
// applies the timeout, caps the output and turns a panic into an error.
// The returned error text is written for the model: it says what was wrong and what was expected.
//
// A command that ignores its context is abandoned when the timeout passes (its goroutine
// runs on until it returns), so a stuck command fails the step instead of hanging the agent.
// A command that writes the workspace waits while a bounded git runs in the tree it
// writes (GitRun).
func Run(ctx context.Context, c Command, env Env, args json.RawMessage, lim Limits) (string, error) {
	if lim.Timeout <= 0 {
		lim.Timeout = 60 * time.Second
	}
	if lim.OutputCap <= 0 {
		lim.OutputCap = 16 << 10
	}
	spec := c.Spec()
	if err := CheckArgs(spec, args); err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("%s: not run: %w", spec.Name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()
	end := func() {}
	if spec.Class == ClassWriteWorkspace && env.Workspace != "" {
		var err error
		if end, err = forWrite(ctx, spec, env.Workspace, args); err != nil {
			return "", err
		}
	}

	type result struct {
		out string
		err error
	}
	done := make(chan result, 1) // buffered: an abandoned command must not block forever
	go func() {
		var r result
		// The recover has to live in this goroutine: a panic here would otherwise end the daemon.
		defer func() {
			end() // when the write is done, not when Run gives up on it
			if p := recover(); p != nil {
				r = result{err: fmt.Errorf("%s: %w: %v", spec.Name, ErrPanic, p)}
			}
			done <- r
		}()
		r.out, r.err = c.Execute(ctx, env, args)
	}()

	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		t := time.NewTimer(cancelGrace)
		select {
		case r = <-done:
		case <-t.C:
			r = result{err: ctx.Err()}
		}
		t.Stop()
	}
	if r.err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		r.err = fmt.Errorf("%s: timed out after %s: %w", spec.Name, lim.Timeout, r.err)
	}
	return capOrSave(env, spec.Name, r.out, lim.OutputCap), r.err
}

// capOutput cuts out to at most limit bytes, on a UTF-8 boundary, and says so.
func capOutput(out string, limit int) string {
	if len(out) <= limit {
		return out
	}
	cut := limit
	for cut > 0 && cut > limit-utf8.UTFMax+1 && !utf8.RuneStart(out[cut]) {
		cut--
	}
	return out[:cut] + fmt.Sprintf("\n[output cut at %d of %d bytes]", cut, len(out))
}

// CheckArgs validates raw args against the command's params schema. Nil params take no args.
func CheckArgs(spec Spec, args json.RawMessage) error {
	var v any
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if err := json.Unmarshal(args, &v); err != nil {
		return fmt.Errorf("%s: args are not valid JSON: %v", spec.Name, err)
	}
	params := spec.Params
	if params == nil {
		params = Object()
	}
	if err := params.Validate(v); err != nil {
		msg := err.Error()
		var ve *ValidationError
		if errors.As(err, &ve) {
			msg = strings.Join(ve.Problems, "; ")
		}
		want, _ := json.Marshal(params)
		return fmt.Errorf("%s: bad args: %s; expected params: %s", spec.Name, msg, want)
	}
	return nil
}

// DecodeArgs unmarshals args Run has already checked against the schema into a
// command's args struct (every command in this package and its sub-packages).
func DecodeArgs(name string, raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%s: bad args: %v", name, err)
	}
	return nil
}
