package structure

import (
	"go/ast"
	"sort"
)

// Links are the file-to-file dependencies inside one package: file A links to file B when
// A uses a name B declares (a function, type, method, field, variable or constant).
type Links struct {
	Files []string            // the package's product files
	To    map[string][]string // A → the files it links to, sorted
	Top   string              // the file declaring the package's type with the most methods
	Total int                 // links in all
	// Upward counts the links that run upward: A → B where B depends back on A
	// (transitively: A and B are in one cycle of links), or B is Top, the package's top,
	// which every part hangs off. A package whose files form layers has none.
	Upward int
}

// FileLinks measures the links of the package at dir (relative to the module).
func (t *Typed) FileLinks(dir string) *Links {
	pkg := t.Pkgs[dir]
	l := &Links{To: map[string][]string{}}
	if pkg == nil {
		return l
	}
	set := map[string]map[string]bool{}
	methods := map[string]int{}
	for _, f := range t.ByPkg[dir] {
		path := t.Files[f]
		l.Files = append(l.Files, path)
		set[path] = map[string]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.Ident:
				obj := t.Info.Uses[n]
				if obj == nil || obj.Pkg() != pkg || !obj.Pos().IsValid() {
					return true
				}
				if to := t.FileOf(obj.Pos()); to != path {
					set[path][to] = true
				}
			case *ast.FuncDecl:
				if n.Recv != nil {
					methods[path+"\x00"+recvType(n)]++
				}
			}
			return true
		})
	}
	sort.Strings(l.Files)
	best, bestKey := 0, ""
	for k, n := range methods {
		if n > best || n == best && k < bestKey { // ties go to the first by name: the figure is the same every run
			best, bestKey, l.Top = n, k, k[:indexByte(k, 0)]
		}
	}
	for from, tos := range set {
		for to := range tos {
			l.To[from] = append(l.To[from], to)
		}
		sort.Strings(l.To[from])
	}
	l.count()
	return l
}

// count sets Total and Upward from To and Top.
func (l *Links) count() {
	l.Total, l.Upward = 0, 0
	comp := l.components()
	for from, tos := range l.To {
		l.Total += len(tos)
		for _, to := range tos {
			if to == l.Top || comp[to] == comp[from] {
				l.Upward++
			}
		}
	}
}

// components numbers the strongly connected components of the links (Tarjan).
func (l *Links) components() map[string]int {
	index, low, comp := map[string]int{}, map[string]int{}, map[string]int{}
	var stack []string
	on := map[string]bool{}
	next, n := 0, 0
	var visit func(v string)
	visit = func(v string) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		on[v] = true
		for _, w := range l.To[v] {
			if _, seen := index[w]; !seen {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if on[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				on[w] = false
				comp[w] = n
				if w == v {
					break
				}
			}
			n++
		}
	}
	for _, f := range l.Files {
		if _, seen := index[f]; !seen {
			visit(f)
		}
	}
	return comp
}

func indexByte(s string, b byte) int {
	for i := range len(s) {
		if s[i] == b {
			return i
		}
	}
	return len(s)
}
