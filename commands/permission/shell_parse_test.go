package permission

import (
	"fmt"
	"strings"
	"testing"
)

// showCmds renders what splitWords read: commands split by " ; ", words by spaces, each
// word in brackets; a run of words is <*>, a glob star *, one character ?, a quoted word
// ends in ' (quoted).
func showCmds(cmds []cmdPat) string {
	var out []string
	for _, c := range cmds {
		var words []string
		for _, w := range c {
			if w.many {
				words = append(words, "<*>")
				continue
			}
			var b strings.Builder
			for _, t := range w.glob {
				switch t.kind {
				case tokLit:
					b.WriteString(t.lit)
				case tokStar:
					b.WriteString("*")
				case tokOne:
					b.WriteString("?")
				}
			}
			q := ""
			if w.quoted {
				q = "'"
			}
			words = append(words, "["+b.String()+"]"+q)
		}
		out = append(out, strings.Join(words, " "))
	}
	return strings.Join(out, " ; ")
}

// TestSplitWordsReadsLikeTheShell: each rule of the word splitter, one case a branch: what
// it reads as words and commands, and the shell syntax it refuses (ok false).
func TestSplitWordsReadsLikeTheShell(t *testing.T) {
	lit := func(s string) []token { return []token{{kind: tokLit, lit: s}} }
	cases := []struct {
		name string
		toks []token
		want string // "" with ok false
	}{
		{"blanks_end_words", lit("git  status\t-s"), "[git] [status] [-s]"},
		{"single_quotes_group_and_keep_everything", lit(`echo 'a b $x \ "'`), `[echo] [a b $x \ "]'`},
		{"empty_single_quotes_are_a_word", lit("echo ''"), "[echo] []'"},
		{"double_quotes_group", lit(`echo "a b"`), `[echo] [a b]'`},
		{"double_quotes_escape_four", lit(`echo "\$ \` + "`" + ` \" \\"`), "[echo] [$ ` \" \\]'"},
		{"double_quotes_keep_other_backslashes", lit(`echo "\n"`), `[echo] [\n]'`},
		{"double_quoted_dollar_refused", lit(`echo "$HOME"`), ""},
		{"double_quoted_backtick_refused", lit("echo \"`id`\""), ""},
		{"backslash_escapes_outside_quotes", lit(`echo a\ b \;`), "[echo] [a b] [;]"},
		{"trailing_backslash_is_dropped", lit(`echo a\`), "[echo] [a]"},
		{"semicolon_ends_command", lit("a;b"), "[a] ; [b]"},
		{"newline_ends_command", lit("a\nb"), "[a] ; [b]"},
		{"pipe_ends_command", lit("a | b"), "[a] ; [b]"},
		{"or_ends_command", lit("a || b"), "[a] ; [b]"},
		{"and_ends_command", lit("a && b"), "[a] ; [b]"},
		{"lone_ampersand_refused", lit("a & b"), ""},
		{"ampersand_at_end_refused", lit("a &"), ""},
		{"redirect_refused", lit("a > f"), ""},
		{"subshell_refused", lit("(a)"), ""},
		{"dollar_refused", lit("echo $x"), ""},
		{"brace_refused", lit("echo {a,b}"), ""},
		{"open_single_quote_refused", lit("echo 'a"), ""},
		{"open_double_quote_refused", lit(`echo "a`), ""},
		{"empty_commands_dropped", lit(";; a ;"), "[a]"},
		{"wildcard_tokens_join_the_word", []token{{kind: tokLit, lit: "cat notes/"}, {kind: tokStar}, {kind: tokLit, lit: ".md x"}, {kind: tokOne}}, "[cat] [notes/*.md] [x?]"},
		{"lone_star_is_a_run_of_words", []token{{kind: tokLit, lit: "git "}, {kind: tokStar}, {kind: tokLit, lit: " -v"}}, "[git] <*> [-v]"},
		{"trailing_star_is_short_for_a_run", []token{{kind: tokLit, lit: "git status"}, {kind: tokStar}}, "[git] [status] <*>"},
		{"quoted_star_is_one_word", []token{{kind: tokLit, lit: "rm '"}, {kind: tokStar}, {kind: tokLit, lit: "'"}}, "[rm] [*]'"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmds, ok := splitWords(c.toks)
			if ok != (c.want != "") {
				t.Fatalf("ok = %v, want %v (read %s)", ok, c.want != "", showCmds(cmds))
			}
			if got := showCmds(cmds); ok && got != c.want {
				t.Fatalf("read %s, want %s", got, c.want)
			}
		})
	}
}

// Lines that hide a second program; each must either list it or be refused.
func TestParseShellListsOrRefusesSecondProgram(t *testing.T) {
	lines := []string{
		"echo a; rm -rf x", "echo a && rm x", "echo a\nrm x", "echo $(rm x)", "echo `rm x`",
		"cat <(rm x)", "env X=1 rm x", "sh -c 'rm x'", "cat <<EOF\n$(rm x)\nEOF", "cat <<'EOF'\nx\nEOF\nrm x",
		"alias ls=rm; ls x", "echo a \\\nrm x", "X=1 rm x", "echo a | rm x", "echo a || rm x",
		"{ rm x; }", "(rm x)", "echo >$(rm x)", "echo ${x:-$(rm x)}", "exec rm x", "command rm x",
		"eval 'rm x'", "xargs rm < f", "find . -exec rm {} ;", "nice rm x", "timeout 1 rm x",
		"echo a # \\\nrm x", "echo a\r\nrm x", "echo a\rrm x", "time rm x", "f() { rm x; }; f",
		"echo 'a\nb'; rm x", "[[ -e x ]] && rm x", "echo $'\\n'rm", "cat <<EOF\nx\nEOF rm x",
		"echo a &>/dev/null; rm x", "echo a >&2 rm x", "! rm x", "rm x &", "IFS=x; echo", ". ./script",
		"source ./s", "exec 3>f; rm x", "trap 'rm x' EXIT", "echo a\x00; rm x", "echo a\u2028rm x", "echo a\u0085rm x",
		"echo a\vrm x", "echo a\frm x", "echo a\trm x", "busybox rm x",
	}
	runsArgs := setOf("env", "sh", "exec", "command", "eval", "xargs", "find", "nice", "timeout", "time",
		"trap", "busybox", ".", "source")
	for _, l := range lines {
		cmds, p := ParseShell(l)
		if p != "" {
			continue // the preview shows the raw line and why
		}
		if strings.Contains(l, "rm") && !strings.Contains(fmt.Sprint(cmds), "rm") {
			t.Errorf("ParseShell(%q) = %q: the second program is neither listed nor refused", l, cmds)
		}
		for _, c := range cmds {
			if runsArgs[c[0]] && len(CodeRunners(l)) == 0 {
				t.Errorf("CodeRunners(%q) is empty, though %s runs code from its arguments", l, c[0])
			}
		}
	}
}

// dash expands aliases in `sh -c` and reads each line after the one before ran, so
// `alias ls=rm` on one line makes the next line's ls run rm; the preview lists ls.
func TestAliasHidingProgramIsListed(t *testing.T) {
	for _, l := range []string{"alias ls=rm\nls x", "alias ls=rm; ls x", "unalias ls\nls x", "echo a && alias x=rm"} {
		if cmds, p := ParseShell(l); p == "" {
			t.Errorf("ParseShell(%q) = %q, plain; want a problem naming the alias", l, cmds)
		}
	}
}

// Keys encoding/json folds onto one struct field (case, ſ for s, K for k) are refused.
func TestFoldedKeysRefused(t *testing.T) {
	for _, a := range []string{
		`{"path":"a","contents":"x","contentſ":"y"}`, `{"path":"a","Path":"b"}`,
		`{"path":"a","path":"b"}`, `{"url":"a","URL":"b"}`, `{"kind":"a","\u212aind":"b"}`,
	} {
		if err := checkArgs([]byte(a)); err == nil {
			t.Errorf("checkArgs(%s) = nil, want a refusal", a)
		}
	}
}

// Lines whose listed programs hide another program must either fail ParseShell
// or name a code runner.
func TestHiddenProgramsFailOrNameCodeRunner(t *testing.T) {
	for _, line := range []string{
		"command alias ls=rm\nls -rf x",
		"command -- alias ls=rm\nls x",
		"builtin alias ls=rm\nls x",
		"\\alias ls=rm\nls x",
		"'alias' ls=rm\nls x",
		"/usr/bin/alias ls=rm\nls x",
		"command unalias ls\nls x",
		"trap 'rm -rf x' EXIT",
		"eval rm x",
		"env -S 'rm x'",
		"find . -exec rm {} +",
		"command eval rm x",
		"exec rm x",
		"xargs rm < list",
		". ./script",
		"command . ./script",
		"git -c core.pager=rm log",
		"ls x\r\nrm y",
		"ls x\x1b[2Krm y",
		"cat <<EOF\nEOF\nrm x",
	} {
		cmds, problem := ParseShell(line)
		if strings.Contains(line, "alias ") && problem == "" {
			t.Errorf("%q: an alias through command/builtin is not refused: %q", line, cmds)
		}
		runners := CodeRunners(line)
		if problem == "" && len(runners) == 0 {
			t.Errorf("%q: plain, no code runner: %q", line, cmds)
		} else {
			t.Logf("%q: problem=%q runners=%v cmds=%q", line, problem, runners, cmds)
		}
	}
}
