package permission

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentd/agentd/commands"
)

// Rules is one layer of patterns: the global rules from the config file, or one agent's
// (its config plus the patterns a person stored with "approve always" or "deny always").
type Rules struct {
	Layer string // names the layer in verdicts: "global", "agent"
	Allow []Pattern
	Deny  []Pattern
}

// ParseRules parses a layer's allow and deny patterns. It reports every bad pattern, not just
// the first, each as `allow[2]: permission pattern "...": column 7: ...`.
func ParseRules(layer string, allow, deny []string) (Rules, error) {
	r := Rules{Layer: layer}
	var errs []error
	parse := func(list string, in []string) []Pattern {
		var out []Pattern
		for i, s := range in {
			p, err := Parse(s)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s[%d]: %w", list, i, err))
				continue
			}
			out = append(out, p)
		}
		return out
	}
	r.Allow = parse("allow", allow)
	r.Deny = parse("deny", deny)
	for i, p := range r.Deny {
		if p.write {
			errs = append(errs, fmt.Errorf("deny[%d]: %q: +write only widens an allow rule (a deny refuses the command whatever it writes): remove it", i, p.String()))
		}
	}
	if len(errs) > 0 {
		err := errors.Join(errs...)
		if layer != "" {
			err = fmt.Errorf("%s permissions: %w", layer, err)
		}
		return Rules{}, err
	}
	return r, nil
}

// Effect is what a verdict says to do with a proposal.
type Effect string

// The effects.
const (
	Allow Effect = "allow" // run it without asking
	Deny  Effect = "deny"  // refuse it without asking
	Ask   Effect = "ask"   // wait for a person
)

// Verdict is Evaluate's answer.
type Verdict struct {
	Effect  Effect `json:"effect"`
	Pattern string `json:"pattern,omitempty"` // the deciding pattern; "" for a default
	Layer   string `json:"layer,omitempty"`   // the layer that held it
	Reason  string `json:"reason"`            // one line for the person, e.g. "auto-approved by read_file(*) (agent rules)"
	// Write is set on an Allow whose deciding patterns all end in +write: the programs
	// may write the workspace. Without it an approved execute command runs bounded.
	Write bool `json:"write,omitempty"`
}

// Options change Evaluate's defaults.
type Options struct {
	// AutoRead approves read commands (ClassRead) that no pattern matched: "read commands
	// may be auto-approved if configured". Deny patterns still apply.
	AutoRead bool
	// Resolve maps a cleaned workspace path to the one file commands open, the workspace's
	// symlinks resolved (commands.ResolveLinks, for the agent's workspace). With it a file
	// command is denied when either path is, and allowed only when both are; nil matches
	// the path as written alone.
	Resolve func(clean string) (string, error)
}

func inLayer(layer string) string {
	if layer == "" {
		return ""
	}
	return " (" + layer + " rules)"
}

// AlwaysPattern returns the pattern a person's "approve always for this agent" stores: the
// command with exactly this proposal's subject, escaped, so it approves that command line,
// that path or that query again and nothing else, not even a one-character variant.
// It fails when args can be read two ways or the pattern would be over MaxPatternLen; the
// person can still approve once.
func AlwaysPattern(spec commands.Spec, args json.RawMessage) (Pattern, error) {
	return exactFor(spec, args)
}

// DenyPattern returns the pattern a person's "deny always for this agent" stores: like
// AlwaysPattern, the command with exactly this subject. A person who wants a wider deny
// writes the glob, e.g. `read_file(secrets/*)`.
func DenyPattern(spec commands.Spec, args json.RawMessage) (Pattern, error) {
	return exactFor(spec, args)
}

func exactFor(spec commands.Spec, args json.RawMessage) (Pattern, error) {
	if err := checkArgs(args); err != nil {
		return Pattern{}, fmt.Errorf("permission: %s: %w", spec.Name, err)
	}
	return Exact(spec.Name, newTarget(spec, Subject(spec, args)).norm)
}
