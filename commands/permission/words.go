package permission

import (
	"path"
	"slices"
	"strings"
	"unicode/utf8"
)

// wordPat is one word of a command pattern: a glob within one word, or (many) a `*` standing
// alone, which matches any run of whole words, none included.
type wordPat struct {
	many   bool
	quoted bool // written with quotes: a quoted "*" is one word of any text
	glob   []token
}

// cmdPat is one simple command of a pattern: its words, the program first.
type cmdPat []wordPat

// wild reports whether c has a wildcard anywhere.
func (c cmdPat) wild() bool {
	return slices.ContainsFunc(c, func(w wordPat) bool { return w.many || globWild(w.glob) })
}

func globWild(g []token) bool {
	return slices.ContainsFunc(g, func(t token) bool { return t.kind != tokLit })
}

// splitWords reads a glob's tokens as shell words, the way the shell reads a line: unquoted
// spaces (and tabs) end a word; quotes group and are removed; a backslash makes the next
// character literal; unquoted ; && || | and newlines end a command. Wildcards stay wildcards
// inside quotes too (write \* for a literal star). ok is false when the text uses any other
// shell syntax ($, `, <, >, (, ), a lone &), which a word pattern cannot stand for.
//
// A `*` standing alone is a run of any words. A `*` ending the last word of a command, with
// text before it that does not end in `/`, is short for that text plus a lone `*`: so
// `git status*` is `git status *`, while `notes/*` stays a glob within one word.
func splitWords(toks []token) (cmds []cmdPat, ok bool) {
	var w wordSplitter
	for _, t := range toks {
		if t.kind != tokLit {
			w.flushLit()
			w.word, w.inWord = append(w.word, token{kind: t.kind}), true
			continue
		}
		for i := 0; i < len(t.lit); i++ {
			if i, ok = w.step(t.lit, i); !ok {
				return nil, false
			}
		}
	}
	if w.quote != 0 {
		return nil, false
	}
	w.endCmd()
	return w.cmds, true
}

// wordSplitter is splitWords' reading so far: the commands read, the command and word
// being read, and the quote open (0, ' or ").
type wordSplitter struct {
	cmds   []cmdPat
	cur    cmdPat
	word   []token
	lit    strings.Builder
	inWord bool // a word has begun, maybe an empty quoted one
	quoted bool // the word has quotes in it
	quote  byte
}

// step reads the byte s[i] and returns the index of the last byte it read (an escape or
// an operator reads two); false: s uses shell syntax a word pattern cannot stand for.
func (w *wordSplitter) step(s string, i int) (int, bool) {
	c := s[i]
	switch w.quote {
	case '\'':
		if c == '\'' {
			w.quote = 0
		} else {
			w.lit.WriteByte(c)
		}
		return i, true
	case '"':
		return w.doubleQuoted(s, i)
	}
	return w.unquoted(s, i)
}

// doubleQuoted reads s[i] inside double quotes: a backslash escapes only $ ` " and \;
// $ and ` (expansions) are refused.
func (w *wordSplitter) doubleQuoted(s string, i int) (int, bool) {
	switch c := s[i]; {
	case c == '"':
		w.quote = 0
	case c == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\", s[i+1]) >= 0:
		i++
		w.lit.WriteByte(s[i])
	case c == '$' || c == '`':
		return i, false
	default:
		w.lit.WriteByte(c)
	}
	return i, true
}

// unquoted reads s[i] outside quotes: quotes open, a backslash escapes, blanks end a word,
// ; newline | || && end a command, and any other shell syntax is refused.
func (w *wordSplitter) unquoted(s string, i int) (int, bool) {
	switch c := s[i]; {
	case c == '\'' || c == '"':
		w.quote, w.inWord, w.quoted = c, true, true
	case c == '\\':
		if i+1 < len(s) {
			i++
			w.lit.WriteByte(s[i])
			w.inWord = true
		}
	case c == ' ' || c == '\t':
		w.endWord()
	case c == '\n' || c == ';':
		w.endCmd()
	case c == '|':
		if i+1 < len(s) && s[i+1] == '|' {
			i++
		}
		w.endCmd()
	case c == '&':
		if i+1 >= len(s) || s[i+1] != '&' {
			return i, false
		}
		i++
		w.endCmd()
	case strings.IndexByte("$`<>(){}", c) >= 0:
		return i, false
	default:
		w.lit.WriteByte(c)
		w.inWord = true
	}
	return i, true
}

// flushLit ends the literal run of the word being read.
func (w *wordSplitter) flushLit() {
	if w.lit.Len() > 0 {
		w.word = append(w.word, token{kind: tokLit, lit: w.lit.String()})
		w.lit.Reset()
	}
}

// endWord ends the word being read, if one has begun.
func (w *wordSplitter) endWord() {
	w.flushLit()
	if w.inWord {
		w.cur = append(w.cur, wordPat{glob: w.word, quoted: w.quoted})
	}
	w.word, w.inWord, w.quoted = nil, false, false
}

// endCmd ends the command being read, if it has a word.
func (w *wordSplitter) endCmd() {
	w.endWord()
	if len(w.cur) > 0 {
		w.cmds = append(w.cmds, finishCmd(w.cur))
	}
	w.cur = nil
}

// finishCmd turns lone stars into runs of words and applies the trailing-star shorthand.
func finishCmd(c cmdPat) cmdPat {
	for i, w := range c {
		if !w.quoted && len(w.glob) == 1 && w.glob[0].kind == tokStar {
			c[i] = wordPat{many: true}
		}
	}
	last := c[len(c)-1]
	if n := len(last.glob); !last.many && !last.quoted && n >= 2 && last.glob[n-1].kind == tokStar {
		if prev := last.glob[n-2]; prev.kind == tokLit && !strings.HasSuffix(prev.lit, "/") {
			c[len(c)-1] = wordPat{glob: last.glob[:n-1]}
			c = append(c, wordPat{many: true})
		}
	}
	return c
}

// literalWordPat returns the text of a word pattern without wildcards.
func literalWordPat(w wordPat) (string, bool) {
	if w.many || globWild(w.glob) {
		return "", false
	}
	var b strings.Builder
	for _, t := range w.glob {
		b.WriteString(t.lit)
	}
	return b.String(), true
}

// wordMatch is how a command's words matched a pattern: which words a wildcard covered.
type wordMatch struct {
	covered []bool // by index into the words matched (the arguments, or all words)
}

// matchWordPats matches pats against all of words. A wildcard never covers a word holding a
// control or invisible character or a `..` path element; deny (loose) lifts both limits.
// It returns the first match found, trying the fewest words for a run first.
func matchWordPats(pats []wordPat, words []string, loose bool) (wordMatch, bool) {
	covered := make([]bool, len(words))
	failed := map[[2]int]bool{}
	var m func(pi, wi int) bool
	m = func(pi, wi int) bool {
		if pi == len(pats) {
			return wi == len(words)
		}
		key := [2]int{pi, wi}
		if failed[key] {
			return false
		}
		p := pats[pi]
		if p.many {
			for j := wi; j <= len(words); j++ {
				if j > wi && !(loose || coverable(words[j-1])) {
					break
				}
				if m(pi+1, j) {
					for k := wi; k < j; k++ {
						covered[k] = true
					}
					return true
				}
			}
		} else if wi < len(words) && matchWord(p.glob, words[wi], loose) && m(pi+1, wi+1) {
			covered[wi] = globWild(p.glob)
			return true
		}
		failed[key] = true
		return false
	}
	if !m(0, 0) {
		return wordMatch{}, false
	}
	return wordMatch{covered: covered}, true
}

// matchWord matches one word glob against one word.
func matchWord(g []token, w string, loose bool) bool {
	if loose {
		return matchGlob(g, w, anyRune)
	}
	if globWild(g) && !coverable(w) {
		return false
	}
	return matchGlob(g, w, visibleRune)
}

// coverable reports whether a wildcard may stand for w: it shows as what it is and names
// no parent folder.
func coverable(w string) bool {
	return strings.IndexFunc(w, func(r rune) bool { return !visibleRune(r) }) < 0 && !traversal(w, false)
}

func visibleRune(r rune) bool { return r != utf8.RuneError && !invisible(r) }

// sameProgram reports whether a rule's program word names the resolved program prog.
func sameProgram(rule, prog string) bool {
	rule = resolveProgram(rule)
	if strings.Contains(rule, "/") || strings.Contains(prog, "/") {
		return strings.Contains(rule, "/") && strings.Contains(prog, "/") && path.Clean(rule) == path.Clean(prog)
	}
	return rule == prog
}
