package permission

import (
	"strings"

	"github.com/agentd/agentd/commands"
)

// kind is how rules read a command's subject.
type kind uint8

const (
	kindText   kind = iota // the subject text as it is (URLs, messages, MCP tools...)
	kindShell              // execute_shell: a shell line, parsed
	kindPath               // a file command: one cleaned workspace path
	kindFolder             // list_folder, open_folder: a path and the names in it
	kindSearch             // search_files: a glob over workspace paths
	kindPython             // execute_python_file: the script's cleaned path and its args
)

// kinds are the commands whose subject is not plain text, by name.
var kinds = map[string]kind{
	"execute_shell":       kindShell,
	"read_file":           kindPath,
	"write_file":          kindPath,
	"append_to_file":      kindPath,
	"delete_file":         kindPath,
	"open_file":           kindPath,
	"list_folder":         kindFolder,
	"open_folder":         kindFolder,
	"search_files":        kindSearch,
	"execute_python_file": kindPython,
}

func kindOf(spec commands.Spec) kind { return kinds[spec.Name] }

// families group the file commands that reach the same data: a deny rule naming one of them
// covers them all, so a deny on read_file(secrets/*) also refuses open_file(secrets/k) and a
// search into secrets/, and one on write_file(.git/*) also refuses append_to_file and
// delete_file there.
var families = map[string]string{
	"read_file": "read", "open_file": "read", "list_folder": "read", "open_folder": "read", "search_files": "read",
	"write_file": "write", "append_to_file": "write", "delete_file": "write",
}

// pathElem is one element of a glob seen as a language over bytes: a literal byte, one
// byte of a class, or a run of bytes of a class (star).
type pathElem struct {
	lit     byte
	class   byte // 0: the literal; 'a': any byte; 'n': any byte but '/'
	star    bool
	literal bool
}

// denyElems turns a deny glob into elements: * is any run, ? one or more bytes (a rune).
func denyElems(toks []token) []pathElem {
	var out []pathElem
	for _, t := range toks {
		switch t.kind {
		case tokStar:
			out = append(out, pathElem{class: 'a', star: true})
		case tokOne:
			out = append(out, pathElem{class: 'a'}, pathElem{class: 'a', star: true})
		default:
			for i := 0; i < len(t.lit); i++ {
				out = append(out, pathElem{lit: t.lit[i], literal: true})
			}
		}
	}
	return out
}

// searchElems turns a cleaned search_files glob into elements whose language holds every
// path the search can reach: `**/` and a final `**` are any run, * a run without '/', ? and
// [...] one or more bytes but '/'. It over-approximates, which only makes a deny wider.
func searchElems(g string) []pathElem {
	var out []pathElem
	segs := strings.Split(g, "/")
	for si, seg := range segs {
		if seg == "**" {
			out = append(out, pathElem{class: 'a', star: true})
			continue // its '/' is inside the run
		}
		for i := 0; i < len(seg); i++ {
			switch c := seg[i]; c {
			case '*':
				out = append(out, pathElem{class: 'n', star: true})
			case '?':
				out = append(out, pathElem{class: 'n'}, pathElem{class: 'n', star: true})
			case '[':
				j := strings.IndexByte(seg[i+1:], ']')
				if j < 0 {
					return []pathElem{{class: 'a', star: true}}
				}
				i += j + 1
				out = append(out, pathElem{class: 'n'}, pathElem{class: 'n', star: true})
			case '\\':
				if i+1 < len(seg) {
					i++
				}
				out = append(out, pathElem{lit: seg[i], literal: true})
			default:
				out = append(out, pathElem{lit: c, literal: true})
			}
		}
		if si < len(segs)-1 {
			out = append(out, pathElem{lit: '/', literal: true})
		}
	}
	return out
}

// underElems is es followed by "/" and anything: the paths inside what es names.
func underElems(es []pathElem) []pathElem {
	out := append([]pathElem(nil), es...)
	return append(out, pathElem{lit: '/', literal: true}, pathElem{class: 'a', star: true})
}

// overlap reports whether some string is in the languages of both a and b: a search over
// the product of the two automata, with each (position in a, position in b) visited once.
func overlap(a, b []pathElem) bool {
	seen := map[[2]int]bool{}
	var visit func(i, j int) bool
	visit = func(i, j int) bool {
		key := [2]int{i, j}
		if seen[key] {
			return false
		}
		seen[key] = true
		if i == len(a) && j == len(b) {
			return true
		}
		if i < len(a) && a[i].star && visit(i+1, j) {
			return true
		}
		if j < len(b) && b[j].star && visit(i, j+1) {
			return true
		}
		if i == len(a) || j == len(b) || !compatible(a[i], b[j]) {
			return false
		}
		ni, nj := i+1, j+1
		if a[i].star {
			ni = i
		}
		if b[j].star {
			nj = j
		}
		return visit(ni, nj)
	}
	return visit(0, 0)
}

// compatible reports whether one byte can satisfy both elements.
func compatible(x, y pathElem) bool {
	switch {
	case x.literal && y.literal:
		return x.lit == y.lit
	case x.literal:
		return y.class == 'a' || x.lit != '/'
	case y.literal:
		return x.class == 'a' || y.lit != '/'
	}
	return true // any ∩ non-slash is non-slash, never empty
}
