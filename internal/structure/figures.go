package structure

import (
	"fmt"
	"go/types"
	"io"
	"sort"
	"strings"
)

// The paths the walks follow, and what ends them.
const (
	// DecideEntry is the decide route's handler: the Call the local API's serve runs for
	// POST /v0/agents/{agent}/decision.
	DecideEntry = "api.DecideRoute"
	storePkg    = "daemon/store"
)

// ClickEntries are the chat adapters' handlers of a button click.
var ClickEntries = []string{"bots/slack.Bot.onInteraction", "bots/discord.Bot.onClick"}

// The folders each walk steps into: a decision's path runs through the wire model, the
// local API and the agent core (the store is where it ends, so its reads are not
// stepped into); a click's through the chat front ends, up to the daemon's Decide.
var (
	decideWithin = []string{"api", "daemon/localapi", "daemon/server", "daemon/agent", "daemon/run"}
	clickWithin  = []string{"bots"}
)

// writeVerbs begin the names of the store's methods that write.
var writeVerbs = []string{"Insert", "Update", "Set", "Record", "Put", "Delete", "End", "Create", "Add", "Save", "Mark", "Write", "Finish", "Start", "Bind", "Remove"}

// StoreWrite accepts a call that writes the store: its write transaction (Store.Tx) or a
// write method (a name beginning with a write verb) of the store package.
func (t *Typed) StoreWrite(fn *types.Func) bool {
	if fn.Pkg() == nil || fn.Pkg().Path() != t.Module+"/"+storePkg {
		return false
	}
	if fn.Name() == "Tx" {
		return true
	}
	for _, v := range writeVerbs {
		if strings.HasPrefix(fn.Name(), v) {
			return true
		}
	}
	return false
}

// Decide accepts a call of a Decide method outside the chat front ends, or of an
// interface's Decide: the click has reached the daemon's decision path.
func (t *Typed) Decide(fn *types.Func) bool {
	if fn.Name() != "Decide" || fn.Pkg() == nil {
		return false
	}
	return isInterfaceMethod(fn) || !strings.HasPrefix(fn.Pkg().Path(), t.Module+"/bots")
}

// Figures are the structure figures the redesign is measured by.
type Figures struct {
	ProductLines  int
	AgentFiles    int
	AgentLinks    int
	AgentUpward   int
	AgentTop      string
	WidestType    string
	WidestMethods int
	LongFuncs     []Func
	EffectKinds   []string
	Unapplied     []string
	DecideWalk    Walk
	ClickWalks    map[string]Walk
	TypeErrors    int
}

// Measure computes every figure of the repository at root.
func Measure(root string) (*Figures, error) {
	r, err := Load(root)
	if err != nil {
		return nil, err
	}
	f := &Figures{ProductLines: r.ProductLines(), ClickWalks: map[string]Walk{}}
	for _, fn := range r.Funcs(func(f *File) bool { return f.Product() }) {
		if fn.Lines > maxFuncLines {
			f.LongFuncs = append(f.LongFuncs, fn)
		}
	}
	sort.Slice(f.LongFuncs, func(i, j int) bool { return f.LongFuncs[i].Lines > f.LongFuncs[j].Lines })
	for typ, n := range r.TypeMethods(func(f *File) bool { return f.Product() && !QueryPackages[f.Dir] }) {
		if n > f.WidestMethods || n == f.WidestMethods && typ < f.WidestType {
			f.WidestType, f.WidestMethods = typ, n
		}
	}
	t, err := Check(root, r.Module)
	if err != nil {
		return nil, err
	}
	f.TypeErrors = len(t.Errors)
	l := t.FileLinks("daemon/agent")
	f.AgentFiles, f.AgentLinks, f.AgentUpward, f.AgentTop = len(l.Files), l.Total, l.Upward, l.Top
	f.EffectKinds, f.Unapplied = t.Effects()
	f.DecideWalk = t.WalkVar(DecideEntry, t.StoreWrite, decideWithin...)
	for _, e := range ClickEntries {
		if fn := t.Lookup(e); fn != nil {
			f.ClickWalks[e] = t.WalkFunc(fn, t.Decide, clickWithin...)
		}
	}
	return f, nil
}

// maxFuncLines is the function length the figures count past (the limits test's too).
const maxFuncLines = 80

// QueryPackages hold a query set: one method per query the daemon runs, where many
// methods on one type are the design, not a god type.
var QueryPackages = map[string]bool{"daemon/store": true}

// Print writes the figures, one a line; verbose adds the lists behind them.
func (f *Figures) Print(w io.Writer, verbose bool) {
	pct := func(a, b int) float64 {
		if b == 0 {
			return 0
		}
		return 100 * float64(a) / float64(b)
	}
	fmt.Fprintf(w, "product lines (no tests, no internal/):   %d\n", f.ProductLines)
	fmt.Fprintf(w, "daemon/agent files, links, upward:        %d files, %d links, %d upward (%.0f%%; top %s)\n",
		f.AgentFiles, f.AgentLinks, f.AgentUpward, pct(f.AgentUpward, f.AgentLinks), f.AgentTop)
	fmt.Fprintf(w, "widest behaviour type (not the store):    %s, %d methods\n", f.WidestType, f.WidestMethods)
	fmt.Fprintf(w, "product functions over %d lines:          %d\n", maxFuncLines, len(f.LongFuncs))
	fmt.Fprintf(w, "effect kinds computed, not applied:       %d of %d %v\n", len(f.Unapplied), len(f.EffectKinds), f.Unapplied)
	fmt.Fprintf(w, "decision walk (%s → store write): %d returns to a file already left (%d steps, reached %v)\n",
		DecideEntry, f.DecideWalk.Returns, len(f.DecideWalk.Files), f.DecideWalk.Reached)
	for _, e := range ClickEntries {
		c := f.ClickWalks[e]
		fmt.Fprintf(w, "click walk (%s → Decide): %d returns to a file already left (%d steps, reached %v)\n",
			e, c.Returns, len(c.Files), c.Reached)
	}
	if f.TypeErrors > 0 {
		fmt.Fprintf(w, "(type errors met while checking: %d; the figures may miss what they hid)\n", f.TypeErrors)
	}
	if !verbose {
		return
	}
	for _, fn := range f.LongFuncs {
		fmt.Fprintf(w, "  long: %s %s %d\n", fn.File.Path, fn.Name, fn.Lines)
	}
	fmt.Fprintf(w, "  decision walk: %s\n", strings.Join(f.DecideWalk.Files, " → "))
	for _, e := range ClickEntries {
		fmt.Fprintf(w, "  click walk %s: %s\n", e, strings.Join(f.ClickWalks[e].Files, " → "))
	}
}
