package permission

import (
	"maps"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/agentd/agentd/commands"
)

// DeniedPaths are the workspace paths the deny rules keep from the file commands, as the
// sandbox asks of them for the programs an execute command runs: a deny on a path means
// that path for every program, not only for read_file. They match with the file commands'
// own Denies, so a path is kept from programs exactly when a file command would be refused
// it.
type DeniedPaths struct {
	deny []Pattern // the deny patterns that cover a file command of either family
}

var _ commands.PathRules = (*DeniedPaths)(nil)

// The file families' specs, as rules see them.
var (
	readFamily  = commands.Spec{Name: "read_file", Class: commands.ClassRead}
	writeFamily = commands.Spec{Name: "write_file", Class: commands.ClassWriteWorkspace}
)

// everything stands for any path under a folder: a deny that matches folder/everything
// matches everything in it (no rule names a file like that without meaning all of them).
const everything = "\x00any/\x00thing"

// Denied returns the paths the layers' deny rules keep from the file commands, or nil when
// none covers a file command.
func Denied(layers ...Rules) *DeniedPaths {
	var d DeniedPaths
	for _, l := range layers {
		for _, p := range l.Deny {
			if p.coversCommand(readFamily) || p.coversCommand(writeFamily) {
				d.deny = append(d.deny, p)
			}
		}
	}
	if len(d.deny) == 0 {
		return nil
	}
	return &d
}

// Roots are the workspace folders, cleaned, under which every path the rules deny lies:
// "." when a rule's glob starts with a wildcard. Callers need look no wider.
func (d *DeniedPaths) Roots() []string {
	if d == nil {
		return nil
	}
	seen := map[string]bool{}
	for _, p := range d.deny {
		seen[p.root()] = true
	}
	out := slices.Sorted(maps.Keys(seen))
	// A root inside another is walked with it.
	kept := out[:0]
	for _, r := range out {
		if len(kept) > 0 && within(r, kept[len(kept)-1]) {
			continue
		}
		kept = append(kept, r)
	}
	return kept
}

// WriteRoots are the folders, cleaned and sorted, that hold what each rule denying writes
// could match: the deepest folder of its glob with no wildcard, "." for a glob starting
// with one.
func (d *DeniedPaths) WriteRoots() []string {
	if d == nil {
		return nil
	}
	var out []string
	for _, p := range d.deny {
		if r := p.root(); p.coversCommand(writeFamily) && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	sort.Strings(out)
	return out
}

// root is the deepest workspace folder, cleaned, holding every path p's glob matches.
func (p Pattern) root() string {
	if p.anything || len(p.subj) == 0 || p.subj[0].kind != tokLit {
		return "."
	}
	lit := p.subj[0].lit
	if len(p.subj) == 1 {
		lit = path.Dir(lit) // the path itself is named: its folder holds it
	} else if i := strings.LastIndexByte(lit, '/'); i >= 0 {
		lit = lit[:i]
	} else {
		lit = "."
	}
	if c, err := commands.CleanPath(lit); err == nil {
		return c
	}
	return "."
}

// within reports whether cleaned workspace path p is root or inside it.
func within(p, root string) bool {
	return root == "." || p == root || strings.HasPrefix(p, root+"/")
}

// Deny says what the rules keep from programs at rel, a cleaned workspace path: reading
// it, and writing it. A folder counts as denied when the rules name it or everything in it;
// a program then sees it empty (or read-only), which may keep more from it than a file
// command is refused, never less.
func (d *DeniedPaths) Deny(rel string) (read, write bool) {
	if d == nil {
		return
	}
	under := underOf(rel)
	for _, p := range d.deny {
		if !read && p.coversCommand(readFamily) {
			read = denies(p, readFamily, rel) || denies(p, readFamily, under)
		}
	}
	return read, d.WriteRule(rel) != ""
}

// underOf stands for any path in the folder rel.
func underOf(rel string) string {
	if rel == "." {
		return everything
	}
	return rel + "/" + everything
}

// WriteRule names the first rule that keeps programs from writing rel, a cleaned
// workspace path (for a folder: it or everything in it), as Deny's write says; "" when
// none does. It is what a message says denied a step's change there.
func (d *DeniedPaths) WriteRule(rel string) string {
	if d == nil {
		return ""
	}
	under := underOf(rel)
	for _, p := range d.deny {
		if p.coversCommand(writeFamily) && (denies(p, writeFamily, rel) || denies(p, writeFamily, under)) {
			return p.String()
		}
	}
	return ""
}

// denies is p.Denies for a path as written and as `./path`, the two spellings a rule may use.
func denies(p Pattern, spec commands.Spec, rel string) bool {
	return p.denies(newTarget(spec, rel)) || p.denies(newTarget(spec, "./"+rel))
}

// String lists the rules, for messages.
func (d *DeniedPaths) String() string {
	if d == nil {
		return ""
	}
	s := make([]string, len(d.deny))
	for i, p := range d.deny {
		s[i] = p.String()
	}
	return strings.Join(s, ", ")
}
