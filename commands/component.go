package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// An agent is assembled from components, each implementing one or more of six protocols
// (AutoGPT forge's): DirectiveProvider, CommandProvider and MessageProvider build the
// prompt; AfterParse sees the model's reply; AfterExecute and ExecutionFailure see a
// command's outcome. A Pipeline calls them; a component that errors or panics is reported
// and skipped for that step, so it can never take the agent or the daemon down.

// Component is one part of an agent. Its name is how config enables, disables and orders it.
type Component interface {
	Name() string
}

// Directives are the prompt's constraints, resources and best practices.
type Directives struct {
	Constraints   []string `json:"constraints,omitempty"`
	Resources     []string `json:"resources,omitempty"`
	BestPractices []string `json:"best_practices,omitempty"`
}

// Step is what components see of the agent and of the step being built or run.
type Step struct {
	AgentID     string
	AgentName   string
	Description string
	Task        string
	Goals       []string
	// Directives are the agent's own (from its profile); the base ones come from config.
	Directives Directives
	Workspace  string
	RunID      string
	// Number is the step's number in the agent's life: 1 for its first proposal.
	Number int
	Now    time.Time
	// State is the agent's private key-value state, kept in the daemon's database.
	State State
	// Budget is how many prompt characters a Budgeted MessageProvider may use; the
	// pipeline sets it before each such call.
	Budget int
	// ContextTokens is the model's context length (num_ctx) the step's prompt is built
	// for; 0 when not known. Budgeted providers size their share by it.
	ContextTokens int
}

// State is an agent's private, durable key-value state: what a component (such as the
// open files of the context component) must remember between steps and restarts.
type State interface {
	Get(ctx context.Context, key string) ([]byte, error) // nil, nil when unset
	Put(ctx context.Context, key string, value []byte) error
}

// DirectiveProvider adds constraints, resources and best practices. Order-independent.
type DirectiveProvider interface {
	Component
	Directives(ctx context.Context, s *Step) (Directives, error)
}

// CommandProvider offers the commands the agent may use at this step. Order-independent
// (the prompt lists them in the pipeline's order).
type CommandProvider interface {
	Component
	Commands(ctx context.Context, s *Step) ([]Command, error)
}

// MessageProvider adds messages to the prompt, between the task and the call to action,
// in the pipeline's order.
type MessageProvider interface {
	Component
	Messages(ctx context.Context, s *Step) ([]string, error)
}

// Budgeted marks a MessageProvider whose messages fill what the rest of the prompt leaves
// (history, memories). The pipeline calls it after every unbudgeted provider, with
// Step.Budget set to the characters still free; its messages still appear in its place.
type Budgeted interface {
	MessageProvider
	Budgeted()
}

// AfterParse sees each accepted reply before it is persisted and may change it; a change
// that makes the reply invalid is undone and reported. Ordered.
type AfterParse interface {
	Component
	AfterParse(ctx context.Context, s *Step, r *Reply) error
}

// Outcome is a command's execution as the ordered execution hooks see it. They may change
// Output (what the model is shown) but not the rest.
type Outcome struct {
	Command string
	Args    json.RawMessage
	Output  string
	Err     error // nil when the command succeeded
}

// AfterExecute sees each successful execution. Ordered.
type AfterExecute interface {
	Component
	AfterExecute(ctx context.Context, s *Step, o *Outcome) error
}

// ExecutionFailure sees each failed execution. Ordered.
type ExecutionFailure interface {
	Component
	ExecutionFailure(ctx context.Context, s *Step, o *Outcome) error
}

// hookTimeout bounds one component call, so a stuck component costs a step, not the agent.
const hookTimeout = 30 * time.Second

// Report receives a component's failure: the step it failed in, the component, the
// protocol method and the error.
type Report func(s *Step, component, hook string, err error)

// Pipeline is an agent's components in their declared order.
type Pipeline struct {
	comps  []Component
	report Report
}

// NewPipeline returns the pipeline of comps, in that order. Two components with one name
// are an error: config could not tell them apart.
func NewPipeline(comps []Component, report Report) (*Pipeline, error) {
	seen := map[string]bool{}
	for _, c := range comps {
		n := c.Name()
		if n == "" {
			return nil, fmt.Errorf("commands: a component (%T) has no name", c)
		}
		if seen[n] {
			return nil, fmt.Errorf("commands: two components are named %q", n)
		}
		seen[n] = true
	}
	if report == nil {
		report = func(*Step, string, string, error) {}
	}
	return &Pipeline{comps: comps, report: report}, nil
}

// Names lists the components in order.
func (p *Pipeline) Names() []string {
	out := make([]string, len(p.comps))
	for i, c := range p.comps {
		out[i] = c.Name()
	}
	return out
}

// Has reports whether the pipeline has the named component.
func (p *Pipeline) Has(name string) bool {
	return slices.ContainsFunc(p.comps, func(c Component) bool { return c.Name() == name })
}

// Only returns the pipeline of the one named component (to ask who offers what).
func (p *Pipeline) Only(name string) *Pipeline {
	out := &Pipeline{report: p.report}
	for _, c := range p.comps {
		if c.Name() == name {
			out.comps = append(out.comps, c)
		}
	}
	return out
}

// Without returns the pipeline minus the named components (an agent's disabled ones).
func (p *Pipeline) Without(names []string) *Pipeline {
	if len(names) == 0 {
		return p
	}
	out := &Pipeline{report: p.report}
	for _, c := range p.comps {
		if !slices.Contains(names, c.Name()) {
			out.comps = append(out.comps, c)
		}
	}
	return out
}

// guard runs one component call with a timeout, turning an error or a panic into a
// report; it says whether the call succeeded.
func (p *Pipeline) guard(ctx context.Context, s *Step, c Component, hook string, f func(context.Context) error) (ok bool) {
	ctx, cancel := context.WithTimeout(ctx, hookTimeout)
	defer cancel()
	defer func() {
		if v := recover(); v != nil {
			p.report(s, c.Name(), hook, fmt.Errorf("%w: %v", ErrPanic, v))
			ok = false
		}
	}()
	if err := f(ctx); err != nil {
		p.report(s, c.Name(), hook, err)
		return false
	}
	return true
}

// Directives merges every provider's directives, in order.
func (p *Pipeline) Directives(ctx context.Context, s *Step) Directives {
	var out Directives
	for _, c := range p.comps {
		dp, ok := c.(DirectiveProvider)
		if !ok {
			continue
		}
		var d Directives
		if p.guard(ctx, s, c, "Directives", func(ctx context.Context) (err error) {
			d, err = dp.Directives(ctx, s)
			return err
		}) {
			out.Constraints = append(out.Constraints, d.Constraints...)
			out.Resources = append(out.Resources, d.Resources...)
			out.BestPractices = append(out.BestPractices, d.BestPractices...)
		}
	}
	return out
}

// Commands collects every provider's commands, in order. A name offered twice keeps its
// first provider's command; the second is reported.
func (p *Pipeline) Commands(ctx context.Context, s *Step) Set {
	var out Set
	seen := map[string]string{}
	for _, c := range p.comps {
		cp, ok := c.(CommandProvider)
		if !ok {
			continue
		}
		var cmds []Command
		if !p.guard(ctx, s, c, "Commands", func(ctx context.Context) (err error) {
			cmds, err = cp.Commands(ctx, s)
			return err
		}) {
			continue
		}
		for _, cmd := range cmds {
			n := cmd.Spec().Name
			if by, dup := seen[n]; dup {
				p.report(s, c.Name(), "Commands", fmt.Errorf("command %s is already offered by %s; ignored", n, by))
				continue
			}
			seen[n] = c.Name()
			out = append(out, cmd)
		}
	}
	return out
}

// Messages collects every provider's messages in order. budget is the characters the
// prompt has left for them: unbudgeted providers are asked first and use it up as they
// must; Budgeted ones then share what remains, in order.
func (p *Pipeline) Messages(ctx context.Context, s *Step, budget int) []string {
	per := make([][]string, len(p.comps))
	ask := func(i int, mp MessageProvider) {
		if !p.guard(ctx, s, mp, "Messages", func(ctx context.Context) (err error) {
			per[i], err = mp.Messages(ctx, s)
			return err
		}) {
			per[i] = nil
		}
		for _, m := range per[i] {
			budget -= len(m)
		}
	}
	for i, c := range p.comps {
		if mp, ok := c.(MessageProvider); ok {
			if _, b := c.(Budgeted); !b {
				ask(i, mp)
			}
		}
	}
	for i, c := range p.comps {
		if b, ok := c.(Budgeted); ok {
			s.Budget = max(0, budget)
			ask(i, b)
		}
	}
	s.Budget = 0
	var out []string
	for _, ms := range per {
		for _, m := range ms {
			if m != "" {
				out = append(out, m)
			}
		}
	}
	return out
}

// AfterParse passes the reply through every AfterParse component in order. valid checks
// a changed reply; a component whose change fails it, errors or panics is undone.
func (p *Pipeline) AfterParse(ctx context.Context, s *Step, r *Reply, valid func(*Reply) error) {
	for _, c := range p.comps {
		ap, ok := c.(AfterParse)
		if !ok {
			continue
		}
		saved := *r
		saved.Command.Args = slices.Clone(r.Command.Args)
		if !p.guard(ctx, s, c, "AfterParse", func(ctx context.Context) error {
			if err := ap.AfterParse(ctx, s, r); err != nil {
				return err
			}
			if err := valid(r); err != nil {
				return fmt.Errorf("its change made the reply invalid, undone: %w", err)
			}
			return nil
		}) {
			*r = saved
		}
	}
}

// Executed passes an outcome through the AfterExecute components (success) or the
// ExecutionFailure ones (failure), in order. Only Output may change; a component that
// fails has its change undone.
func (p *Pipeline) Executed(ctx context.Context, s *Step, o *Outcome) {
	for _, c := range p.comps {
		var f func(context.Context) error
		hook := "AfterExecute"
		if o.Err == nil {
			if ae, ok := c.(AfterExecute); ok {
				f = func(ctx context.Context) error { return ae.AfterExecute(ctx, s, o) }
			}
		} else if ef, ok := c.(ExecutionFailure); ok {
			hook = "ExecutionFailure"
			f = func(ctx context.Context) error { return ef.ExecutionFailure(ctx, s, o) }
		}
		if f == nil {
			continue
		}
		saved := *o
		if !p.guard(ctx, s, c, hook, f) {
			*o = saved
		}
		o.Command, o.Args, o.Err = saved.Command, saved.Args, saved.Err
	}
}
