package cycle

import (
	"fmt"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/commands/permission"
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
// helper. Auto mode's steps are count grants (Request.Grants); the mode only mirrors them.
type Policy struct {
	Mode            string // ask, auto or continuous
	ContinuousLimit int    // continuous: the last step approved unasked
	Owner           string // the agent the mode and grants are borrowed from, "" for the agent's own
}

// Request is everything Authorize weighs.
type Request struct {
	Proposal *api.Proposal
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
	// Grants are the standing decisions of the agent (its top agent's for a helper) not
	// revoked or used up; Now and Run (that agent's current run) tell which still hold.
	Grants []api.Grant
	Now    time.Time
	Run    string
	// Decision is a person's decision from a front end (agentctl, chat, a schedule, a
	// team or the Agent Protocol); nil when the daemon's policy decides. Approver says
	// whether its maker may decide there: front ends check their approver lists and
	// pass what they found (the local API's peers are approvers by construction).
	Decision *api.Decision
	Approver bool
	// Bind is the workspace files the proposal's line names and their contents now, for
	// a command that runs files (execute_shell, execute_python_file) when an exact grant
	// could approve it or a person's y! would grant it; nil otherwise. The daemon works
	// it out: Authorize reads no file.
	Bind *Binding
}

// Binding is what an exact grant of an execute command binds: the workspace files its
// line names, as they are now.
type Binding struct {
	// Files are the regular workspace files the line names, each once, by path.
	Files []api.BoundFile
	// Problem says why the files cannot be bound (more than the bound allows, a name
	// whose file is not known for sure); Files is then empty and nothing may bind them.
	Problem string
}

// Authorization is Authorize's answer: the verdict, why, and the decision it makes.
type Authorization struct {
	Verdict Verdict
	Reason  string
	// Decision is the decision to record: the person's, or the policy's (nil for Ask).
	Decision *api.Decision
	// Grant is the grant that approved the proposal, with this approval counted in Used:
	// the caller records the use. NewGrant is the grant a person's decision makes (y -N,
	// y!): the caller gives it an id, agent and run, and stores it.
	Grant    *api.Grant
	NewGrant *api.Grant
	// Layer is the rule layer that held the deciding pattern (stored, agent-config,
	// config); "" when no pattern decided.
	Layer string
	// Unbound says why an exact grant of this very command and args did not approve it:
	// a file its line names changed since it was granted (the person is told when asked).
	Unbound string
}

// Authorize decides who may run a proposal: a person's decision decides when there is
// one; else, in order, ask_user needs no approval, a repeat asks, a deny pattern refuses
// (as feedback to the model), an allow pattern (or auto_read) approves, a grant that
// holds and matches approves (exact, then pattern, then count; count grants never cover
// execute commands), execute-class commands ask, then continuous mode up to its limit.
func Authorize(req Request) Authorization {
	out := Authorization{Verdict: Ask}
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
		out.Reason, out.Layer = v.Reason, v.Layer
		out.Decision.Profile = Profile(req.Spec, v.Write)
		return out
	case permission.Deny:
		out.Verdict, out.Reason, out.Layer = Refuse, v.Reason, v.Layer
		out.Decision = &api.Decision{ProposalID: p.ID, Kind: api.DecisionFeedback, Source: "policy", By: "deny pattern " + v.Pattern, Pattern: v.Pattern,
			Feedback: fmt.Sprintf("Not run: %s is refused here by the permission pattern %s. Do not propose it again; choose another way.", p.Command, v.Pattern)}
		return out
	}
	g, unbound := grantFor(req)
	if g != nil {
		return byGrant(out, req, g)
	}
	out.Unbound = unbound
	if req.Spec.Class == commands.ClassExecute {
		out.Reason = "execute commands run unasked only by an explicit allow pattern or grant"
		if unbound != "" {
			out.Reason = unbound + ": a person decides"
		}
		return out
	}
	return byMode(out, req.Policy, p)
}

// byMode applies the policy's mode when no pattern or grant decided.
func byMode(out Authorization, pol Policy, p *api.Proposal) Authorization {
	by := ""
	if pol.Owner != "" {
		by = " (" + pol.Owner + "'s)"
	}
	if pol.Mode == "continuous" && p.Step <= pol.ContinuousLimit {
		return approve(out, p, "continuous"+by, "")
	}
	out.Reason = "no pattern or grant matched and the mode is " + pol.Mode + ": a person decides"
	return out
}

// grantFor is the grant that approves req's proposal: one that still holds and matches,
// the narrowest kind first, so a countdown is not spent on what an exact grant covers.
// With none, unbound says why an exact grant of the same command and args did not.
func grantFor(req Request) (g *api.Grant, unbound string) {
	for _, kind := range []api.GrantKind{api.GrantExact, api.GrantPattern, api.GrantCount} {
		for i := range req.Grants {
			g := &req.Grants[i]
			if g.Kind != kind || g.StateAt(req.Now, req.Run) != api.GrantActive || !Matches(g, req.Proposal, req.Spec, req.Options) {
				continue
			}
			why := Unbound(g, req.Bind)
			if why == "" {
				return g, ""
			}
			if unbound == "" {
				unbound = why
			}
		}
	}
	return nil, unbound
}

// Unbound says why grant g no longer covers the files its proposal's line names, as
// they are now (bind; nil: it names none): a file it bound changed, is gone, or is new
// among them. "" when g binds no files and the line names none, or the same files hold
// the same contents. Only exact grants bind files.
func Unbound(g *api.Grant, bind *Binding) string {
	if g.Kind != api.GrantExact {
		return ""
	}
	var now []api.BoundFile
	if bind != nil {
		if bind.Problem != "" {
			return fmt.Sprintf("%s (%s) cannot check the files the line names: %s", g.Label, g.ID, bind.Problem)
		}
		now = bind.Files
	}
	cur := make(map[string]string, len(now))
	for _, f := range now {
		cur[f.Path] = f.SHA256
	}
	bound := make(map[string]bool, len(g.Files))
	for _, f := range g.Files {
		bound[f.Path] = true
		switch sum, ok := cur[f.Path]; {
		case !ok:
			return fmt.Sprintf("%s is no longer a workspace file since %s granted it (%s)", f.Path, g.Label, g.ID)
		case sum != f.SHA256:
			return fmt.Sprintf("%s changed since %s granted it (%s)", f.Path, g.Label, g.ID)
		}
	}
	for _, f := range now {
		if !bound[f.Path] {
			return fmt.Sprintf("%s is a workspace file %s (%s) did not bind when it was granted", f.Path, g.Label, g.ID)
		}
	}
	return ""
}

// Matches reports whether grant g covers proposal p of command spec (nil: not offered
// now, never covered) by its command and args; an exact grant also needs the files it
// bound unchanged (Unbound). It is the one test of a grant: authorizing and previewing
// a pattern grant both use it, so a pattern approves exactly what its preview showed.
func Matches(g *api.Grant, p *api.Proposal, spec *commands.Spec, opts permission.Options) bool {
	if spec == nil {
		return false
	}
	switch g.Kind {
	case api.GrantExact: // in the agent it was granted in only
		return g.Hash != "" && p.Command == g.Command && p.Hash == g.Hash && g.AgentID == p.AgentID
	case api.GrantPattern:
		pat, err := permission.Parse(g.Pattern)
		if err != nil {
			return false // checked when stored; one that no longer parses approves nothing
		}
		opts.AutoRead = false // the pattern alone must allow it
		v := permission.Evaluate(*spec, p.Args, opts, permission.Rules{Layer: "grant", Allow: []permission.Pattern{pat}})
		return v.Effect == permission.Allow && v.Pattern != ""
	case api.GrantCount:
		return spec.Class != commands.ClassExecute
	}
	return false
}

// byGrant approves p by grant g, counting this use, and names g in the decision.
func byGrant(out Authorization, req Request, g *api.Grant) Authorization {
	used := *g
	used.Used++
	label := used.Name()
	if req.Policy.Owner != "" {
		label += ", " + req.Policy.Owner + "'s grant"
	}
	d := &api.Decision{ProposalID: req.Proposal.ID, Kind: api.DecisionApprove, Count: 1, Source: SourceGrant,
		By: g.By, Pattern: g.Pattern, Grant: g.ID, GrantLabel: label}
	if used.Count > 0 {
		d.GrantCount, d.GrantLeft = used.Count, used.Left()
	}
	if g.Kind != api.GrantExact { // y! is a person's approval of this exact command
		pat, _ := permission.Parse(g.Pattern)
		d.Profile = Profile(req.Spec, pat.Write())
	}
	out.Verdict, out.Reason, out.Grant, out.Decision = Allow, "approved by "+d.GrantText(), &used, d
	return out
}

// Profile is the sandbox profile of a command spec approved unasked: for one that runs
// programs in the sandbox, bounded, with the workspace writable when the approving
// patterns all end in +write; other commands have none.
func Profile(spec *commands.Spec, write bool) string {
	switch {
	case spec == nil || !permission.Sandboxed(spec.Name):
		return ""
	case write:
		return api.ProfileBoundedWrite
	}
	return api.ProfileBounded
}

// SourceGrant is the source of an approval a grant made.
const SourceGrant = "grant"

func approve(out Authorization, p *api.Proposal, by, pattern string) Authorization {
	out.Verdict, out.Reason = Allow, "approved by "+by
	out.Decision = &api.Decision{ProposalID: p.ID, Kind: api.DecisionApprove, Count: 1, Source: "policy", By: by, Pattern: pattern}
	return out
}

// decided is a person's decision as a verdict: one who may not decide is refused, and
// the decision is recorded as made, with the grant it makes: y -N a count grant of the
// next N-1 for this run, y! an exact grant of this command with these args (and the
// files its line names, with their contents: a y! that cannot bind them is refused).
func decided(req Request, d *api.Decision) Authorization {
	out := Authorization{Decision: d}
	switch {
	case !req.Approver:
		out.Verdict, out.Decision = Refuse, nil
		out.Reason = "not an approver here: the decision changes nothing"
	case d.Kind == api.DecisionApprove:
		out.Verdict, out.Reason = Allow, "approved by "+Who(d)
		g := &api.Grant{By: d.By, Source: d.Source}
		switch {
		case d.Scope == api.ScopeAgent && req.Bind != nil && req.Bind.Problem != "":
			out.Verdict, out.Decision = Refuse, nil
			out.Reason = "y! cannot bind the files this line names (" + req.Bind.Problem + "): approve it once with y"
		case d.Scope == api.ScopeAgent:
			g.Kind, g.Label, g.Command, g.Hash = api.GrantExact, "y!", req.Proposal.Command, req.Proposal.Hash
			if req.Bind != nil {
				g.Files = req.Bind.Files
			}
			out.NewGrant = g
		case d.Count > 1 && req.Policy.Mode != "continuous": // continuous approves them anyway
			g.Kind, g.Label, g.Count, g.RunID = api.GrantCount, fmt.Sprintf("y -%d", d.Count), d.Count-1, req.Run
			out.NewGrant = g
		}
	case d.Kind == api.DecisionDeny:
		out.Verdict, out.Reason = Refuse, "denied by "+Who(d)
	default:
		out.Verdict, out.Reason = Refuse, "feedback from "+Who(d)
	}
	return out
}

// Who names a decision's maker for people: "ana via slack", or the source alone.
func Who(d *api.Decision) string {
	switch {
	case d.ByName != "": // a chat user's display name says more than their id
		return d.ByName + " via " + d.Source
	case d.By == "":
		return d.Source
	}
	return d.By + " via " + d.Source
}
