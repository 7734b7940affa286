package permission

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/agentd/agentd/commands"
)

// Explanation is Explain's answer: the verdict, and for a shell line what was decided for
// each of its simple commands.
type Explanation struct {
	Verdict  Verdict          `json:"verdict"`
	Commands []CommandVerdict `json:"commands,omitempty"`
}

// CommandVerdict is what the rules say about one simple command of a shell line.
type CommandVerdict struct {
	Command string `json:"command"` // the program (as written) and its words, requoted
	Effect  Effect `json:"effect"`
	Pattern string `json:"pattern,omitempty"` // the pattern that allowed or denied it
	Layer   string `json:"layer,omitempty"`
	Reason  string `json:"reason"`
	Write   bool   `json:"write,omitempty"` // the allowing pattern ends in +write
}

// Evaluate decides a proposal: the command spec with these args, under the given layers.
//
//  1. A deny pattern that covers it (Pattern.Denies), in any layer, denies it (first match,
//     in layer order).
//     A shell line that feeds a shell code on its standard input (echo x | sh) asks when
//     a deny rule covers execute_shell: no rule can read that code.
//  2. Otherwise, if args can be read two ways (see Subject), a person is asked.
//  3. Otherwise an allow pattern that approves it (Pattern.Allows) allows it. For a shell
//     line, besides a pattern that approves the whole line, the line is allowed when every
//     one of its simple commands is approved by some pattern, in any layer.
//  4. Otherwise, with opts.AutoRead, a read command on a path inside the workspace is allowed.
//  5. Otherwise a person is asked. Execute commands therefore run unasked only through an
//     allow pattern that names them literally, and a shell line that is not plain commands
//     only through an exact pattern or `**`.
func Evaluate(spec commands.Spec, args json.RawMessage, opts Options, layers ...Rules) Verdict {
	return Explain(spec, args, opts, layers...).Verdict
}

// Explain is Evaluate, saying for a shell line which rule decided each simple command, or
// why it asks. `agentctl policy NAME test` shows it.
func Explain(spec commands.Spec, args json.RawMessage, opts Options, layers ...Rules) Explanation {
	subject := Subject(spec, args)
	t := newTarget(spec, subject)
	e := explain(t, args, opts, layers)
	linked, ok := linkedSubject(t.kind, subject, opts.Resolve)
	if !ok || e.Verdict.Effect == Deny {
		return e
	}
	// Through a symlink: what the command opens must pass the rules too.
	l := explain(newTarget(spec, linked), args, opts, layers)
	if l.Verdict.Effect == Deny || (l.Verdict.Effect == Ask && e.Verdict.Effect == Allow) {
		l.Verdict.Reason += fmt.Sprintf(" (%s leads to %s through a symlink)", t.norm, linked)
		e.Verdict = l.Verdict
	}
	return e
}

// explain is Explain for one target, its subject as written or as resolved.
func explain(t *target, args json.RawMessage, opts Options, layers []Rules) Explanation {
	spec := t.spec
	var e Explanation
	if t.kind == kindShell && t.line.problem == "" {
		e.Commands = commandVerdicts(t.line.cmds, spec, layers)
	}
	for _, l := range layers {
		for _, p := range l.Deny {
			if p.denies(t) {
				e.Verdict = Verdict{Effect: Deny, Pattern: p.String(), Layer: l.Layer, Reason: "denied by " + p.String() + inLayer(l.Layer)}
				return e
			}
		}
	}
	e.Verdict = decide(t, args, opts, layers, e.Commands)
	if e.Verdict.Effect == Allow {
		if why := hiddenCode(t, layers); why != "" {
			e.Verdict = Verdict{Effect: Ask, Reason: why}
		}
	}
	return e
}

// hiddenCode says why a line that feeds a shell code on its standard input asks when a
// deny rule covers execute_shell, or "": no rule can read that code.
func hiddenCode(t *target, layers []Rules) string {
	for _, l := range layers {
		for _, p := range l.Deny {
			if p.hidesCode(t) {
				return "asking: a shell reads code from its standard input, which the deny rule " + p.String() + inLayer(l.Layer) + " cannot check"
			}
		}
	}
	return ""
}

// decide is Explain's verdict after the deny rules: allow patterns, then auto_read.
func decide(t *target, args json.RawMessage, opts Options, layers []Rules, cmds []CommandVerdict) Verdict {
	if err := checkArgs(args); err != nil {
		return Verdict{Effect: Ask, Reason: "asking: " + err.Error()}
	}
	for _, l := range layers {
		for _, p := range l.Allow {
			if p.allows(t) {
				return Verdict{Effect: Allow, Pattern: p.String(), Layer: l.Layer, Reason: "auto-approved by " + p.String() + inLayer(l.Layer), Write: p.write}
			}
		}
	}
	if t.kind == kindShell {
		return shellVerdict(t, cmds)
	}
	fileKind := t.kind == kindPath || t.kind == kindFolder || t.kind == kindSearch
	if opts.AutoRead && t.spec.Class == commands.ClassRead && (!fileKind || t.clean) {
		return Verdict{Effect: Allow, Reason: "auto-approved: read commands run without asking (auto_read)"}
	}
	v := Verdict{Effect: Ask, Reason: "asking: no allow pattern matches"}
	if fileKind && !t.clean {
		_, err := commands.CleanPath(t.text)
		v.Reason = "asking: no rule approves a path outside the workspace: " + err.Error()
	}
	return v
}

// shellVerdict decides a line no single pattern approved, from its commands' verdicts.
func shellVerdict(t *target, cmds []CommandVerdict) Verdict {
	if t.line.problem != "" {
		return Verdict{Effect: Ask, Reason: "asking: the command line is not plain commands: " + t.line.problem}
	}
	var by []string
	first, write := cmds[0], true
	for _, c := range cmds {
		write = write && c.Write
		switch c.Effect {
		case Deny: // a word-level deny that the line-level check did not see: still a deny
			return Verdict{Effect: Deny, Pattern: c.Pattern, Layer: c.Layer, Reason: "denied by " + c.Pattern + inLayer(c.Layer)}
		case Ask:
			if c.Reason != noMatch {
				return Verdict{Effect: Ask, Reason: "asking: " + c.Command + ": " + c.Reason}
			}
			return Verdict{Effect: Ask, Reason: "asking: " + noMatch}
		}
		if s := c.Pattern + inLayer(c.Layer); !slices.Contains(by, s) {
			by = append(by, s)
		}
	}
	return Verdict{Effect: Allow, Pattern: first.Pattern, Layer: first.Layer, Reason: "auto-approved by " + strings.Join(by, " and "), Write: write}
}

const noMatch = "no allow pattern matches"

// commandVerdicts decides each simple command of a plain line on its own.
func commandVerdicts(cmds []simpleCmd, spec commands.Spec, layers []Rules) []CommandVerdict {
	out := make([]CommandVerdict, 0, len(cmds))
	for _, c := range cmds {
		out = append(out, commandVerdict(c, spec, layers))
	}
	return out
}

func commandVerdict(c simpleCmd, spec commands.Spec, layers []Rules) CommandVerdict {
	v := CommandVerdict{Command: c.String(), Effect: Ask, Reason: noMatch}
	run := denyCommands(c.String())
	for _, l := range layers {
		for _, p := range l.Deny {
			if p.coversCommand(spec) && (p.anything || p.deniesCommands(run)) {
				v.Effect, v.Pattern, v.Layer, v.Reason = Deny, p.String(), l.Layer, "denied by "+p.String()+inLayer(l.Layer)
				return v
			}
		}
	}
	for _, l := range layers {
		for _, p := range l.Allow {
			if !p.namesCommand(spec) || !p.literalCommand() || !p.wild() || p.anything {
				continue
			}
			ok, why := p.allowsCmd(c)
			if ok {
				v.Effect, v.Pattern, v.Layer, v.Reason, v.Write = Allow, p.String(), l.Layer, "allowed by "+p.String()+inLayer(l.Layer), p.write
				return v
			}
			if why != "" && v.Reason == noMatch {
				v.Reason = why
			}
		}
	}
	return v
}
