package permission

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentd/agentd/commands"
	"mvdan.cc/sh/v3/syntax"
)

// checkExact checks that the exact pattern for subject, after a trip through its text,
// approves subject and none of the one-character variants.
func checkExact(t *testing.T, subject string) {
	t.Helper()
	p, err := Exact(shellSpec.Name, subject)
	if err != nil {
		if len(subject) < MaxPatternLen/4-len(shellSpec.Name) {
			t.Fatalf("Exact(%q): %v", subject, err)
		}
		return // too long to remember; the person approves once
	}
	q, err := Parse(p.String())
	if err != nil {
		t.Fatalf("Exact(%q) = %q, which does not parse: %v", subject, p, err)
	}
	if q.String() != p.String() {
		t.Fatalf("Exact(%q) = %q reparses as %q", subject, p, q)
	}
	for _, pat := range []Pattern{p, q} {
		if !pat.Allows(shellSpec, subject) || !pat.Denies(shellSpec, subject) {
			t.Fatalf("%s does not match its own subject %q", pat, subject)
		}
		for _, v := range variants(subject) {
			if pat.Allows(shellSpec, v) || (pat.Denies(shellSpec, v) && !sameCommands(subject, v)) {
				t.Fatalf("%s (exact for %q) also matches %q", pat, subject, v)
			}
		}
	}
	if utf8.ValidString(subject) {
		args, _ := json.Marshal(map[string]string{"command": subject})
		a, err := AlwaysPattern(shellSpec, args)
		if err != nil || a.String() != p.String() {
			t.Fatalf("AlwaysPattern(%s) = %q, %v; want %q", args, a, err, p)
		}
	}
}

// sameCommands reports whether line b runs every command line a runs (as deny rules see
// them): an exact deny pattern also refuses its command spelled another way ("q\n" for
// "q") or run beside others ("x; q").
// A line the shell cannot parse is split on blanks, so a deny may cover it more widely.
func sameCommands(a, b string) bool {
	if _, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(b), ""); err != nil {
		return true
	}
	key := func(ws []string) string { // words the shell would expand are kept as written
		return strings.NewReplacer(`\`, "", `'`, "", `"`, "").Replace(strings.Join(ws, "\x00"))
	}
	in := map[string]bool{}
	for _, ws := range denyCommands(b) {
		in[key(ws)] = true
	}
	for _, ws := range denyCommands(a) {
		if !in[key(ws)] && ws[0] != unknownProgram { // only a wildcard deny matches a computed program
			return false
		}
	}
	return true
}

// variants returns strings one character away from s: one added, removed or changed.
func variants(s string) []string {
	out := []string{s + "x", "x" + s, s + "\n", s + "*"}
	if s != "" {
		_, w := utf8.DecodeLastRuneInString(s)
		out = append(out, s[:len(s)-w], s[1:])
		for _, c := range []string{"x", "*", "?", "\\", "(", "\xff"} {
			if !strings.HasPrefix(s, c) {
				_, w := utf8.DecodeRuneInString(s)
				out = append(out, c+s[w:])
			}
		}
	}
	return out
}

func TestAlwaysPatternRandomSubjects(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "Z", " ", "/", ".", "*", "?", "\\", "(", ")", ";", "&", "|", "$", "`", ">", "<",
		"\n", "\r", "\t", "\x00", "\x7f", "é", "\u202e", "\u2028", "\ufffd", "\xff", "\xc3", "x", "\\x", "\\n"}
	for range 3000 {
		var b strings.Builder
		for range rng.IntN(40) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		checkExact(t, b.String())
	}
}

// FuzzPattern: any pattern that parses prints as text that parses to the same pattern and
// decides the same way; matching agrees with the reference matcher; and the exact pattern
// for any subject matches that subject and not its neighbours.
func FuzzPattern(f *testing.F) {
	for _, seed := range [][2]string{
		{"execute_shell(git status*)", "git status; rm -rf ~"},
		{"execute_shell(**)", "git status\nrm"},
		{"read_file", "notes/../a"},
		{"write_file(notes/*)", "notes/a.txt"},
		{`execute_shell(echo \(a\) (b) \x0a\xff)`, "echo (a) (b) \n\xff"},
		{"*(a?b*c)", "axbyyc"},
		{"web.*(*)", "q"},
		{"read_file(", ")"},
		{`x(\`, `\`},
	} {
		f.Add(seed[0], seed[1])
	}
	specs := []commands.Spec{shellSpec, readSpec, mcpSpec}
	f.Fuzz(func(t *testing.T, pattern, subject string) {
		if p, err := Parse(pattern); err == nil {
			text := p.String()
			if len(text) > MaxPatternLen {
				t.Fatalf("Parse(%q).String() = %q is over the limit", pattern, text)
			}
			q, err := Parse(text)
			if err != nil {
				t.Fatalf("Parse(%q).String() = %q, which does not parse: %v", pattern, text, err)
			}
			if q.String() != text {
				t.Fatalf("Parse(%q) prints %q, which prints %q", pattern, text, q.String())
			}
			for _, spec := range append(specs, commands.Spec{Name: p.Command(), Class: commands.ClassExecute}) {
				if p.Allows(spec, subject) != q.Allows(spec, subject) || p.Denies(spec, subject) != q.Denies(spec, subject) {
					t.Fatalf("%q and its text %q decide %s(%q) differently", pattern, text, spec.Name, subject)
				}
			}
			if len(subject) <= 256 {
				for _, ok := range []func(rune) bool{anyRune, plainRune} {
					if got, want := matchGlob(p.subj, subject, ok), refMatch(p.subj, subject, ok); got != want {
						t.Fatalf("matchGlob(%q, %q) = %v, reference says %v", text, subject, got, want)
					}
				}
			}
		}
		checkExact(t, subject)
	})
}

// FuzzShellLine: the command parser never panics, and no wildcard rule ever allows a line
// the shell would expand, run in the background, or run a runner through: an independent
// walk over the syntax tree says which lines are not plain.
func FuzzShellLine(f *testing.F) {
	for _, seed := range []string{
		"git status", "git status; rm -rf ~", "echo $(id)", "ls `id`", "X=1 ls", "ls &",
		"cat <<EOF\nx\nEOF", "ls > ../x", "(ls)", "sh -c 'rm x'", "find . -exec rm {} +",
		"git -c a=b status", `r''m x`, "\\rm x", "ls\t-l", "echo ${IFS}", "echo $((1))",
		"ls *.go", "for f in a; do ls; done", "a() { ls; }", "ls 2>&1 | wc -l", "ls \u202e",
	} {
		f.Add(seed)
	}
	layer := rules("agent", []string{"execute_shell(*)", "execute_shell(sh *)", "execute_shell(git *)",
		"execute_shell(find *)", "execute_shell(env *)"}, []string{"execute_shell(rm *)"})
	f.Fuzz(func(t *testing.T, line string) {
		_ = denyCommands(line)
		e := Explain(shellSpec, shellArgs(line), Options{}, layer)
		if e.Verdict.Effect != Allow {
			return
		}
		if why := notPlain(line); why != "" {
			t.Fatalf("%q is allowed (%+v) but %s", line, e.Verdict, why)
		}
		for _, c := range parseShell(line).cmds {
			if runners[c.prog] || c.prog == "rm" {
				t.Fatalf("%q is allowed (%+v) but runs %s", line, e.Verdict, c.prog)
			}
		}
	})
}

// notPlain says why a line is not plain commands, from the syntax tree alone, or "".
func notPlain(line string) string {
	if strings.ContainsFunc(line, func(r rune) bool { return r != '\n' && (invisible(r) || r == utf8.RuneError) }) {
		return "it holds a control or invisible character"
	}
	file, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(line), "")
	if err != nil {
		return "it does not parse"
	}
	why := ""
	syntax.Walk(file, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CmdSubst, *syntax.ParamExp, *syntax.ArithmExp, *syntax.ProcSubst, *syntax.Subshell,
			*syntax.Block, *syntax.IfClause, *syntax.WhileClause, *syntax.ForClause, *syntax.CaseClause,
			*syntax.FuncDecl, *syntax.Assign:
			why = fmt.Sprintf("it holds %T", n)
		case *syntax.Stmt:
			if n.Background {
				why = "it runs in the background"
			}
		case *syntax.Redirect:
			if n.Op == syntax.Hdoc || n.Op == syntax.DashHdoc {
				why = "it has a here-document"
			}
		case *syntax.Lit:
			if strings.ContainsAny(regexp.MustCompile(`\\(.|$)`).ReplaceAllString(n.Value, ""), "$`") {
				why = "it holds $ or a backtick"
			}
		}
		return why == ""
	})
	return why
}
