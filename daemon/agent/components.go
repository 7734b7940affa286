package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/agent/cycle"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/display"
)

// Component names the supervisor itself provides.
const (
	compDirectives = "directives" // the base directives from config
	compCommands   = "commands"   // the built-in commands config lists
)

// defaultOrder is where the supervisor's own components go; extra components from
// Options.Components go between the command providers and the messages.
func defaultOrder(extra []commands.Component) []string {
	order := []string{compDirectives, "profile", compCommands}
	for _, c := range extra {
		order = append(order, c.Name())
	}
	return append(order, "context", "goal", "memory", "history", "clock")
}

// buildPipelines assembles l's default pipeline and each overridden agent's.
func (s *Supervisor) buildPipelines(l *live) error {
	builtin, err := builtinCommands(l.Commands)
	if err != nil {
		return err
	}
	if err := CheckComponents(s.opt.Components, l.DisabledComponents); err != nil {
		return err
	}
	base, err := s.assemble(l, builtin)
	if err != nil {
		return err
	}
	l.pipeline = base.Without(l.DisabledComponents)
	l.agentPipelines = map[string]*commands.Pipeline{}
	for name, o := range l.Agents {
		if err := CheckComponents(s.opt.Components, o.DisabledComponents); err != nil {
			return fmt.Errorf("agent %s: %w", name, err)
		}
		p := base
		if len(o.Commands) > 0 {
			set, err := builtinCommands(o.Commands)
			if err != nil {
				return fmt.Errorf("agent %s: %w", name, err)
			}
			if p, err = s.assemble(l, set); err != nil {
				return err
			}
		}
		l.agentPipelines[name] = p.Without(append(slices.Clone(l.DisabledComponents), o.DisabledComponents...))
	}
	return nil
}

// ComponentCommands are the commands a component offers on its own, by name, with
// that component: listing one in [agent] commands is allowed (people expect to) but
// changes nothing, since the component offers it while it is on. open_file and
// open_folder come together: the context component keeps both kinds of item, under
// one budget, and closes either with close_context_item.
var ComponentCommands = map[string]string{
	"web_search": "web", "read_webpage": "web",
	"execute_shell": "shell", "execute_python_file": "shell",
	"open_file": "context", "open_folder": "context", "close_context_item": "context",
}

// builtinCommands resolves a built-in command list, which must let the agent finish and ask.
// Names a component offers (ComponentCommands) are left to that component.
func builtinCommands(names []string) (commands.Set, error) {
	names = slices.DeleteFunc(slices.Clone(names), func(n string) bool { return ComponentCommands[n] != "" })
	set, err := commands.Resolve(names)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	for _, need := range []string{commands.Finish, commands.AskUser} {
		if _, ok := set.Get(need); !ok {
			return nil, fmt.Errorf("agent: the command list must include %q", need)
		}
	}
	return set, nil
}

// assemble puts the components in their default order.
func (s *Supervisor) assemble(l *live, builtin commands.Set) (*commands.Pipeline, error) {
	all := map[string]commands.Component{
		compDirectives: commands.StaticDirectives{ID: compDirectives, D: toDirectives(l.AgentConfig.Directives())},
		"profile":      commands.ProfileDirectives{},
		compCommands:   commands.CommandList{ID: compCommands, Cmds: builtin},
		"context":      commands.ContextItems{},
		"goal":         goalComponent{},
		memoryName:     memoryComponent{mem: s.mem, st: s.st, memory: s.memoryService, history: s.episodeHistory, model: &s.model, l: l, offered: offered(builtin)},
		"history":      historyComponent{s, l},
		"clock":        commands.Clock{},
	}
	for _, c := range s.opt.Components {
		if _, dup := all[c.Name()]; dup {
			return nil, fmt.Errorf("agent: two components are named %q", c.Name())
		}
		all[c.Name()] = c
	}
	var comps []commands.Component
	for _, n := range defaultOrder(s.opt.Components) {
		comps = append(comps, all[n])
	}
	return commands.NewPipeline(comps, s.reportComponent)
}

// CheckComponents checks a list of components to disable against those a supervisor
// with the extra components would have: each must exist, and the commands component
// cannot be left out. The config check and Reload use it.
func CheckComponents(extra []commands.Component, names []string) error {
	known := defaultOrder(extra)
	for _, n := range names {
		if n == compCommands {
			return fmt.Errorf("component %q cannot be disabled: it offers finish and ask_user", n)
		}
		if !slices.Contains(known, n) {
			return fmt.Errorf("no component is named %q; components: %v", n, known)
		}
	}
	return nil
}

// reportComponent logs a component's failure, keeps it for agentctl doctor and has the
// applier tell the agent's followers (component_failed); the step goes on without it. A
// hook called inside a transaction (specIn's step reads through it) reports in that one,
// published once it ends well; any other opens its own. Doctor shows what the followers
// cannot see: a failure with no stored agent (a new agent's command list checked), or
// reported in a transaction that rolled back.
func (s *Supervisor) reportComponent(step *commands.Step, component, hook string, err error) {
	s.log.Warn("component failed; skipped for this step", "agent", step.AgentID, "component", component, "hook", hook, "err", err)
	s.compFailures.add(step, component, hook, err, s.now())
	ev := cycle.Event{Kind: cycle.ComponentFailed, Detail: fmt.Sprintf("component %s failed in %s and was skipped for this step: %v", component, hook, err)}
	report := func(tx *store.Tx) error {
		a, err := tx.Agent(step.AgentID)
		if err != nil {
			return err
		}
		_, err = apply(tx, &change{a: a, ev: ev, pub: s.events.Publish})
		return err
	}
	if in, ok := step.State.(txState); ok {
		err = report(in.tx)
	} else {
		err = s.st.Tx(context.Background(), report)
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		s.log.Warn("component failure not reported", "agent", step.AgentID, "component", component, "err", err)
	}
}

// compFailures keeps each component's last failure since the daemon started, which
// agentctl doctor shows whoever else was told of it.
type compFailures struct {
	mu   sync.Mutex
	last map[string]compFailure // by component name
}

type compFailure struct {
	who, hook, err string // who: "for agent NAME", and whether it was stored yet
	at             time.Time
	count          int // failures since the daemon started
}

func (f *compFailures) add(step *commands.Step, component, hook string, err error, at time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.last == nil {
		f.last = map[string]compFailure{}
	}
	who := "for agent " + step.AgentName
	if step.AgentID == "" {
		who += ", being created"
	}
	f.last[component] = compFailure{who: who, hook: hook, err: err.Error(), at: at, count: f.last[component].count + 1}
}

// doctorCheck is agentctl doctor's warning of each component that failed, with its last
// failure; nothing while none has.
func (f *compFailures) doctorCheck(context.Context) []api.Check {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []api.Check
	for _, name := range slices.Sorted(maps.Keys(f.last)) {
		c := f.last[name]
		out = append(out, api.Check{Name: "component " + name, Status: api.CheckWarn,
			Detail: fmt.Sprintf("failed %s since agentd started, the steps going on without it; last at %s in %s %s: %s",
				display.Count(c.count, "time", "times"), c.at.Format(time.DateTime), c.hook, c.who, c.err),
			Fix: "see agentd's log for each failure; fix the component, or leave it out with disabled_components in [agent] or [agents.NAME]"})
	}
	return out
}

// stepOf describes agent a to its components.
func (s *Supervisor) stepOf(a *store.Agent) *commands.Step {
	return &commands.Step{
		AgentID: a.ID, AgentName: a.Name, Description: a.Description, Task: a.Task, Goals: a.Goals,
		Directives: toDirectives(a.Directives), Workspace: a.Workspace, RunID: a.RunID,
		Number: a.Step + 1, Now: s.now(), State: &agentState{st: s.st, id: a.ID},
	}
}

// commandsFor returns the commands agent a may use now, always including finish and
// ask_user: a failing command component must not leave an agent unable to stop or ask.
// An agent created with a command list (a team role's) keeps only those: what it is not
// offered is an unknown command to the reply's parser, so it is never executed.
func (s *Supervisor) commandsFor(ctx context.Context, l *live, a *store.Agent, step *commands.Step) commands.Set {
	set := helperDepthFilter(a, l.pipelineFor(a.Name).Commands(ctx, step), s.opt.MaxHelperDepth)
	if len(a.Commands) > 0 {
		set = slices.DeleteFunc(slices.Clone(set), func(c commands.Command) bool {
			return !slices.Contains(a.Commands, c.Spec().Name)
		})
	}
	for _, need := range []string{commands.AskUser, commands.Finish} {
		if _, ok := set.Get(need); !ok {
			c, _ := commands.Lookup(need)
			set = append(set, c)
		}
	}
	return set
}

// specIn returns the spec of the command named name as agent a has it now, reading the
// agent's component state through tx; nil when a has no such command. l is the settings
// generation to look in.
func (s *Supervisor) specIn(ctx context.Context, l *live, tx *store.Tx, a *store.Agent, name string) *commands.Spec {
	step := s.stepOf(a)
	step.State = txState{tx: tx, id: a.ID}
	if c, ok := s.commandsFor(ctx, l, a, step).Get(name); ok {
		spec := c.Spec()
		return &spec
	}
	return nil
}

// txState is commands.State read within a transaction already open (read-only use).
type txState struct {
	tx *store.Tx
	id string
}

func (k txState) Get(_ context.Context, key string) ([]byte, error) {
	return k.tx.StateValue(k.id, key)
}
func (k txState) Put(context.Context, string, []byte) error {
	return errors.New("agent state is read-only here")
}

func toDirectives(d api.Directives) commands.Directives {
	return commands.Directives{Constraints: d.Constraints, Resources: d.Resources, BestPractices: d.BestPractices}
}

// agentState is commands.State over the store.
type agentState struct {
	st *store.Store
	id string
}

func (k *agentState) Get(ctx context.Context, key string) (v []byte, err error) {
	err = k.st.View(ctx, func(tx *store.Tx) error { v, err = tx.StateValue(k.id, key); return err })
	return v, err
}

func (k *agentState) Put(ctx context.Context, key string, value []byte) error {
	return k.st.Tx(ctx, func(tx *store.Tx) error { return tx.SetStateValue(k.id, key, value) })
}

// historyComponent shows the agent's steps: the latest in full, older ones in one line
// each, newest first until the budget ends (see history.go). l is the settings
// generation whose pipeline holds it.
type historyComponent struct {
	s *Supervisor
	l *live
}

func (historyComponent) Name() string { return "history" }
func (historyComponent) Budgeted()    {}

func (h historyComponent) Messages(ctx context.Context, step *commands.Step) ([]string, error) {
	return h.s.episodeHistory.historyMessages(ctx, h.l, step)
}

var (
	_ commands.Budgeted = historyComponent{}
	_ commands.State    = (*agentState)(nil)
)
