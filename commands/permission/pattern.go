// Package permission decides, from patterns a person wrote or approved, whether a command an
// agent proposes may run without asking anyone.
//
// Each step the model proposes one command (a name and JSON args). The agent cycle passes it,
// with the command's Spec, to Evaluate together with the rule layers that apply: the global
// rules from the config file and the agent's own (its config plus the "approve always" and
// "deny always" patterns a person stored, built by AlwaysPattern and DenyPattern). The verdict
// is Allow (run it and say which pattern approved it), Deny, or Ask (wait for a person).
//
// Patterns look like AutoGPT's: `read_file(*)`, `execute_shell(git status*)`,
// `write_file(notes/*)`, `web.search(*)`. They are stricter where it matters: an execute
// command is approved only by a pattern that names it literally; a shell line is parsed as
// /bin/sh would parse it (mvdan.cc/sh) and rules match its programs and argv word by word,
// never its text, so `execute_shell(git status*)` cannot approve `git status; rm -rf ~`,
// `git status-x` or `git -c core.pager=sh status`, and anything but plain commands asks;
// file rules match the cleaned workspace path. See Pattern for the syntax, Allows and
// Denies for the exact rules, and Explain for the reasons agentctl policy test shows.
//
// The package is pure: no I/O, no clock, no store. Callers own loading and saving patterns.
package permission

import (
	"encoding/hex"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxPatternLen bounds a pattern's text in bytes; patterns are one-line rules, not scripts.
const MaxPatternLen = 500

// maxCommandLen bounds the command part; real names are at most 64 bytes (MCP's limit).
const maxCommandLen = 128

type tokenKind uint8

const (
	tokLit  tokenKind = iota // literal bytes
	tokStar                  // any run of characters (maybe restricted, see Allows)
	tokOne                   // exactly one character (maybe restricted)
)

type token struct {
	kind tokenKind
	lit  string
}

// Pattern is one parsed permission pattern, `command(glob)`.
//
// The command part is a name such as `read_file` or `web.search` (lowercase letters, digits,
// `_`, `.` and `-`) or a glob over names (`files.*`, `*`); `command` alone means `command(*)`.
// The glob in parentheses matches the command's subject (see Subject), the whole of it:
//
//   - `*` matches any run of characters, including none, `/` and spaces. `**` is the same
//     as `*`, except that a glob which is only `**` is the "anything at all" pattern (see
//     Allows).
//   - `?` matches exactly one character.
//   - `\` escapes: `\*` `\?` `\\` `\(` `\)` are those characters; `\n` `\r` `\t` are
//     newline, CR and tab; `\xHH` is the byte HH. Any other escape is an error.
//
// Parentheses inside the glob must balance unless escaped. Control characters, invisible
// format characters and invalid UTF-8 must be written as escapes, so what a person reads is
// what matches. The zero Pattern matches nothing.
//
// An allow pattern for execute_shell or execute_python_file may end in `+write`:
// `execute_shell(make fmt)+write`. What a pattern approves runs bounded — the workspace
// read-only, no network, an empty HOME — so that a program which loads code from a file
// the agent wrote can still change nothing; `+write` keeps the workspace writable for the
// commands it approves (the network stays off).
type Pattern struct {
	cmd      []token // glob over command names
	subj     []token // glob over the subject
	anything bool    // the glob is `**`: every subject, no restrictions
	write    bool    // `+write`: what it approves may write the workspace
}

// writeSuffix ends a pattern whose approvals may write the workspace.
const writeSuffix = "+write"

// writable are the commands whose patterns may say +write: those whose programs the
// sandbox bounds.
var writable = map[string]bool{"execute_shell": true, "execute_python_file": true}

// Sandboxed reports whether the command runs its programs in the sandbox, which bounds
// what runs unasked (and a pattern for it may end in +write).
func Sandboxed(command string) bool { return writable[command] }

// SyntaxError says what is wrong with a pattern and where.
type SyntaxError struct {
	Pattern string
	Column  int // 1-based, in characters
	Problem string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("permission pattern %q: column %d: %s", e.Pattern, e.Column, e.Problem)
}

// Parse reads a pattern. Its errors are *SyntaxError.
func Parse(s string) (Pattern, error) {
	var p Pattern
	col, problem := checkText(s)
	text := s
	if rest, ok := strings.CutSuffix(s, writeSuffix); ok && problem == "" {
		p.write, s = true, rest
		if !strings.HasSuffix(rest, ")") {
			col, problem = utf8.RuneCountInString(rest)+1, "+write follows the closing parenthesis: write the command and its subject first, for example execute_shell(make fmt)+write"
		}
	}
	if problem == "" {
		rs := []rune(s)
		var open int
		open, col, problem = p.parseCommand(rs)
		if problem == "" {
			col, problem = p.parseSubject(rs, open)
		}
	}
	if problem == "" && p.write && !(p.literalCommand() && writable[p.cmd[0].lit]) {
		col, problem = utf8.RuneCountInString(s)+1, "+write only means something for execute_shell and execute_python_file, whose programs run in the sandbox: remove it"
	}
	if problem != "" {
		return Pattern{}, &SyntaxError{Pattern: text, Column: col, Problem: problem}
	}
	return p, nil
}

// Write reports whether p ends in +write: what it approves may write the workspace.
func (p Pattern) Write() bool { return p.write }

// checkText checks the length and the characters, so the grammar sees only printable text.
func checkText(s string) (col int, problem string) {
	if len(s) > MaxPatternLen {
		return utf8.RuneCountInString(s[:MaxPatternLen]) + 1, fmt.Sprintf("the pattern is %d bytes: at most %d", len(s), MaxPatternLen)
	}
	if s == "" {
		return 1, "empty pattern: write a command name, for example read_file or read_file(*)"
	}
	for i, r := range s {
		col++
		if r == utf8.RuneError {
			if _, w := utf8.DecodeRuneInString(s[i:]); w == 1 {
				return col, fmt.Sprintf("invalid UTF-8 (byte 0x%02x)", s[i])
			}
		}
		if invisible(r) {
			return col, fmt.Sprintf("%s must be written as an escape: %s", describeRune(r), escapeRune(r))
		}
	}
	return 0, ""
}

// parseCommand reads the command part into p.cmd and returns the index of the '(' after it,
// or len(rs) when there is none.
func (p *Pattern) parseCommand(rs []rune) (open, col int, problem string) {
	var lit strings.Builder
	i := 0
	for ; i < len(rs) && rs[i] != '('; i++ {
		switch r := rs[i]; {
		case r == '*':
			p.cmd = addStar(flush(p.cmd, &lit))
		case r == '?':
			p.cmd = append(flush(p.cmd, &lit), token{kind: tokOne})
		case nameChar(r):
			lit.WriteRune(r)
		case r == ')':
			return 0, i + 1, "unbalanced parentheses: ')' closes nothing"
		case r == '\\':
			return 0, i + 1, "bad escape: escapes belong inside the parentheses, not in the command name"
		default:
			return 0, i + 1, fmt.Sprintf("%q cannot appear in a command name (use lowercase letters, digits, _ . - or the wildcards * ?)", r)
		}
	}
	p.cmd = flush(p.cmd, &lit)
	if i == 0 {
		return 0, 1, "empty command name: write it before '(', for example read_file(*)"
	}
	if n := len(string(rs[:i])); n > maxCommandLen {
		return 0, maxCommandLen + 1, fmt.Sprintf("the command name is %d bytes: at most %d", n, maxCommandLen)
	}
	return i, 0, ""
}

// parseSubject reads the glob between rs[open], a '(', and the ')' that must end rs into
// p.subj. With no '(' (open == len(rs)) the glob is `*`.
func (p *Pattern) parseSubject(rs []rune, open int) (col int, problem string) {
	if open == len(rs) { // `command` alone
		p.subj = []token{{kind: tokStar}}
		return 0, ""
	}
	var lit strings.Builder
	depth, stars, closed := 0, 0, -1
scan:
	for i := open + 1; i < len(rs); i++ {
		switch r := rs[i]; r {
		case '*':
			stars++
			p.subj = addStar(flush(p.subj, &lit))
		case '?':
			p.subj = append(flush(p.subj, &lit), token{kind: tokOne})
		case '\\':
			n, b, err := unescape(rs[i+1:])
			if err != "" {
				return i + 1, err
			}
			lit.WriteString(b)
			i += n
		case '(':
			depth++
			lit.WriteRune(r)
		case ')':
			if depth == 0 {
				closed = i
				break scan
			}
			depth--
			lit.WriteRune(r)
		default:
			lit.WriteRune(r)
		}
	}
	p.subj = flush(p.subj, &lit)
	switch {
	case closed < 0:
		return open + 1, `unbalanced parentheses: '(' is never closed (write \( and \) for literal parentheses)`
	case closed+1 < len(rs) && rs[closed+1] == ')':
		return closed + 2, `unbalanced parentheses: ')' closes nothing (write \) for a literal parenthesis)`
	case closed+1 < len(rs):
		return closed + 2, "unexpected text after the closing ')'"
	}
	if stars >= 2 && len(p.subj) == 1 && p.subj[0].kind == tokStar {
		p.anything = true // the glob is only stars: `**`
	}
	return 0, ""
}

// Exact returns the pattern that matches command with exactly subject and nothing else.
// It fails when command is not a plain name or the pattern would exceed MaxPatternLen.
func Exact(command, subject string) (Pattern, error) {
	if command == "" || len(command) > maxCommandLen || strings.IndexFunc(command, func(r rune) bool { return !nameChar(r) }) >= 0 {
		return Pattern{}, fmt.Errorf("permission: %q is not a command name", command)
	}
	p := Pattern{cmd: []token{{kind: tokLit, lit: command}}}
	if subject != "" {
		p.subj = []token{{kind: tokLit, lit: subject}}
	}
	if n := len(p.String()); n > MaxPatternLen {
		return Pattern{}, fmt.Errorf("permission: the exact pattern for this %s would be %d bytes: at most %d", command, n, MaxPatternLen)
	}
	return p, nil
}

// IsZero reports whether p is the zero Pattern, which matches nothing.
func (p Pattern) IsZero() bool { return len(p.cmd) == 0 }

// String returns the pattern in canonical form; Parse(p.String()) gives back the same
// pattern. `command` alone prints as `command(*)` and runs of `*` as one.
func (p Pattern) String() string {
	if p.IsZero() {
		return ""
	}
	var b strings.Builder
	for _, t := range p.cmd {
		switch t.kind {
		case tokStar:
			b.WriteByte('*')
		case tokOne:
			b.WriteByte('?')
		default:
			b.WriteString(t.lit)
		}
	}
	b.WriteByte('(')
	if p.anything {
		b.WriteString("**")
	} else {
		writeSubject(&b, p.subj)
	}
	b.WriteByte(')')
	if p.write {
		b.WriteString(writeSuffix)
	}
	return b.String()
}

// MarshalText writes p.String(), so config files and JSON can hold patterns as strings.
func (p Pattern) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText parses a pattern.
func (p *Pattern) UnmarshalText(b []byte) error {
	q, err := Parse(string(b))
	if err != nil {
		return err
	}
	*p = q
	return nil
}

// Command returns the command part, a name or a glob over names.
func (p Pattern) Command() string {
	s := p.String()
	if i := strings.IndexByte(s, '('); i >= 0 {
		return s[:i]
	}
	return s
}

// literalCommand reports whether the command part names one command, with no wildcard.
func (p Pattern) literalCommand() bool {
	return len(p.cmd) == 1 && p.cmd[0].kind == tokLit
}

// wild reports whether the subject glob has a wildcard.
func (p Pattern) wild() bool { return p.anything || globWild(p.subj) }

// writeSubject writes subject tokens, escaping only the parentheses that do not pair up, so
// that `echo (a)` stays readable and an unpaired `(` still parses.
func writeSubject(b *strings.Builder, toks []token) {
	// Pair literal parentheses across all tokens, as Parse counts them.
	var lits []string
	for _, t := range toks {
		if t.kind == tokLit {
			lits = append(lits, t.lit)
		}
	}
	all := strings.Join(lits, "")
	raw := map[int]bool{} // byte offsets in all of parentheses written unescaped
	var stack []int
	for i := 0; i < len(all); i++ {
		switch all[i] {
		case '(':
			stack = append(stack, i)
		case ')':
			if len(stack) > 0 {
				raw[stack[len(stack)-1]], raw[i] = true, true
				stack = stack[:len(stack)-1]
			}
		}
	}
	off := 0
	for _, t := range toks {
		switch t.kind {
		case tokStar:
			b.WriteByte('*')
		case tokOne:
			b.WriteByte('?')
		default:
			base := off
			writeLiteral(b, t.lit, func(i int) bool { return raw[base+i] })
			off += len(t.lit)
		}
	}
}

// writeLiteral writes s escaped; rawParen says which parentheses (by offset in s) may stay bare.
func writeLiteral(b *strings.Builder, s string, rawParen func(int) bool) {
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && w == 1:
			fmt.Fprintf(b, `\x%02x`, s[i])
		case r == '(' || r == ')':
			if rawParen == nil || !rawParen(i) {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		case r == '*' || r == '?' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case invisible(r):
			b.WriteString(escapeRune(r))
		default:
			b.WriteString(s[i : i+w])
		}
		i += w
	}
}

// escapeRune writes an invisible rune as an escape.
func escapeRune(r rune) string {
	switch r {
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	}
	var b strings.Builder
	for _, c := range []byte(string(r)) {
		fmt.Fprintf(&b, `\x%02x`, c)
	}
	return b.String()
}

func describeRune(r rune) string {
	if unicode.IsControl(r) {
		return fmt.Sprintf("control character U+%04X", r)
	}
	return fmt.Sprintf("invisible character U+%04X", r)
}

// unescape reads the escape after a backslash from rs. It returns how many runes it used, the
// bytes it stands for, or a problem.
func unescape(rs []rune) (int, string, string) {
	const valid = `only \* \? \\ \( \) \n \r \t and \xHH are escapes`
	if len(rs) == 0 {
		return 0, "", `bad escape: the pattern ends in '\' (write \\ for a backslash)`
	}
	switch r := rs[0]; r {
	case '*', '?', '\\', '(', ')':
		return 1, string(r), ""
	case 'n':
		return 1, "\n", ""
	case 'r':
		return 1, "\r", ""
	case 't':
		return 1, "\t", ""
	case 'x':
		if len(rs) >= 3 && rs[1] < utf8.RuneSelf && rs[2] < utf8.RuneSelf {
			if b, err := hex.DecodeString(string(rs[1:3])); err == nil {
				return 3, string(b), ""
			}
		}
		return 0, "", `bad escape: \x needs two hex digits, as in \x0a`
	default:
		return 0, "", fmt.Sprintf(`bad escape \%c: %s`, r, valid)
	}
}

func flush(toks []token, lit *strings.Builder) []token {
	if lit.Len() > 0 {
		toks = append(toks, token{kind: tokLit, lit: lit.String()})
		lit.Reset()
	}
	return toks
}

// addStar appends a star unless one ends toks already: `**` is `*`.
func addStar(toks []token) []token {
	if n := len(toks); n > 0 && toks[n-1].kind == tokStar {
		return toks
	}
	return append(toks, token{kind: tokStar})
}

// nameChar reports whether r may appear in a command name.
func nameChar(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-'
}

// invisible reports characters a person cannot see or that break a line: they may not
// appear bare in a pattern, and wildcards on execute subjects never match them.
func invisible(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029'
}
