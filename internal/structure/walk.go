package structure

import (
	"go/ast"
	"go/types"
	"path"
	"strings"
)

// Target says whether a call ends a walk: the callee reached is what the path leads to.
type Target func(callee *types.Func) bool

// A Walk is the static walk of one path through the code, as a reader stepping through
// it sees it: from the entry, every call into the module's product code in source order,
// into each function once (calls inside a closure count where the closure is written),
// until a call the target accepts. Only functions of the packages within the walk's
// folders are stepped into; an interface call steps into the product methods that
// implement it and can reach the target (found by the interface's method set over the
// module's types), not into every implementation.
type Walk struct {
	Files   []string // the files in the order the walk is in them; a return is a step too
	Returns int      // how often the walk comes back into a file it had left
	Reached bool     // whether a call the target accepts was found
}

type walker struct {
	t       *Typed
	target  Target
	edges   map[*types.Func][]call
	reaches map[*types.Func]int // 0 unknown, 1 visiting, 2 no, 3 yes
	impls   map[*types.Func][]*types.Func
	within  []string // module-relative folders the walk steps into
	seen    map[*types.Func]bool
	files   []string
	reached bool
}

// call is one call in a body: the functions it may run, or the target it reaches.
type call struct {
	callees []*types.Func
	target  bool
	iface   bool // an interface call: its callees are the implementations
}

// inside reports whether fn is in one of the walk's folders.
func (w *walker) inside(fn *types.Func) bool {
	rel, ok := w.t.rel(fn.Pkg().Path())
	if !ok {
		return false
	}
	for _, d := range w.within {
		if rel == d || strings.HasPrefix(rel, d+"/") {
			return true
		}
	}
	return false
}

// WalkFunc walks from the function fn, stepping into the packages under within.
func (t *Typed) WalkFunc(fn *types.Func, target Target, within ...string) Walk {
	d := t.Decls[fn]
	if d == nil {
		return Walk{}
	}
	return t.walkBody(d.Body, target, within)
}

func (t *Typed) walkBody(body ast.Node, target Target, within []string) Walk {
	w := &walker{t: t, target: target, edges: map[*types.Func][]call{}, reaches: map[*types.Func]int{},
		impls: map[*types.Func][]*types.Func{}, within: within, seen: map[*types.Func]bool{}}
	entry := w.calls(body)
	file := t.FileOf(body.Pos())
	w.step(file, entry)
	out := Walk{Reached: w.reached}
	out.Files, out.Returns = returns(w.files)
	return out
}

// returns collapses a walk's files (a call within one file stays in it) and counts how
// often the walk comes back into a file it had left.
func returns(walk []string) (files []string, n int) {
	left := map[string]bool{}
	for _, f := range walk {
		last := len(files) - 1
		if last >= 0 && files[last] == f {
			continue
		}
		if last >= 0 {
			left[files[last]] = true
		}
		if left[f] {
			n++
		}
		files = append(files, f)
	}
	return files, n
}

// step walks one body's calls from file; it reports whether the target was reached.
func (w *walker) step(file string, calls []call) bool {
	w.files = append(w.files, file)
	for _, c := range calls {
		if c.target {
			w.reached = true
			return true
		}
		for _, fn := range c.callees {
			if w.seen[fn] || !w.inside(fn) || c.iface && !w.reach(fn) {
				continue
			}
			w.seen[fn] = true
			if w.step(w.t.FileOf(w.t.Decls[fn].Pos()), w.callsOf(fn)) {
				return true
			}
			w.files = append(w.files, file)
		}
	}
	return false
}

// reach reports whether fn can reach the target, memoized (a cycle counts as no).
func (w *walker) reach(fn *types.Func) bool {
	switch w.reaches[fn] {
	case 1, 2:
		return false
	case 3:
		return true
	}
	w.reaches[fn] = 1
	yes := false
	for _, c := range w.callsOf(fn) {
		if c.target {
			yes = true
		}
		for _, callee := range c.callees {
			if w.reach(callee) {
				yes = true
			}
		}
	}
	w.reaches[fn] = 2
	if yes {
		w.reaches[fn] = 3
	}
	return yes
}

func (w *walker) callsOf(fn *types.Func) []call {
	if cs, ok := w.edges[fn]; ok {
		return cs
	}
	w.edges[fn] = nil
	cs := w.calls(w.t.Decls[fn].Body)
	w.edges[fn] = cs
	return cs
}

// calls lists the calls of body in source order.
func (w *walker) calls(body ast.Node) []call {
	var out []call
	ast.Inspect(body, func(n ast.Node) bool {
		ce, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		fn := w.callee(ce.Fun)
		if fn == nil {
			return true
		}
		if w.target(fn) {
			out = append(out, call{target: true})
			return true
		}
		c := call{iface: isInterfaceMethod(fn)}
		if c.iface {
			c.callees = w.implementations(fn)
		} else if w.t.Decls[fn] != nil {
			c.callees = []*types.Func{fn}
		}
		if len(c.callees) > 0 {
			out = append(out, c)
		}
		return true
	})
	return out
}

func (w *walker) callee(fun ast.Expr) *types.Func {
	for {
		switch f := fun.(type) {
		case *ast.ParenExpr:
			fun = f.X
			continue
		case *ast.IndexExpr:
			fun = f.X
			continue
		case *ast.IndexListExpr:
			fun = f.X
			continue
		case *ast.Ident:
			fn, _ := w.t.Info.Uses[f].(*types.Func)
			return origin(fn)
		case *ast.SelectorExpr:
			fn, _ := w.t.Info.Uses[f.Sel].(*types.Func)
			return origin(fn)
		}
		return nil
	}
}

func origin(fn *types.Func) *types.Func {
	if fn == nil {
		return nil
	}
	return fn.Origin()
}

func isInterfaceMethod(fn *types.Func) bool {
	sig, _ := fn.Type().(*types.Signature)
	return sig != nil && sig.Recv() != nil && types.IsInterface(sig.Recv().Type())
}

// implementations are the product methods that may run for a call of interface method m:
// m's name on every named type of the module that implements m's interface.
func (w *walker) implementations(m *types.Func) []*types.Func {
	if out, ok := w.impls[m]; ok {
		return out
	}
	iface, _ := m.Type().(*types.Signature).Recv().Type().Underlying().(*types.Interface)
	var out []*types.Func
	for _, pkg := range w.t.Pkgs {
		if pkg == nil {
			continue
		}
		for _, name := range pkg.Scope().Names() {
			tn, ok := pkg.Scope().Lookup(name).(*types.TypeName)
			if !ok || types.IsInterface(tn.Type()) || iface == nil {
				continue
			}
			if _, generic := tn.Type().(*types.Named); generic && tn.Type().(*types.Named).TypeParams().Len() > 0 {
				continue
			}
			ptr := types.NewPointer(tn.Type())
			if !types.Implements(ptr, iface) {
				continue
			}
			obj, _, _ := types.LookupFieldOrMethod(ptr, true, m.Pkg(), m.Name())
			if fn, ok := obj.(*types.Func); ok && w.t.Decls[fn.Origin()] != nil {
				out = append(out, fn.Origin())
			}
		}
	}
	w.impls[m] = out
	return out
}

// Lookup finds a function of the module by "dir.Func" or "dir.Type.Method".
func (t *Typed) Lookup(name string) *types.Func {
	dir, rest := path.Split(name)
	pkgName, fname, _ := strings.Cut(rest, ".")
	pkg := t.Pkgs[strings.TrimSuffix(dir+pkgName, "/")]
	if pkg == nil {
		return nil
	}
	typ, method, isMethod := strings.Cut(fname, ".")
	if !isMethod {
		fn, _ := pkg.Scope().Lookup(fname).(*types.Func)
		return fn
	}
	tn, ok := pkg.Scope().Lookup(typ).(*types.TypeName)
	if !ok {
		return nil
	}
	obj, _, _ := types.LookupFieldOrMethod(types.NewPointer(tn.Type()), true, pkg, method)
	fn, _ := obj.(*types.Func)
	return fn
}

// WalkVar walks from the first function literal in the value of package variable name
// ("api.DecideRoute": the route's Call), or from the first method expression in it
// (byRefRequest(Service.Decide)) as if it were called, stepping into the packages under
// within.
func (t *Typed) WalkVar(name string, target Target, within ...string) Walk {
	dir, rest := path.Split(name)
	pkgName, varName, _ := strings.Cut(rest, ".")
	for _, f := range t.ByPkg[strings.TrimSuffix(dir+pkgName, "/")] {
		var start ast.Node
		ast.Inspect(f, func(n ast.Node) bool {
			if start != nil {
				return false
			}
			if vs, ok := n.(*ast.ValueSpec); ok && len(vs.Names) > 0 && vs.Names[0].Name == varName {
				ast.Inspect(vs, func(n ast.Node) bool {
					switch n := n.(type) {
					case *ast.FuncLit:
						start = n.Body
					case *ast.SelectorExpr:
						if sel := t.Info.Selections[n]; sel != nil && sel.Kind() == types.MethodExpr {
							start = &ast.CallExpr{Fun: n}
						}
					}
					return start == nil
				})
			}
			return true
		})
		if start != nil {
			return t.walkBody(start, target, within)
		}
	}
	return Walk{}
}
