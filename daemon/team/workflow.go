package team

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/agentd/agentd/internal/display"
)

// End is the state name a transition takes to end the run.
const End = "end"

// Limits on a workflow, so that every run ends.
const (
	DefaultPhaseTurns = 10  // a two-role phase without max_turns
	DefaultRunTurns   = 100 // a run without max_turns, over every phase
	MaxPhaseTurns     = 50
	MaxRunTurns       = 500
	MaxCycles         = 20
	DefaultRoleSteps  = 6 // proposals a role with commands may make in one turn
)

// Workflow is a parsed, valid workflow file: roles, phases and the states that run them.
type Workflow struct {
	Name        string
	Description string
	Root        string
	MaxTurns    int               // turns over the whole run
	Vars        map[string]string // declared variables and their initial values (task is set by the run)
	Roles       map[string]*Role
	Phases      map[string]*Phase
	States      map[string]*State
}

// Role is one participant. A role with Commands takes its turns as a real agent of the
// daemon (its proposals are decided like any agent's); one without answers in plain text.
// The file writes it as it is, but for its name, which is its table's.
type Role struct {
	Name        string   `toml:"-"`
	Description string   `toml:"description"`
	Prompt      string   `toml:"prompt"`
	Commands    []string `toml:"commands"`  // commands the role is told it may use; empty: a chat-only role
	Allow       []string `toml:"allow"`     // permission patterns stored for the role's agent (auto-approved)
	MaxSteps    int      `toml:"max_steps"` // proposals per turn
}

// Phase is a two-role phase (instructor and assistant alternate) or a composed phase
// that repeats a list of two-role phases.
// The file writes it as it is, but for its name (its table's) and Until (UntilText).
type Phase struct {
	Name string `toml:"-"`
	// Two-role phase.
	Instructor string `toml:"instructor"`
	Assistant  string `toml:"assistant"`
	Prompt     string `toml:"prompt"`
	Store      string `toml:"store"` // the variable the conclusion goes to
	MaxTurns   int    `toml:"max_turns"`
	Reflect    bool   `toml:"reflect"` // no <INFO>: ask the model for the conclusion from the transcript
	// Composed phase.
	Phases    []string `toml:"phases"`
	Cycles    int      `toml:"cycles"`
	Until     *Cond    `toml:"-"`     // nil: run all cycles
	UntilText string   `toml:"until"` // Until as the file writes it
}

// Composed reports whether p repeats other phases.
func (p *Phase) Composed() bool { return len(p.Phases) > 0 }

// State is a step of the workflow: its phases in order, then the choice of the next state.
// The file writes it as it is, but for its name (its table's) and Next (NextText).
type State struct {
	Name     string   `toml:"-"`
	Prompt   string   `toml:"prompt"`
	Roles    []string `toml:"roles"` // the roles that act in this state (from its phases when not given)
	Phases   []string `toml:"phases"`
	MaxTurns int      `toml:"max_turns"` // turns over the state's phases; 0: no limit but the phases'
	Choose   string   `toml:"choose"`    // "rule" (first next whose condition holds) or "model"
	Next     []Next   `toml:"-"`
	NextText []any    `toml:"next"` // Next as the file writes it: names or {state, when} tables
}

// Next is one possible next state; When nil always holds.
type Next struct {
	State string
	When  *Cond
}

// Problem is one thing wrong in a workflow file.
type Problem struct {
	Line int // 1-based; 0 when unknown
	Msg  string
}

// Error lists every problem of a workflow file.
type Error struct {
	File     string
	Problems []Problem
}

func (e *Error) Error() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(e.File)
		if p.Line > 0 {
			fmt.Fprintf(&b, ":%d", p.Line)
		}
		b.WriteString(": " + p.Msg)
	}
	return b.String()
}

// The file's shape, as TOML decodes it.
type file struct {
	Name        string            `toml:"name"`
	Description string            `toml:"description"`
	Root        string            `toml:"root"`
	MaxTurns    int               `toml:"max_turns"`
	Vars        map[string]string `toml:"vars"`
	Roles       map[string]Role   `toml:"roles"`
	Phases      map[string]Phase  `toml:"phases"`
	States      map[string]State  `toml:"states"`
}

var placeholderRE = regexp.MustCompile(`\{\{\s*([^{}]*?)\s*\}\}`)

// Parse reads a workflow from TOML; name is the file name its problems are reported
// against. Every problem found is returned at once in an *Error, each with its line.
func Parse(name string, src []byte) (*Workflow, error) {
	var f file
	md, err := toml.Decode(string(src), &f)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, &Error{File: name, Problems: []Problem{{Line: pe.Position.Line, Msg: "invalid TOML: " + pe.Message}}}
		}
		return nil, &Error{File: name, Problems: []Problem{{Msg: "invalid TOML: " + err.Error()}}}
	}
	v := &validator{lines: indexLines(string(src))}
	for _, k := range md.Undecoded() {
		if len(k) >= 3 && k[0] == "states" && k[2] == "next" {
			continue // next is decoded as []any and checked by state
		}
		v.add(k.String(), "unknown key %q", k.String())
	}
	w := v.workflow(&f)
	if len(v.probs) > 0 {
		sort.SliceStable(v.probs, func(i, j int) bool { return v.probs[i].Line < v.probs[j].Line })
		return nil, &Error{File: name, Problems: v.probs}
	}
	return w, nil
}

type validator struct {
	lines map[string]int
	probs []Problem
}

// add records a problem at the line of the dotted key (or of its nearest parent).
func (v *validator) add(key, format string, args ...any) {
	line := 0
	for k := key; k != ""; {
		if l, ok := v.lines[k]; ok {
			line = l
			break
		}
		i := strings.LastIndex(k, ".")
		if i < 0 {
			break
		}
		k = k[:i]
	}
	v.probs = append(v.probs, Problem{Line: line, Msg: fmt.Sprintf(format, args...)})
}

func (v *validator) workflow(f *file) *Workflow {
	w := &Workflow{
		Name: strings.TrimSpace(f.Name), Description: strings.TrimSpace(f.Description), Root: f.Root,
		MaxTurns: f.MaxTurns, Vars: map[string]string{"task": ""},
		Roles: map[string]*Role{}, Phases: map[string]*Phase{}, States: map[string]*State{},
	}
	if w.Name == "" {
		v.add("name", "name is missing: give the workflow a name")
	}
	switch {
	case w.MaxTurns == 0:
		w.MaxTurns = DefaultRunTurns
	case w.MaxTurns < 1 || w.MaxTurns > MaxRunTurns:
		v.add("max_turns", "max_turns %d: want 1 to %d", w.MaxTurns, MaxRunTurns)
	}
	for _, k := range sortedKeys(f.Vars) {
		if !isName(k) {
			v.add("vars."+k, "variable %q: use lowercase letters, digits and _, starting with a letter (at most 24)", k)
		}
		if k == "task" {
			v.add("vars.task", "vars.task: task is set by the run; do not declare it")
		}
		w.Vars[k] = f.Vars[k]
	}
	// Variables a phase stores count as declared.
	for _, p := range f.Phases {
		if isName(p.Store) {
			if _, ok := w.Vars[p.Store]; !ok {
				w.Vars[p.Store] = ""
			}
		}
	}
	if len(f.Roles) == 0 {
		v.add("roles", "no roles: add at least two, like [roles.instructor] and [roles.assistant]")
	}
	for _, name := range sortedKeys(f.Roles) {
		w.Roles[name] = v.role(name, f.Roles[name], w)
	}
	for _, name := range sortedKeys(f.Phases) {
		w.Phases[name] = v.phase(name, f.Phases[name], f, w)
	}
	if len(f.States) == 0 {
		v.add("states", "no states: add at least one, like [states.design]")
	}
	for _, name := range sortedKeys(f.States) {
		w.States[name] = v.state(name, f.States[name], f, w)
	}
	switch _, ok := f.States[w.Root]; {
	case w.Root == "":
		v.add("root", "root is missing: name the state the run starts in")
	case !ok:
		v.add("root", "root %q is not a state%s", w.Root, display.DidYouMean(w.Root, sortedKeys(f.States)))
	}
	v.reachable(w)
	return w
}

func (v *validator) role(name string, fr Role, w *Workflow) *Role {
	key := "roles." + name
	if !isName(name) {
		v.add(key, "role %q: use lowercase letters, digits and _, starting with a letter (at most 24)", name)
	}
	r := &fr
	r.Name, r.Description = name, strings.TrimSpace(fr.Description)
	if r.Description == "" {
		v.add(key, "role %s has no description: say in one line who it is", name)
	}
	v.template(key+".prompt", fr.Prompt, w)
	for _, c := range fr.Commands {
		if !isCommandName(c) {
			v.add(key+".commands", "role %s: command %q is not a command name", name, c)
		}
	}
	if len(fr.Allow) > 0 && len(fr.Commands) == 0 {
		v.add(key+".allow", "role %s: allow without commands: a role without commands runs none", name)
	}
	switch {
	case fr.MaxSteps == 0:
		r.MaxSteps = DefaultRoleSteps
	case fr.MaxSteps < 1 || fr.MaxSteps > 50:
		v.add(key+".max_steps", "role %s: max_steps %d: want 1 to 50", name, fr.MaxSteps)
	}
	return r
}

func isCommandName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

func (v *validator) phase(name string, fp Phase, f *file, w *Workflow) *Phase {
	key := "phases." + name
	if !isName(name) {
		v.add(key, "phase %q: use lowercase letters, digits and _, starting with a letter (at most 24)", name)
	}
	p := &fp
	p.Name = name
	if p.Composed() {
		for _, k := range []struct {
			set  bool
			name string
		}{{fp.Instructor != "", "instructor"}, {fp.Assistant != "", "assistant"}, {fp.Prompt != "", "prompt"},
			{fp.Store != "", "store"}, {fp.MaxTurns != 0, "max_turns"}, {fp.Reflect, "reflect"}} {
			if k.set {
				v.add(key+"."+k.name, "phase %s is composed (it has phases): %s belongs in its sub-phases", name, k.name)
			}
		}
		for _, sub := range fp.Phases {
			sp, ok := f.Phases[sub]
			switch {
			case !ok:
				v.add(key+".phases", "phase %s: sub-phase %q is not a phase%s", name, sub, display.DidYouMean(sub, sortedKeys(f.Phases)))
			case len(sp.Phases) > 0:
				v.add(key+".phases", "phase %s: sub-phase %s is composed itself: composed phases repeat two-role phases only", name, sub)
			}
		}
		switch {
		case fp.Cycles == 0 && fp.UntilText == "":
			v.add(key, "composed phase %s needs cycles (at most %d), until (a break condition), or both", name, MaxCycles)
		case fp.Cycles == 0:
			p.Cycles = MaxCycles
		case fp.Cycles < 1 || fp.Cycles > MaxCycles:
			v.add(key+".cycles", "phase %s: cycles %d: want 1 to %d", name, fp.Cycles, MaxCycles)
		}
		if fp.UntilText != "" {
			p.Until = v.cond(key+".until", fp.UntilText, w)
		}
		return p
	}
	if fp.Cycles != 0 || fp.UntilText != "" {
		v.add(key, "phase %s has cycles or until but no phases to repeat", name)
	}
	for _, r := range []struct{ field, role string }{{"instructor", fp.Instructor}, {"assistant", fp.Assistant}} {
		if r.role == "" {
			v.add(key, "phase %s has no %s: a two-role phase names an instructor and an assistant", name, r.field)
		} else if _, ok := f.Roles[r.role]; !ok {
			v.add(key+"."+r.field, "phase %s: %s %q is not a role%s", name, r.field, r.role, display.DidYouMean(r.role, sortedKeys(f.Roles)))
		}
	}
	if fp.Instructor != "" && fp.Instructor == fp.Assistant {
		v.add(key+".assistant", "phase %s: the instructor and the assistant are both %s: use two roles", name, fp.Assistant)
	}
	if strings.TrimSpace(fp.Prompt) == "" {
		v.add(key, "phase %s has no prompt: say what the two roles should settle", name)
	}
	v.template(key+".prompt", fp.Prompt, w)
	if fp.Store != "" && !isName(fp.Store) {
		v.add(key+".store", "phase %s: store %q is not a variable name", name, fp.Store)
	}
	if fp.Store == "task" {
		v.add(key+".store", "phase %s: store task: the task is the run's and stays as given", name)
	}
	if fp.Reflect && fp.Store == "" {
		v.add(key+".reflect", "phase %s: reflect needs store: the variable the conclusion goes to", name)
	}
	switch {
	case fp.MaxTurns == 0:
		p.MaxTurns = DefaultPhaseTurns
	case fp.MaxTurns < 1 || fp.MaxTurns > MaxPhaseTurns:
		v.add(key+".max_turns", "phase %s: max_turns %d: want 1 to %d", name, fp.MaxTurns, MaxPhaseTurns)
	}
	return p
}

func (v *validator) state(name string, fs State, f *file, w *Workflow) *State {
	key := "states." + name
	if !isName(name) || name == End {
		v.add(key, "state %q: use lowercase letters, digits and _, starting with a letter (at most 24), and not %q", name, End)
	}
	s := &State{Name: name, Prompt: fs.Prompt, Roles: fs.Roles, Phases: fs.Phases, MaxTurns: fs.MaxTurns, Choose: fs.Choose}
	v.template(key+".prompt", fs.Prompt, w)
	if len(fs.Phases) == 0 {
		v.add(key, "state %s has no phases: list the phases it runs, in order", name)
	}
	var used []string
	for _, ph := range fs.Phases {
		fp, ok := f.Phases[ph]
		if !ok {
			v.add(key+".phases", "state %s: phase %q is not a phase%s", name, ph, display.DidYouMean(ph, sortedKeys(f.Phases)))
			continue
		}
		used = append(used, fp.Instructor, fp.Assistant)
		for _, sub := range fp.Phases {
			if sp, ok := f.Phases[sub]; ok {
				used = append(used, sp.Instructor, sp.Assistant)
			}
		}
	}
	for _, r := range fs.Roles {
		if _, ok := f.Roles[r]; !ok {
			v.add(key+".roles", "state %s: role %q is not a role%s", name, r, display.DidYouMean(r, sortedKeys(f.Roles)))
		}
	}
	if len(fs.Roles) > 0 {
		for _, r := range used {
			if r != "" && !slices.Contains(fs.Roles, r) {
				v.add(key+".roles", "state %s: its phases use role %s, which its roles leave out", name, r)
			}
		}
	} else {
		for _, r := range used {
			if r != "" && !slices.Contains(s.Roles, r) {
				s.Roles = append(s.Roles, r)
			}
		}
	}
	if fs.MaxTurns < 0 || fs.MaxTurns > MaxRunTurns {
		v.add(key+".max_turns", "state %s: max_turns %d: want 1 to %d", name, fs.MaxTurns, MaxRunTurns)
	}
	switch fs.Choose {
	case "":
		s.Choose = "rule"
	case "rule", "model":
	default:
		v.add(key+".choose", "state %s: choose %q: use rule (the first next whose when holds) or model", name, fs.Choose)
	}
	for i, n := range fs.NextText {
		if nx, ok := v.next(key, name, i, n, f, w); ok {
			s.Next = append(s.Next, nx)
		}
	}
	if s.Choose == "model" && len(s.Next) < 2 {
		v.add(key+".choose", "state %s: choose = \"model\" needs at least two next states to choose from", name)
	}
	return s
}

// next checks the i-th next of state name, as the file wrote it (a state's name, or a
// table of state and when); false when it is neither.
func (v *validator) next(key, name string, i int, n any, f *file, w *Workflow) (Next, bool) {
	var nx Next
	switch t := n.(type) {
	case string:
		nx.State = t
	case map[string]any:
		for k := range t {
			if k != "state" && k != "when" {
				v.add(key+".next", "state %s: next %d: unknown key %q (want state and when)", name, i+1, k)
			}
		}
		nx.State, _ = t["state"].(string)
		if when, ok := t["when"].(string); ok {
			nx.When = v.cond(key+".next", when, w)
		} else if t["when"] != nil {
			v.add(key+".next", "state %s: next %d: when must be a string", name, i+1)
		}
	default:
		v.add(key+".next", "state %s: next %d: want a state name or { state = \"...\", when = \"...\" }", name, i+1)
		return nx, false
	}
	if _, ok := f.States[nx.State]; !ok && nx.State != End {
		v.add(key+".next", "state %s: next %q is not a state (nor %q)%s", name, nx.State, End, display.DidYouMean(nx.State, sortedKeys(f.States)))
	}
	return nx, true
}

// cond parses a condition and checks that its variables exist.
func (v *validator) cond(key, src string, w *Workflow) *Cond {
	c, err := ParseCond(src)
	if err != nil {
		v.add(key, "%v", err)
		return nil
	}
	for _, name := range c.Vars() {
		if _, ok := w.Vars[name]; !ok {
			v.add(key, "condition %q reads variable %q, which is neither declared in [vars] nor stored by a phase%s", src, name, display.DidYouMean(name, sortedKeys(w.Vars)))
		}
	}
	return c
}

// template checks that a prompt's {{placeholders}} name variables.
func (v *validator) template(key, text string, w *Workflow) {
	for _, m := range placeholderRE.FindAllStringSubmatch(text, -1) {
		if _, ok := w.Vars[m[1]]; !ok {
			v.add(key, "{{%s}} is not a variable: declare it in [vars] or store it from a phase%s", m[1], display.DidYouMean(m[1], sortedKeys(w.Vars)))
		}
	}
}

// reachable reports states no transition leads to.
func (v *validator) reachable(w *Workflow) {
	if _, ok := w.States[w.Root]; !ok {
		return
	}
	seen := map[string]bool{w.Root: true}
	queue := []string{w.Root}
	for len(queue) > 0 {
		s := w.States[queue[0]]
		queue = queue[1:]
		for _, n := range s.Next {
			if _, ok := w.States[n.State]; ok && !seen[n.State] {
				seen[n.State] = true
				queue = append(queue, n.State)
			}
		}
	}
	for _, name := range sortedKeys(w.States) {
		if !seen[name] {
			v.add("states."+name, "state %s is never reached from the root %s", name, w.Root)
		}
	}
}

// Render fills a prompt's {{placeholders}} from vars.
func Render(text string, vars map[string]string) string {
	return placeholderRE.ReplaceAllStringFunc(text, func(m string) string {
		return vars[placeholderRE.FindStringSubmatch(m)[1]]
	})
}
