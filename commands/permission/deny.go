package permission

import (
	"bytes"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// maxDenyCommands bounds the commands one line yields for deny rules to look at.
const maxDenyCommands = 2000

// denyCommands returns every command a line may run, as words with the program resolved,
// for deny rules to match: the simple commands anywhere in it (inside substitutions,
// subshells, loops and functions too), each prefixed program (env X=1 rm, sudo rm, xargs rm,
// find -exec rm) and the code given to sh -c, su -c or eval, parsed in turn, a few levels
// deep. Words the shell would expand are kept as written ($X). Lines the parser refuses give
// their words split on blanks, quotes dropped. It over-reports on purpose: a deny rule may
// refuse more than it names, never less.
func denyCommands(line string) [][]string {
	var out [][]string
	collectDeny(line, 0, &out)
	return out
}

func collectDeny(line string, depth int, out *[][]string) {
	if strings.Contains(line, "\\\n") {
		// The parser continues a comment past a backslash and newline, the shell does not
		// (see continuedComment): read the lines apart as well.
		collectDenyOnce(strings.ReplaceAll(line, "\\\n", "\n"), depth, out)
	}
	collectDenyOnce(line, depth, out)
}

func collectDenyOnce(line string, depth int, out *[][]string) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(line), "")
	if err != nil {
		f, err = syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(line), "")
	}
	if err != nil {
		for _, part := range strings.FieldsFunc(line, func(r rune) bool { return strings.ContainsRune(";&|\n()`", r) }) {
			if ws := strings.Fields(strings.NewReplacer(`\`, "", `'`, "", `"`, "", "$", " ").Replace(part)); len(ws) > 0 {
				addDeny(ws, depth, out)
			}
		}
		return
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		if c, ok := n.(*syntax.CallExpr); ok && len(c.Args) > 0 {
			ws := make([]string, len(c.Args))
			for i, w := range c.Args {
				ws[i] = denyWord(w)
			}
			addDeny(ws, depth, out)
			if _, p := literalWord(c.Args[0]); p != "" && len(*out) < maxDenyCommands {
				// $(which rm), "${x:-rm}", $x, r[m]: the shell computes the program, any at all
				*out = append(*out, append([]string{unknownProgram}, ws[1:]...))
			}
		}
		return len(*out) < maxDenyCommands
	})
}

// denyWord is w after quote removal, or as written when the shell would expand it.
func denyWord(w *syntax.Word) string {
	if s, p := literalWord(w); p == "" {
		return s
	}
	var b bytes.Buffer
	if syntax.NewPrinter().Print(&b, w) != nil {
		return ""
	}
	return b.String()
}

// unknownProgram stands for a program word the shell computes when it runs: every deny
// rule's program matches it, and its arguments still have to match the rule's.
const unknownProgram = "\x00program"

// unknownCode stands for code read from where no rule can see it (a shell reading its
// standard input): a line holding it asks when a deny rule applies (see hidesCode).
const unknownCode = "\x00code"

// shells read code: after -c, from a script operand, or from standard input without one.
var shells = setOf("sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "csh", "tcsh")

// addDeny adds words as a command and the commands it runs in turn.
func addDeny(ws []string, depth int, out *[][]string) {
	if len(*out) >= maxDenyCommands || len(ws) == 0 {
		return
	}
	prog := resolveProgram(ws[0])
	*out = append(*out, append([]string{prog}, ws[1:]...))
	if base := path.Base(ws[0]); base != prog { // ./rm and /opt/x/rm are rm to a deny rule
		*out = append(*out, append([]string{base}, ws[1:]...))
		prog = base
	}
	if depth >= maxNesting {
		return
	}
	if shells[prog] && readsStdin(ws) {
		*out = append(*out, []string{unknownCode})
	}
	switch {
	case prog == "eval":
		collectDeny(strings.Join(ws[1:], " "), depth+1, out)
	case prog == "alias": // dash expands an alias defined on an earlier line
		for _, w := range ws[1:] {
			if _, v, ok := strings.Cut(w, "="); ok {
				collectDeny(v, depth+1, out)
			}
		}
	case runners[prog] || prog == "find" || interpreters[prog]:
		for i := 1; i < len(ws); i++ {
			if shellCode(prog, ws, i) {
				collectDeny(ws[i+1], depth+1, out)
			}
			if o := ws[i]; runners[prog] && strings.HasPrefix(o, "-") { // env --split-string='rm x', env -S'rm x'
				if _, v, ok := strings.Cut(o, "="); ok {
					collectDeny(v, depth+1, out)
				} else if len(o) > 2 && o[1] != '-' {
					collectDeny(o[2:], depth+1, out)
				}
			}
			if !strings.HasPrefix(ws[i], "-") && !strings.Contains(ws[i], "=") {
				addDeny(ws[i:], depth+1, out)
			}
		}
	}
	riskyCode(prog, ws, depth, out)
}

// riskyCode adds the commands a program's risky arguments may run (see risks): rsync -e
// CMD, tar --to-command=CMD, git -c alias.x='!CMD', awk 'BEGIN{system("CMD")}', sed '1e CMD'.
// Such code is in the program's own language, so every run of words in it, split at
// anything but letters, digits and - . / _, counts as a command that may start there.
// A runner's words (vim -c '!CMD', vim +'!CMD') are read the same way.
func riskyCode(prog string, ws []string, depth int, out *[][]string) {
	if depth >= maxNesting {
		return
	}
	for _, r := range risks(simpleCmd{prog: prog, args: ws[1:]}) {
		if r.arg < 0 {
			for _, w := range ws[1:] {
				codeWords(w, depth, out)
			}
			return
		}
		codeWords(ws[1+r.arg], depth, out)
	}
}

// codeWords adds every run of words in code, split as riskyCode says, as a command.
func codeWords(code string, depth int, out *[][]string) {
	fields := strings.FieldsFunc(code, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-./_", c))
	})
	if len(fields) < 2 && len(fields) == len(strings.Fields(code)) {
		return // one plain word: the runner's own loop has it
	}
	for i := range fields {
		addDeny(fields[i:], depth+1, out)
	}
}

// shellCode reports whether ws[i] is the -c option of a shell (or su), so ws[i+1] is code.
func shellCode(prog string, ws []string, i int) bool {
	if i+1 >= len(ws) || !runners[prog] {
		return false
	}
	return shortHas(ws[i], "c") || ws[i] == "--command"
}

// readsStdin reports whether a shell's words name neither -c code nor a script, so it runs
// what its standard input holds (echo rm x | sh, sh <<< 'rm x').
func readsStdin(ws []string) bool {
	for i := 1; i < len(ws); i++ {
		switch o := ws[i]; {
		case o == "-o" || o == "+o":
			i++ // its value names an option
		case o == "-s" || o == "--":
			return o == "-s" || i+1 == len(ws)
		case strings.HasPrefix(o, "-") || strings.HasPrefix(o, "+"):
			if shortHas(o, "c") {
				return false
			}
		default:
			return false
		}
	}
	return true
}
