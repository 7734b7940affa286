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

// Allows reports whether p approves running the command spec with this subject (see
// Subject). The rules, strictest first:
//
//   - Execute commands (ClassExecute, and any class this package does not know) are approved
//     only when p's command part names them literally: `*(*)` or `files.*(*)` never
//     approves one. MCP tools are execute commands, so `web.*(*)` approves none of them.
//   - A glob without wildcards matches exactly its text, so exact patterns (AlwaysPattern)
//     approve exactly what they name, and the glob `**` alone, as in `execute_shell(**)`,
//     approves every subject: it is how a person says "anything at all", never implied.
//   - execute_shell: the line is parsed as /bin/sh would (see parseShell); a glob with a
//     wildcard approves it only when it is plain (simple commands of literal words joined by
//     ; && || | and newlines) and every simple command matches one of the glob's commands
//     word by word (see splitWords): `execute_shell(git status*)` approves `git status -s`
//     and `git status && git status`, never `git status-x`, `git status $(x)` or `git -c
//     k=v status`. The program is matched by its resolved name (/bin/rm, \rm, 'rm' are
//     rm; ./rm is not). A word a wildcard stands for never holds a `..` path element, a
//     control or invisible character, and never makes one of the risky forms (see risks):
//     runners such as sh, env, xargs or sudo, find -exec, git -c, and so on.
//   - File commands (read_file, write_file, append_to_file, delete_file, open_file,
//     list_folder, open_folder, search_files) match the cleaned workspace-relative path
//     (./a//b is a/b); a path that leaves the workspace or is absolute is never approved.
//   - execute_python_file matches its cleaned path and its args as words, like a shell
//     command: `execute_python_file(scripts/*)` approves scripts without args,
//     `execute_python_file(scripts/build.py *)` that script with any.
//   - Other execute commands: a wildcard never matches a shell metacharacter ; & | ` $ < >
//     ( ), a control or invisible character, or invalid UTF-8.
//   - In every class, a glob with a wildcard never approves a subject holding a `..` path
//     element: two dots with no letter, digit, `_`, `-` or `.` beside them (`%2e` counts).
func (p Pattern) Allows(spec commands.Spec, subject string) bool {
	return p.allows(newTarget(spec, subject))
}

// Denies reports whether p, as a deny pattern, covers the command spec with this subject.
// Deny patterns are not restricted: wildcards match every character and a wildcard command
// part covers execute commands too. They match more than the subject's text, so that
// another spelling of the same thing is refused too:
//
//   - execute_shell: every command the line may run (see denyCommands), word by word with
//     the program's resolved name (`rm *` covers /bin/rm, \rm, r""m, X=1 rm, rm<TAB>-rf,
//     sh -c 'rm x', $(rm x)) and as text, besides the line's own text.
//   - File commands: the cleaned path besides the text, and a deny naming one command of a
//     family (read_file, open_file, list_folder, open_folder, search_files; or write_file,
//     append_to_file, delete_file) covers them all. A search or a folder listing is covered
//     when it could reach a path the deny glob matches (`read_file(secrets/*)` covers
//     search_files(**) and list_folder(secrets)).
func (p Pattern) Denies(spec commands.Spec, subject string) bool {
	return p.denies(newTarget(spec, subject))
}

// AppliesTo reports whether p, as an allow pattern (allow true) or a deny pattern, can
// decide some proposal of the command spec: its command part matches the name (for a deny,
// also another command of its file family), and an allow pattern for an execute command
// names it literally. It is how agentctl shows which patterns bear on each command; whether
// one matches a proposal depends on its subject.
func (p Pattern) AppliesTo(spec commands.Spec, allow bool) bool {
	if allow {
		return p.namesCommand(spec) && (!isExecute(spec.Class) || p.literalCommand())
	}
	return p.coversCommand(spec)
}

// namesCommand reports whether p's command part matches spec's name.
func (p Pattern) namesCommand(spec commands.Spec) bool {
	return !p.IsZero() && matchGlob(p.cmd, spec.Name, anyRune)
}

// coversCommand is namesCommand for deny patterns: a literal name covers its file family.
func (p Pattern) coversCommand(spec commands.Spec) bool {
	if p.namesCommand(spec) {
		return true
	}
	if p.IsZero() || !p.literalCommand() {
		return false
	}
	f := families[p.cmd[0].lit]
	return f != "" && f == families[spec.Name]
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
