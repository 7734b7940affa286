package permission

import (
	"slices"
	"strings"

	"github.com/agentd/agentd/commands"
)

// target is a proposal as rules see it: its subject text and what the command's kind makes
// of it (a cleaned path, a parsed line, words).
type target struct {
	spec  commands.Spec
	kind  kind
	text  string   // Subject's text, as proposed
	norm  string   // what exact patterns and allow globs match: the cleaned form
	clean bool     // file kinds: the path (or glob) cleans to inside the workspace
	words []string // python: the cleaned script path and its args
	line  *shellLine
	deny  [][]string // shell: denyCommands(text), computed on first use
}

// denyCmds returns the commands deny rules look at, parsing the line once.
func (t *target) denyCmds() [][]string {
	if t.deny == nil {
		t.deny = denyCommands(t.text)
	}
	return t.deny
}

func newTarget(spec commands.Spec, subject string) *target {
	t := &target{spec: spec, kind: kindOf(spec), text: subject, norm: subject}
	switch t.kind {
	case kindPath, kindFolder, kindSearch:
		if c, err := commands.CleanPath(subject); err == nil {
			t.norm, t.clean = c, true
		}
	case kindPython:
		cmds, ok := splitWords([]token{{kind: tokLit, lit: subject}})
		if !ok || len(cmds) != 1 {
			break
		}
		ws := make([]string, len(cmds[0]))
		for i, w := range cmds[0] {
			ws[i], _ = literalWordPat(w)
		}
		if c, err := commands.CleanPath(ws[0]); err == nil {
			ws[0], t.clean = c, true
			t.words = ws
			t.norm = joinWords(ws)
		}
	case kindShell:
		sl := parseShell(subject)
		t.line = &sl
	}
	return t
}

// joinWords writes words as one line, each quoted when it needs it.
func joinWords(ws []string) string {
	q := make([]string, len(ws))
	for i, w := range ws {
		q[i] = quoteWord(w)
	}
	return strings.Join(q, " ")
}

// allows is Allows for a target.
func (p Pattern) allows(t *target) bool {
	if !p.namesCommand(t.spec) || (isExecute(t.spec.Class) && !p.literalCommand()) {
		return false
	}
	fileKind := t.kind == kindPath || t.kind == kindFolder || t.kind == kindSearch || t.kind == kindPython
	if fileKind && !t.clean {
		return false // a path outside the workspace asks, whatever the rule
	}
	if p.anything {
		return true
	}
	if !p.wild() {
		if fileKind && t.kind != kindPython {
			lit, err := commands.CleanPath(literalText(p.subj))
			return err == nil && lit == t.norm // notes/../x names x
		}
		return matchGlob(p.subj, t.norm, anyRune)
	}
	switch t.kind {
	case kindShell:
		if t.line.problem != "" {
			return false
		}
		for _, c := range t.line.cmds {
			if ok, _ := p.allowsCmd(c); !ok {
				return false
			}
		}
		return true
	case kindPython:
		cmds, ok := splitWords(p.subj)
		if !ok || len(cmds) != 1 {
			return false
		}
		_, ok = matchWordPats(cmds[0], t.words, false)
		return ok
	case kindPath, kindFolder, kindSearch:
		return matchGlob(p.subj, t.norm, anyRune) && !traversal(t.norm, false)
	}
	if traversal(t.text, isExecute(t.spec.Class)) {
		return false
	}
	ok := anyRune
	if isExecute(t.spec.Class) {
		ok = plainRune
	}
	return matchGlob(p.subj, t.text, ok)
}

// allowsCmd reports whether one of p's commands approves the simple command c; when one
// matches but a wildcard stands for a risky form, it says which.
func (p Pattern) allowsCmd(c simpleCmd) (bool, string) {
	cmds, ok := splitWords(p.subj)
	if !ok {
		return false, ""
	}
	why := ""
	for _, pc := range cmds {
		m, ok := matchCmd(pc, c)
		if !ok {
			continue
		}
		if r := riskUnder(c, m, pc.wild()); r != "" {
			why = r
			continue
		}
		return true, ""
	}
	return false, why
}

// matchCmd matches a simple command against one command of a pattern, the covered words
// counted from the first argument. A program named in the rule matches by its resolved name
// (see sameProgram); a wildcard stands only for a bare program name, never a path.
func matchCmd(pc cmdPat, c simpleCmd) (wordMatch, bool) {
	if prog, lit := literalWordPat(pc[0]); lit {
		if !sameProgram(prog, c.prog) {
			return wordMatch{}, false
		}
		return matchWordPats(pc[1:], c.args, false)
	}
	if strings.Contains(c.prog, "/") {
		return wordMatch{}, false
	}
	m, ok := matchWordPats(pc, c.words(), false)
	if ok {
		m.covered = m.covered[1:]
	}
	return m, ok
}

// literalText is the text of a glob without wildcards.
func literalText(toks []token) string {
	var b strings.Builder
	for _, t := range toks {
		b.WriteString(t.lit)
	}
	return b.String()
}

// riskUnder returns the first risky form of c that a wildcard of the match stands for.
func riskUnder(c simpleCmd, m wordMatch, wild bool) string {
	if !wild {
		return ""
	}
	for _, r := range risks(c) {
		if r.arg < 0 || m.covered[r.arg] {
			return r.reason
		}
	}
	return ""
}

// denies is Denies for a target.
func (p Pattern) denies(t *target) bool {
	if !p.coversCommand(t.spec) {
		return false
	}
	if p.anything || matchGlob(p.subj, t.text, anyRune) || matchGlob(p.subj, t.norm, anyRune) {
		return true
	}
	switch t.kind {
	case kindShell:
		return p.deniesCommands(t.denyCmds())
	case kindPython:
		return len(t.words) > 0 && matchGlob(p.subj, t.words[0], anyRune)
	case kindFolder:
		if !t.clean {
			return false
		}
		inside := searchElems(t.norm + "/*")
		if t.norm == "." {
			inside = searchElems("*")
		}
		return overlap(denyElems(p.subj), inside)
	case kindSearch:
		if !t.clean {
			return false
		}
		g := searchElems(t.norm)
		return overlap(denyElems(p.subj), g) || overlap(denyElems(p.subj), underElems(g))
	}
	return false
}

// hidesCode reports whether p is a deny rule for shell lines and the line runs code no deny
// rule can read (see unknownCode): a person is asked, even under execute_shell(**).
func (p Pattern) hidesCode(t *target) bool {
	if t.kind != kindShell || !p.coversCommand(t.spec) {
		return false
	}
	return slices.ContainsFunc(t.denyCmds(), func(ws []string) bool { return ws[0] == unknownCode })
}

// withGaps lets any words come between a deny pattern's words, so that `git push *` also
// covers `git -C x push`: a deny may refuse more than it names, never less.
// A pattern without wildcards (a stored "deny always") stays exact.
func withGaps(pc cmdPat) cmdPat {
	if !pc.wild() {
		return pc
	}
	out := cmdPat{pc[0]}
	for _, w := range pc[1:] {
		out = append(out, wordPat{many: true}, w)
	}
	return append(out, wordPat{many: true})
}

// deniesCommands reports whether p covers one of the commands a line may run (see
// denyCommands), word by word or as text.
func (p Pattern) deniesCommands(run [][]string) bool {
	cmds, ok := splitWords(p.subj)
	ok = ok && len(cmds) == 1 // a pattern of several commands matches only as text
	for _, ws := range run {
		if matchGlob(p.subj, strings.Join(ws, " "), anyRune) {
			return true
		}
		if !ok {
			continue
		}
		for _, pc := range cmds {
			if ws[0] == unknownProgram { // the rule's program, whatever it is: match the rest
				if _, ok := matchWordPats(withGaps(pc)[1:], ws[1:], true); ok && pc.wild() {
					return true
				}
				continue
			}
			if _, ok := matchWordPats(withGaps(pc), ws, true); ok {
				return true
			}
		}
	}
	return false
}
