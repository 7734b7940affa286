package team

import (
	"fmt"
	"strings"
	"unicode"
)

// Cond is a condition on the run's variables, as workflow files write them in a next
// state's `when` and a composed phase's `until`:
//
//	language is set            modality is empty
//	review == 'Finished'       review != ''
//	review contains 'finished' not review contains 'bug'
//	a is set and b contains 'x' or c == 'y'
//
// `and` binds tighter than `or`; there are no parentheses. == and != compare the trimmed
// value exactly; contains ignores case. An unknown variable is empty.
type Cond struct {
	src string
	any [][]clause // or of ands
}

type clause struct {
	not  bool
	name string
	op   string // "==", "!=", "contains", "set", "empty"
	lit  string
}

// String returns the condition as written.
func (c *Cond) String() string { return c.src }

// Vars returns the variables the condition reads.
func (c *Cond) Vars() []string {
	var out []string
	for _, and := range c.any {
		for _, cl := range and {
			out = append(out, cl.name)
		}
	}
	return out
}

// Eval reports whether the condition holds for vars.
func (c *Cond) Eval(vars map[string]string) bool {
	for _, and := range c.any {
		ok := true
		for _, cl := range and {
			if cl.eval(vars) == cl.not {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func (cl clause) eval(vars map[string]string) bool {
	v := strings.TrimSpace(vars[cl.name])
	switch cl.op {
	case "==":
		return v == cl.lit
	case "!=":
		return v != cl.lit
	case "contains":
		return strings.Contains(strings.ToLower(v), strings.ToLower(cl.lit))
	case "set":
		return v != ""
	default: // empty
		return v == ""
	}
}

// ParseCond parses a condition; the error says what was expected where.
func ParseCond(src string) (*Cond, error) {
	toks, err := tokenize(src)
	if err != nil {
		return nil, err
	}
	if len(toks) == 0 {
		return nil, fmt.Errorf("empty condition: write e.g. `language is set` or `review contains 'finished'`")
	}
	c := &Cond{src: src}
	var and []clause
	for len(toks) > 0 {
		var cl clause
		if toks[0].word("not") {
			cl.not = true
			toks = toks[1:]
		}
		if len(toks) < 2 || toks[0].quoted || !isName(toks[0].s) {
			return nil, fmt.Errorf("condition %q: want a variable name, then is set, is empty, ==, != or contains", src)
		}
		cl.name = toks[0].s
		switch op := toks[1]; {
		case op.word("is") && len(toks) >= 3 && (toks[2].word("set") || toks[2].word("empty")):
			cl.op, toks = toks[2].s, toks[3:]
		case op.word("is"):
			return nil, fmt.Errorf("condition %q: after is want set or empty", src)
		case !op.quoted && (op.s == "==" || op.s == "!=" || op.word("contains")):
			if len(toks) < 3 || !toks[2].quoted {
				return nil, fmt.Errorf("condition %q: %s %s needs a quoted value, like '%s'", src, cl.name, op.s, "done")
			}
			cl.op, cl.lit, toks = op.s, toks[2].s, toks[3:]
		default:
			return nil, fmt.Errorf("condition %q: after %s want is set, is empty, ==, != or contains, got %q", src, cl.name, op.s)
		}
		and = append(and, cl)
		if len(toks) == 0 {
			break
		}
		switch {
		case toks[0].word("and"):
		case toks[0].word("or"):
			c.any, and = append(c.any, and), nil
		default:
			return nil, fmt.Errorf("condition %q: want and or or, got %q", src, toks[0].s)
		}
		toks = toks[1:]
		if len(toks) == 0 {
			return nil, fmt.Errorf("condition %q ends after and/or", src)
		}
	}
	c.any = append(c.any, and)
	return c, nil
}

type token struct {
	s      string
	quoted bool
}

func (t token) word(w string) bool { return !t.quoted && strings.EqualFold(t.s, w) }

func tokenize(src string) ([]token, error) {
	var out []token
	r := []rune(src)
	for i := 0; i < len(r); {
		switch c := r[i]; {
		case unicode.IsSpace(c):
			i++
		case c == '\'' || c == '"':
			j := i + 1
			for j < len(r) && r[j] != c {
				j++
			}
			if j == len(r) {
				return nil, fmt.Errorf("condition %q: unclosed quote", src)
			}
			out = append(out, token{s: string(r[i+1 : j]), quoted: true})
			i = j + 1
		case c == '=' || c == '!':
			if i+1 < len(r) && r[i+1] == '=' {
				out = append(out, token{s: string(r[i : i+2])})
				i += 2
				continue
			}
			return nil, fmt.Errorf("condition %q: %q: use == or !=", src, string(c))
		default:
			j := i
			for j < len(r) && !unicode.IsSpace(r[j]) && !strings.ContainsRune(`'"=!`, r[j]) {
				j++
			}
			out = append(out, token{s: string(r[i:j])})
			i = j
		}
	}
	return out, nil
}

// isName reports whether s is a variable, role, phase or state name.
func isName(s string) bool {
	if s == "" || len(s) > 24 || !(s[0] >= 'a' && s[0] <= 'z') {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}
