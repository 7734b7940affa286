package structure

import (
	"go/types"
	"path"
	"sort"
)

// cyclePkg and effectKind name the cycle's effect kinds: the constants of that type are
// what the transition table can ask for.
const (
	cyclePkg   = "daemon/agent/cycle"
	effectKind = "EffectKind"
)

// Effects lists the cycle's effect kinds and those no product code outside the cycle
// refers to: computed by the table, printed in its golden file, and applied by nobody.
func (t *Typed) Effects() (kinds, unapplied []string) {
	pkg := t.Pkgs[cyclePkg]
	if pkg == nil {
		return nil, nil
	}
	consts := map[types.Object]bool{}
	for _, name := range pkg.Scope().Names() {
		c, ok := pkg.Scope().Lookup(name).(*types.Const)
		if !ok {
			continue
		}
		if n, isNamed := types.Unalias(c.Type()).(*types.Named); isNamed && n.Obj().Name() == effectKind {
			consts[c] = true
			kinds = append(kinds, name)
		}
	}
	used := map[string]bool{}
	for id, obj := range t.Info.Uses {
		if !consts[obj] {
			continue
		}
		if file := t.FileOf(id.Pos()); path.Dir(file) != cyclePkg {
			used[obj.Name()] = true
		}
	}
	for _, k := range kinds {
		if !used[k] {
			unapplied = append(unapplied, k)
		}
	}
	sort.Strings(kinds)
	return kinds, unapplied
}
