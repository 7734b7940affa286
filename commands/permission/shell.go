package permission

import (
	"fmt"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentd/agentd/commands"
	"mvdan.cc/sh/v3/syntax"
)

// maxLineWords bounds the words of one command line the matcher looks at; a longer line asks.
const maxLineWords = 1000

// maxNesting bounds how deep deny rules look into `sh -c '…'`, eval and substitutions.
const maxNesting = 4

// simpleCmd is one simple command of a shell line: its program and its argv after quote
// removal. prog is the resolved name (see resolveProgram); raw is the word as unquoted.
type simpleCmd struct {
	prog   string
	raw    string
	args   []string
	inputs []string // the files its input redirections read (sh < build.sh)
}

// words returns the program's resolved name followed by the arguments.
func (c simpleCmd) words() []string { return append([]string{c.prog}, c.args...) }

// String prints the command the way explanations show it.
func (c simpleCmd) String() string {
	ws := append([]string{c.raw}, c.args...)
	for i, w := range ws {
		ws[i] = quoteWord(w)
	}
	return strings.Join(ws, " ")
}

// shellLine is a parsed execute_shell command line.
type shellLine struct {
	cmds    []simpleCmd // the simple commands, in order; complete only when problem == ""
	problem string      // why the line is not plain; "" when it is
}

// parseShell reads line as `/bin/sh -c LINE` (POSIX, as dash) would. The line is plain when
// it is only simple commands of literal words joined by ; && || newlines and pipes, with
// redirections only to plain files inside the workspace; otherwise problem says why not.
func parseShell(line string) shellLine {
	if p := lineChars(line); p != "" {
		return shellLine{problem: p}
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX), syntax.KeepComments(true)).Parse(strings.NewReader(line), "")
	if err != nil {
		return shellLine{problem: "the shell cannot parse it: " + err.Error()}
	}
	if continuedComment(f) {
		return shellLine{problem: "a comment ends in a backslash: /bin/sh ends the comment at the line's end, so the next line is a command of its own"}
	}
	var sl shellLine
	n := 0
	for _, st := range f.Stmts {
		if sl.problem = sl.addStmt(st); sl.problem != "" {
			return shellLine{problem: sl.problem}
		}
	}
	for _, c := range sl.cmds {
		n += 1 + len(c.args)
	}
	if n > maxLineWords {
		return shellLine{problem: fmt.Sprintf("it has %d words: at most %d are checked", n, maxLineWords)}
	}
	if len(sl.cmds) == 0 {
		return shellLine{problem: "it runs no command"}
	}
	return sl
}

// continuedComment reports whether a comment in f runs on past a backslash and newline.
// The parser reads that as a line continuation; /bin/sh (dash, bash) ends a comment at the
// newline, backslash or not, and runs the next line.
func continuedComment(f *syntax.File) bool {
	found := false
	syntax.Walk(f, func(n syntax.Node) bool {
		if c, ok := n.(*syntax.Comment); ok && strings.Contains(c.Text, "\n") {
			found = true
		}
		return !found
	})
	return found
}

// lineChars refuses characters that make a line read differently than it runs.
func lineChars(line string) string {
	for i, r := range line {
		if r == '\n' || r == ' ' {
			continue
		}
		if r == utf8.RuneError {
			if _, w := utf8.DecodeRuneInString(line[i:]); w == 1 {
				return "it holds invalid UTF-8"
			}
			return "it holds U+FFFD, the replacement character"
		}
		if invisible(r) {
			return fmt.Sprintf("it holds the %s %s, which reads differently than it runs", describeRune(r), escapeRune(r))
		}
		if unicode.Is(unicode.Zs, r) { // looks like a blank, but the shell reads it as a letter
			return fmt.Sprintf("it holds the space character U+%04X, which the shell reads as part of a word", r)
		}
	}
	return ""
}

// addStmt adds the simple commands of st, or says why st is not plain.
func (sl *shellLine) addStmt(st *syntax.Stmt) string {
	switch {
	case st.Background:
		return "it starts a command in the background (&)"
	case st.Negated:
		return "it negates a command (!)"
	case st.Coprocess || st.Disown:
		return "it starts a coprocess"
	}
	var inputs []string
	for _, r := range st.Redirs {
		if p := plainRedirect(r); p != "" {
			return p
		}
		if r.Op == syntax.RdrIn {
			target, _ := literalWord(r.Word) // plainRedirect found it literal
			inputs = append(inputs, target)
		}
	}
	switch c := st.Cmd.(type) {
	case *syntax.CallExpr:
		if len(c.Assigns) > 0 {
			return "it sets a variable (" + c.Assigns[0].Name.Value + "=…), which can change what a program does"
		}
		if len(c.Args) == 0 {
			return "it runs no command"
		}
		var words []string
		for _, w := range c.Args {
			s, p := literalWord(w)
			if p != "" {
				return p
			}
			words = append(words, s)
		}
		sl.cmds = append(sl.cmds, simpleCmd{prog: resolveProgram(words[0]), raw: words[0], args: words[1:], inputs: inputs})
		return ""
	case *syntax.BinaryCmd:
		switch c.Op {
		case syntax.AndStmt, syntax.OrStmt, syntax.Pipe:
		default:
			return "it uses the operator " + c.Op.String()
		}
		if p := sl.addStmt(c.X); p != "" {
			return p
		}
		return sl.addStmt(c.Y)
	case nil:
		return "it runs no command"
	default:
		return "it uses shell syntax beyond plain commands (" + nodeName(c) + ")"
	}
}

// nodeName names a compound command for explanations.
func nodeName(c syntax.Command) string {
	switch c.(type) {
	case *syntax.Subshell:
		return "a subshell ( … )"
	case *syntax.Block:
		return "a block { … }"
	case *syntax.IfClause:
		return "if"
	case *syntax.WhileClause:
		return "a loop"
	case *syntax.ForClause:
		return "a for loop"
	case *syntax.CaseClause:
		return "case"
	case *syntax.FuncDecl:
		return "a function definition"
	}
	return fmt.Sprintf("%T", c)
}

// plainRedirect accepts only <, > and >> to /dev/null or a plain relative file inside the
// workspace (not under .git, whose files git runs), and duplicating descriptors 0-2.
func plainRedirect(r *syntax.Redirect) string {
	if r.N != nil && r.N.Value != "0" && r.N.Value != "1" && r.N.Value != "2" {
		return "it redirects file descriptor " + r.N.Value
	}
	target, p := literalWord(r.Word)
	if p != "" {
		return p
	}
	switch r.Op {
	case syntax.DplIn, syntax.DplOut:
		if target == "0" || target == "1" || target == "2" || target == "-" {
			return ""
		}
		return "it duplicates file descriptor " + quoteWord(target)
	case syntax.RdrOut, syntax.AppOut, syntax.RdrIn, syntax.ClbOut:
	default:
		return "it uses the redirection " + r.Op.String()
	}
	if target == "/dev/null" {
		return ""
	}
	if strings.HasPrefix(target, "/") || strings.HasPrefix(target, "~") {
		return "it redirects to " + quoteWord(target) + ", outside the workspace"
	}
	clean, err := commands.CleanPath(target)
	if err != nil || traversal(target, false) {
		return "it redirects to " + quoteWord(target) + ", which leaves the workspace"
	}
	if clean == ".git" || strings.HasPrefix(clean, ".git/") || strings.Contains("/"+clean+"/", "/.git/") {
		return "it redirects into " + quoteWord(target) + ", where git finds code to run"
	}
	return ""
}

// literalWord returns w after quote removal when it is literal text: no parameter,
// command or arithmetic substitution and no unquoted glob or brace characters.
func literalWord(w *syntax.Word) (string, string) {
	if w == nil {
		return "", "it has a redirection without a target"
	}
	var b strings.Builder
	for i, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			s, problem := unquoteLit(p.Value, i == 0)
			if problem != "" {
				return "", problem
			}
			b.WriteString(s)
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", "it uses $'…' quoting"
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				return "", `it uses $"…" quoting`
			}
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok {
					return "", "it substitutes " + partName(q) + " inside double quotes"
				}
				u, ok := unquoteDouble(l.Value)
				if !ok {
					return "", "it has a $ or ` inside double quotes"
				}
				b.WriteString(u)
			}
		default:
			return "", "it substitutes " + partName(part)
		}
	}
	return b.String(), ""
}

func partName(p syntax.WordPart) string {
	switch p.(type) {
	case *syntax.ParamExp:
		return "a variable ($…)"
	case *syntax.CmdSubst:
		return "a command's output ($(…) or `…`)"
	case *syntax.ArithmExp:
		return "arithmetic ($((…)))"
	case *syntax.ProcSubst:
		return "a process (<(…))"
	}
	return "an expansion"
}

// unquoteLit removes backslashes from an unquoted literal and refuses what the shell
// would expand: globs, $, {a,b} and {1..3} (brace expansion in bash) and ~user (a leading ~
// or ~/ is the home folder); find's {} stays.
func unquoteLit(s string, first bool) (string, string) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			if i+1 < len(s) {
				i++
			}
			if s[i] != '\n' { // a backslash and newline is a line continuation, even at the end
				b.WriteByte(s[i]) // a backslash ending the line stays, as in the shell
			}
		case c == '*' || c == '?' || c == '[':
			return "", fmt.Sprintf("it has an unquoted %q, a file-name pattern the shell expands", c)
		case c == '$' || c == '`':
			return "", fmt.Sprintf("it has an unquoted %q", c)
		case c == '{' && (strings.Contains(s[i:], ",") || strings.Contains(s[i:], "..")):
			return "", "it has an unquoted {…,…} (brace expansion in some shells)"
		case c == '~' && i == 0 && first && len(s) > 1 && s[1] != '/':
			return "", "it names another user's home folder (~user)"
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), ""
}

// unquoteDouble removes the backslashes double quotes remove: before $ ` " \ only. A bare
// $ or ` is refused even where the shell would keep it literally ("$ "): readers differ.
func unquoteDouble(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\", s[i+1]) >= 0 {
			i++
		} else if s[i] == '$' || s[i] == '`' {
			return "", false
		}
		b.WriteByte(s[i])
	}
	return b.String(), true
}

// systemBins are the folders whose programs a bare name means: /bin/rm is rm.
var systemBins = map[string]bool{
	"/bin": true, "/usr/bin": true, "/usr/local/bin": true,
	"/sbin": true, "/usr/sbin": true, "/usr/local/sbin": true,
}

// resolveProgram returns the name a rule matches for the program word w: a bare name as it
// is, a path into a system folder (/bin, /usr/bin, …) as its base name, any other path as
// the path itself, which a bare-name rule never matches (./rm is not rm).
func resolveProgram(w string) string {
	if !strings.Contains(w, "/") {
		return w
	}
	if strings.HasPrefix(w, "/") {
		c := path.Clean(w)
		if dir, base := path.Split(c); systemBins[strings.TrimSuffix(dir, "/")] {
			return base
		}
		return c
	}
	return w
}

// quoteWord writes w so a person reads one word: bare when it is plain, else in single quotes.
func quoteWord(w string) string {
	if w != "" && strings.IndexFunc(w, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%^", r))
	}) < 0 {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

// ParseShell reads line as `/bin/sh -c LINE` would, with the one parser the rules use, and
// returns its simple commands, each the program word (as written, after quote removal)
// then its arguments. When the line is not plain commands (a substitution, a loop, a
// variable), cmds is nil and problem says why: a preview then shows the line itself.
func ParseShell(line string) (cmds [][]string, problem string) { return shellWords(line, false) }

// ShellFileWords is ParseShell with, after each simple command's words, the files its
// input redirections read (sh < build.sh gives sh, build.sh): every word of the line that
// may name a file it runs or reads. An exact grant binds the files they name.
func ShellFileWords(line string) (cmds [][]string, problem string) { return shellWords(line, true) }

func shellWords(line string, inputs bool) (cmds [][]string, problem string) {
	sl := parseShell(line)
	if sl.problem != "" {
		return nil, sl.problem
	}
	for _, c := range sl.cmds {
		if a := aliasBuiltin(c); a != "" {
			// dash expands an alias on the lines after it: a listed word may run another program.
			return nil, "it defines an alias (" + a + "), which changes what a later word runs"
		}
		ws := append([]string{c.raw}, c.args...)
		if inputs {
			ws = append(ws, c.inputs...)
		}
		cmds = append(cmds, ws)
	}
	return cmds, ""
}

// CodeRunners names the programs of line that run code given in their arguments (sh -c,
// eval, env, find -exec, python -c, git -c …), once each in order: a preview lists them,
// but what they run is in their arguments, which a person must read too.
func CodeRunners(line string) []string {
	sl := parseShell(line)
	var out []string
	seen := map[string]bool{}
	for _, c := range sl.cmds {
		if len(risks(c)) > 0 && !seen[c.prog] {
			seen[c.prog] = true
			out = append(out, c.prog)
		}
	}
	return out
}

// aliasBuiltin returns "alias" or "unalias" when c runs that builtin, directly or through
// `command` or `builtin` (command alias ls=rm defines the alias all the same), else "".
func aliasBuiltin(c simpleCmd) string {
	w := c.words()
	for len(w) > 1 && (w[0] == "command" || w[0] == "builtin") {
		w = w[1:]
		for len(w) > 0 && strings.HasPrefix(w[0], "-") {
			w = w[1:]
		}
		if len(w) > 0 {
			w[0] = resolveProgram(w[0])
		}
	}
	if len(w) > 0 && (w[0] == "alias" || w[0] == "unalias") {
		return w[0]
	}
	return ""
}
