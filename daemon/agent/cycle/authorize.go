package cycle

import (
	"fmt"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/commands/permission"
	"github.com/agentd/agentd/daemon/client"
)

// Verdict is Authorize's answer.
type Verdict string

// Verdicts.
const (
	Allow  Verdict = "allow"  // run it
	Ask    Verdict = "ask"    // a person decides
	Refuse Verdict = "refuse" // do not run it
)

// Policy is the mode the proposal's agent follows — its own, or its top agent's for a
// helper — with what is left of a `y -N` grant.
type Policy struct {
	Mode            string // ask, auto or continuous
	AutoSteps       int    // auto: proposals still approved unasked
	ContinuousLimit int    // continuous: the last step approved unasked
	Owner           string // the agent the mode is borrowed from, "" for the agent's own
}

// Request is everything Authorize weighs.
type Request struct {
	Proposal *client.Proposal
	// Spec is the proposal's command as the agent has it now; nil when it has none by
	// that name (a person must decide).
	Spec *commands.Spec
	// Repeat is set when the proposal repeats the one before it in its run.
	Repeat bool
	// Rules are the permission layers in order (Evaluate's), and Options its options:
	// AutoRead, and how a file command's path resolves through the workspace's links.
	Rules   []permission.Rules
	Options permission.Options
	Policy  Policy
	// Decision is a person's decision from a front end (agentctl, chat, a schedule, a
	// team or the Agent Protocol); nil when the daemon's policy decides. Approver says
	// whether its maker may decide there: front ends check their approver lists and
	// pass what they found (the local API's peers are approvers by construction).
	Decision *client.Decision
	Approver bool
}

// Authorization is Authorize's answer: the verdict, why, and the decision it makes.
type Authorization struct {
	Verdict Verdict
	Reason  string
	// Decision is the decision to record: the person's, or the policy's (nil for Ask).
	Decision *client.Decision
	// Policy is the mode after this verdict: an auto approval draws one from the grant.
	Policy Policy
}

// Authorize decides who may run a proposal: a person's decision decides when there is
// one; else, in order, ask_user needs no approval, a repeat asks, a deny pattern refuses
// (as feedback to the model), an allow pattern (or auto_read) approves, execute-class
// commands ask, then the mode — auto for N steps, or continuous up to its limit.
func Authorize(req Request) Authorization {
	out := Authorization{Verdict: Ask, Policy: req.Policy}
	p := req.Proposal
	if d := req.Decision; d != nil {
		return decided(req, d)
	}
	if p.Command == commands.AskUser {
		// Asking is harmless, and the person's answer is their decision.
		return approve(out, p, "ask_user needs no approval", "")
	}
	if req.Repeat {
		out.Reason = "the same command with the same arguments as the last proposal: a person decides"
		return out
	}
	if req.Spec == nil {
		out.Reason = "the command is not available now"
		return out
	}
	v := permission.Evaluate(*req.Spec, p.Args, req.Options, req.Rules...)
	switch v.Effect {
	case permission.Allow:
		by := "allow pattern " + v.Pattern
		if v.Pattern == "" {
			by = "auto_read"
		}
		out = approve(out, p, by, v.Pattern)
		out.Reason = v.Reason
		return out
	case permission.Deny:
		out.Verdict, out.Reason = Refuse, v.Reason
		out.Decision = &client.Decision{ProposalID: p.ID, Kind: client.DecisionFeedback, Source: "policy", By: "deny pattern " + v.Pattern, Pattern: v.Pattern,
			Feedback: fmt.Sprintf("Not run: %s is refused here by the permission pattern %s. Do not propose it again; choose another way.", p.Command, v.Pattern)}
		return out
	}
	if req.Spec.Class == commands.ClassExecute {
		out.Reason = "execute commands run unasked only by an explicit allow pattern"
		return out
	}
	return byMode(out, p)
}

// byMode applies the policy's mode when no pattern decided.
func byMode(out Authorization, p *client.Proposal) Authorization {
	by := ""
	if out.Policy.Owner != "" {
		by = " (" + out.Policy.Owner + "'s)"
	}
	switch out.Policy.Mode {
	case "auto":
		if out.Policy.AutoSteps > 0 {
			out.Policy.AutoSteps--
			if out.Policy.AutoSteps == 0 {
				out.Policy.Mode = "ask"
			}
			return approve(out, p, "auto"+by, "")
		}
	case "continuous":
		if p.Step <= out.Policy.ContinuousLimit {
			return approve(out, p, "continuous"+by, "")
		}
	}
	out.Reason = "no pattern matched and the mode is " + out.Policy.Mode + ": a person decides"
	return out
}

func approve(out Authorization, p *client.Proposal, by, pattern string) Authorization {
	out.Verdict, out.Reason = Allow, "approved by "+by
	out.Decision = &client.Decision{ProposalID: p.ID, Kind: client.DecisionApprove, Count: 1, Source: "policy", By: by, Pattern: pattern}
	return out
}

// decided is a person's decision as a verdict: one who may not decide is refused, and
// the decision is recorded as made.
func decided(req Request, d *client.Decision) Authorization {
	out := Authorization{Policy: req.Policy, Decision: d}
	switch {
	case !req.Approver:
		out.Verdict, out.Decision = Refuse, nil
		out.Reason = "not an approver here: the decision changes nothing"
	case d.Kind == client.DecisionApprove:
		out.Verdict, out.Reason = Allow, "approved by "+Who(d)
		if d.Count > 1 && out.Policy.Mode != "continuous" { // continuous approves them anyway
			out.Policy.Mode, out.Policy.AutoSteps = "auto", d.Count-1
		}
	case d.Kind == client.DecisionDeny:
		out.Verdict, out.Reason = Refuse, "denied by "+Who(d)
	default:
		out.Verdict, out.Reason = Refuse, "feedback from "+Who(d)
	}
	return out
}

// Who names a decision's maker for people: "ana via slack", or the source alone.
func Who(d *client.Decision) string {
	if d.By == "" {
		return d.Source
	}
	return d.By + " via " + d.Source
}
