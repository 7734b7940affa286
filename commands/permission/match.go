package permission

import (
	"strings"
	"unicode/utf8"

	"github.com/agentd/agentd/commands"
)

// shellMeta are the characters that let one shell command line do more than run one plain
// command: separators (; & | newline), substitution (` $), redirection and process
// substitution (< >), and subshells or zsh glob qualifiers (( )).
const shellMeta = ";&|`$<>()"

// Allows reports whether p approves running the command spec with this subject.
// The rules, strictest first:
//
//   - Execute commands (ClassExecute, and any class this package does not know) are approved
//     only when p's command part names them literally: `*(*)` or `files.*(*)` never
//     approves one. MCP tools are execute commands, so `web.*(*)` approves none of them.
//   - For execute commands a wildcard (`*` or `?`) never matches a shell metacharacter
//     ; & | ` $ < > ( ), a control character (newline, CR, tab, NUL...), an invisible
//     format character, U+2028/U+2029 or invalid UTF-8. So `execute_shell(git status*)`
//     approves `git status --short` but not `git status; rm -rf ~`, `git status && curl x|sh`,
//     `git status $(rm -rf ~)` or "git status\nrm". Metacharacters written literally in
//     the pattern still match themselves. A glob approves which program runs, not what its
//     arguments name: `execute_shell(cat notes/*)` approves `cat notes/a /etc/passwd`.
//   - For other commands a wildcard matches anything.
//   - In every class, a glob with a wildcard never approves a subject holding a `..` path
//     element: two dots with no letter, digit, `_`, `-` or `.` beside them (`%2e` counts as
//     a dot; for execute commands quotes and backslashes are dropped first, as the shell
//     drops them). So `write_file(notes/*)` does not approve `notes/../config.toml` and
//     `execute_python_file(scripts/*)` does not approve `scripts/../x.py`, while
//     `notes/v1..v2` is fine.
//   - The glob `**` alone, as in `execute_shell(**)`, approves every subject with no
//     restriction: it is how a person says "anything at all", and it is never implied.
//   - A glob without wildcards matches exactly its text, so exact patterns (AlwaysPattern)
//     approve exactly what they name.
func (p Pattern) Allows(spec commands.Spec, subject string) bool {
	if p.IsZero() {
		return false
	}
	exec := isExecute(spec.Class)
	if exec && !p.literalCommand() {
		return false
	}
	if !matchGlob(p.cmd, spec.Name, anyRune) {
		return false
	}
	if p.anything {
		return true
	}
	if p.wild() && traversal(subject, exec) {
		return false
	}
	ok := anyRune
	if exec {
		ok = plainRune
	}
	return matchGlob(p.subj, subject, ok)
}

// Denies reports whether p, as a deny pattern, covers the command spec with this subject.
// Deny patterns are not restricted: wildcards match every character and a wildcard command
// part covers execute commands too, since a broader deny only asks a person more often.
// A deny pattern is a convenience, not a sandbox: it matches the subject's text, and a
// command line can name the same thing in other words.
func (p Pattern) Denies(spec commands.Spec, subject string) bool {
	if p.IsZero() || !matchGlob(p.cmd, spec.Name, anyRune) {
		return false
	}
	return p.anything || matchGlob(p.subj, subject, anyRune)
}

// AppliesTo reports whether p, as an allow pattern (allow true) or a deny pattern, can
// decide some proposal of the command spec: its command part matches the name, and an
// allow pattern for an execute command names it literally. It is how agentctl shows which
// patterns bear on each command; whether one matches a proposal depends on its subject.
func (p Pattern) AppliesTo(spec commands.Spec, allow bool) bool {
	if p.IsZero() || !matchGlob(p.cmd, spec.Name, anyRune) {
		return false
	}
	return !allow || !isExecute(spec.Class) || p.literalCommand()
}

// isExecute reports whether class gets the execute rules; unknown classes do, to be safe.
func isExecute(c commands.Class) bool {
	switch c {
	case commands.ClassRead, commands.ClassWriteWorkspace, commands.ClassNetwork, commands.ClassMessage:
		return false
	}
	return true
}

func anyRune(rune) bool { return true }

// plainRune reports whether a wildcard on an execute subject may match r.
func plainRune(r rune) bool {
	return r != utf8.RuneError && !invisible(r) && !strings.ContainsRune(shellMeta, r)
}

// matchGlob reports whether toks match all of s, wildcards consuming only characters ok
// accepts. It is the usual linear glob match that backtracks only to the last star; that
// stays exact when every wildcard shares one character class (a differential test checks).
// Characters are UTF-8 runes; each byte of invalid UTF-8 counts as one (utf8.RuneError).
func matchGlob(toks []token, s string, ok func(rune) bool) bool {
	ti, si := 0, 0
	starT, starS := -1, 0
	for {
		if ti < len(toks) {
			switch t := toks[ti]; t.kind {
			case tokStar:
				starT, starS = ti, si
				ti++
				continue
			case tokOne:
				if si < len(s) {
					if r, w := utf8.DecodeRuneInString(s[si:]); ok(r) {
						ti, si = ti+1, si+w
						continue
					}
				}
			default:
				if strings.HasPrefix(s[si:], t.lit) {
					ti, si = ti+1, si+len(t.lit)
					continue
				}
			}
		} else if si == len(s) {
			return true
		}
		// Mismatch: let the last star take one more character, if it may.
		if starT < 0 || starS >= len(s) {
			return false
		}
		r, w := utf8.DecodeRuneInString(s[starS:])
		if !ok(r) {
			return false
		}
		starS += w
		ti, si = starT+1, starS
	}
}

// traversal reports whether s holds a `..` path element: two dots with neither a letter,
// digit, `_`, `-` nor another dot directly before or after them, so `a/../b`, `..\x` and
// `'..'` count but `main..dev` and `...` do not. %2e counts as a dot, as URL paths decode it.
// For a shell line, quotes and backslashes go first: sh reads `.\.` and `.'.'` as `..`.
func traversal(s string, shell bool) bool {
	if shell {
		s = strings.NewReplacer(`\`, "", `'`, "", `"`, "").Replace(s)
	}
	if strings.Contains(s, "%") {
		s = strings.NewReplacer("%2e", ".", "%2E", ".").Replace(s)
	}
	for i := 0; ; {
		j := strings.Index(s[i:], "..")
		if j < 0 {
			return false
		}
		j += i
		if (j == 0 || !elementByte(s[j-1])) && (j+2 == len(s) || !elementByte(s[j+2])) {
			return true
		}
		i = j + 1
	}
}

// elementByte reports whether b can be part of a file name next to `..` and make it not a
// `..` element. Bytes of non-ASCII characters count as name bytes.
func elementByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' ||
		b == '_' || b == '-' || b == '.' || b >= utf8.RuneSelf
}
