package permission

import (
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
