package agent

// A person's decision on a proposal. The checks it passes are listed once, in the order
// they run: requestGuards on the request alone, then recordGuards in the transaction
// that records it. A guard that refuses says why and what to do instead; what passes
// every guard goes to the applier (transit.go), which records it and publishes what it
// did.

import (
	"context"
	"errors"
	"strings"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/agent/cycle"
	"github.com/agentd/agentd/daemon/agent/policy"
	"github.com/agentd/agentd/daemon/store"
)

// decisionCheck is one decision on its way through the guards: the request, and what
// the guards find on the way (the agent, its proposal, the authorization).
type decisionCheck struct {
	s   *decisions
	ctx context.Context
	// req is the request as the guards leave it: a plain y counts 1, feedback trimmed,
	// the source named.
	req     api.DecideRequest
	d       *api.Decision // the decision the request makes, once requestGuards passed
	tx      *store.Tx
	a       *store.Agent
	p       *api.Proposal
	au      cycle.Authorization
	owner   *store.Agent // the agent whose grants the authorization used or made
	pattern string       // n!: the deny pattern it stores
}

// decisionGuard is one named check; it returns why the decision is refused, or nil.
type decisionGuard struct {
	name  string
	check func(c *decisionCheck) error
}

// requestGuards are what a decision request passes before the store is read, in order.
var requestGuards = []decisionGuard{
	{"names_proposal", namesProposal},
	{"fields_fit_kind", fieldsFitKind},
	{"kind_known", kindKnown},
	{"count_in_range", countInRange},
	{"feedback_sendable", feedbackSendable},
	{"source_not_reserved", sourceNotReserved},
	{"scope_fits_kind", scopeFitsKind},
}

// recordGuards are what it passes in the transaction that records it, in order.
var recordGuards = []decisionGuard{
	{"proposal_of_agent", proposalOfAgent},
	{"scope_storable", scopeStorable},
	{"proposal_open", proposalOpen},
	{"shown_hash_matches", shownHashMatches},
	{"authorized", authorized},
}

// passes runs guards in order; it returns the first refusal.
func (c *decisionCheck) passes(guards []decisionGuard) error {
	for _, g := range guards {
		if err := g.check(c); err != nil {
			return err
		}
	}
	return nil
}

// Decide records a person's decision on the agent's current proposal. The first valid
// decision wins: a second one, or one naming a superseded proposal, gets ErrConflict with
// the reason. The applier publishes the decision and what it did.
func (s *decisions) Decide(ctx context.Context, ref string, req api.DecideRequest) (*api.Decision, error) {
	c := &decisionCheck{s: s, ctx: ctx, req: req}
	if err := c.passes(requestGuards); err != nil {
		return nil, err
	}
	r := c.req
	c.d = &api.Decision{ProposalID: r.ProposalID, Kind: r.Kind, Count: r.Count, Feedback: r.Feedback, By: r.By, ByName: r.ByName, UID: r.UID, Source: r.Source, Scope: r.Scope}
	var finished bool
	var runID string
	shows := &change{}
	_, err := s.mutateThen(ctx, ref, func(tx *store.Tx, a *store.Agent) error {
		c.tx, c.a, runID = tx, a, a.RunID
		if err := c.passes(recordGuards); err != nil {
			return err
		}
		// y -N and y! make a grant, on the top agent: the next N-1 are the whole family's.
		shows.a, shows.p, shows.ev, shows.decision, shows.auth, shows.owner = a, c.p, decisionEvent(c.p, c.d), c.d, &c.au, c.owner
		if _, err := s.decideTx(tx, shows); err != nil {
			return alreadyDecided(tx, c.p.ID, err)
		}
		if err := c.storePattern(); err != nil {
			return err
		}
		if shows.ev.Kind == cycle.Deny {
			finished, a.Policy.AutoSteps = true, 0
		}
		return nil
	}, shows)
	if err != nil {
		return nil, err
	}
	if finished {
		s.runEnded(runID)
	}
	return c.d, nil
}

// storePattern stores the pattern a decision's scope makes (n!: a deny of this command
// and subject), with its audit entry.
func (c *decisionCheck) storePattern() error {
	if c.d.Pattern == "" {
		return nil
	}
	effect := "allow"
	if c.d.Scope == api.ScopeDeny {
		effect = "deny"
	}
	if _, err := c.tx.AddPermission(c.a.ID, effect, c.d.Pattern, cycle.Who(c.d)); err != nil {
		return err
	}
	return c.tx.Audit(c.a.ID, "permission", map[string]string{"effect": effect, "pattern": c.d.Pattern, "by": cycle.Who(c.d)})
}

// namesProposal: a decision names the proposal it decides.
func namesProposal(c *decisionCheck) error {
	if c.req.ProposalID == "" {
		return badRequest("proposal_id is required: decisions name the proposal they decide")
	}
	return nil
}

// fieldsFitKind: each kind carries only its own fields. Feedback on a deny would reach
// the model's history unbounded, a count on a deny would be recorded as if it meant
// something.
func fieldsFitKind(c *decisionCheck) error {
	if c.req.Kind != api.DecisionFeedback && c.req.Feedback != "" {
		return badRequest("feedback goes with kind feedback, not %s: send it as its own decision", c.req.Kind)
	}
	if c.req.Kind != api.DecisionApprove && c.req.Count != 0 {
		return badRequest("count goes with kind approve, not %s: drop it", c.req.Kind)
	}
	return nil
}

// kindKnown: approve, deny or feedback.
func kindKnown(c *decisionCheck) error {
	switch c.req.Kind {
	case api.DecisionApprove, api.DecisionDeny, api.DecisionFeedback:
		return nil
	}
	return badRequest("kind %q: use approve, deny or feedback", c.req.Kind)
}

// countInRange: y -N approves 1 to maxApproveCount; a plain y counts 1.
func countInRange(c *decisionCheck) error {
	if c.req.Kind != api.DecisionApprove {
		return nil
	}
	if c.req.Count == 0 {
		c.req.Count = 1
	}
	if c.req.Count < 1 || c.req.Count > maxApproveCount {
		return badRequest("count %d: want 1 to %d", c.req.Count, maxApproveCount)
	}
	return nil
}

// feedbackSendable: feedback says something, is no request for help and fits the
// model's history.
func feedbackSendable(c *decisionCheck) error {
	if c.req.Kind != api.DecisionFeedback {
		return nil
	}
	c.req.Feedback = strings.TrimSpace(c.req.Feedback)
	if c.req.Feedback == "" {
		return badRequest("feedback is empty")
	}
	// A front end that forgot to catch "?" must not drop the proposal for it.
	if api.IsHelp(c.req.Feedback) {
		return badRequest("%q asks for help, so it was not sent as feedback and the proposal still waits; answer with one of:\n%s", c.req.Feedback, api.DecisionHelp)
	}
	if len(c.req.Feedback) > api.MaxTextBytes {
		return badRequest("feedback is %d bytes: at most %d; shorten it or split it over several decisions", len(c.req.Feedback), api.MaxTextBytes)
	}
	return nil
}

// sourceNotReserved: the policy's and the grants' sources are the daemon's own.
func sourceNotReserved(c *decisionCheck) error {
	switch c.req.Source {
	case "":
		c.req.Source = "api"
	case "policy", cycle.SourceGrant:
		return badRequest(`source %q is reserved for the daemon's own approvals`, c.req.Source)
	}
	return nil
}

// scopeFitsKind: approve always (y!) goes with approve and no count, deny always (n!)
// with deny.
func scopeFitsKind(c *decisionCheck) error {
	req := c.req
	switch {
	case req.Scope == api.ScopeOnce:
	case req.Scope == api.ScopeAgent && req.Kind == api.DecisionApprove:
		if req.Count > 1 {
			return badRequest("scope agent approves every matching proposal already: drop the count")
		}
	case req.Scope == api.ScopeDeny && req.Kind == api.DecisionDeny:
	case req.Scope == api.ScopeAgent || req.Scope == api.ScopeDeny:
		return badRequest("scope %q goes with %s, not %s", req.Scope, map[string]string{api.ScopeAgent: "approve", api.ScopeDeny: "deny"}[req.Scope], req.Kind)
	default:
		return badRequest("scope %q: use agent (approve always) or deny (deny always), or leave it empty", req.Scope)
	}
	return nil
}

// proposalOfAgent: the proposal named is the agent's.
func proposalOfAgent(c *decisionCheck) error {
	p, err := c.tx.Proposal(c.req.ProposalID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && p.AgentID != c.a.ID) {
		return notFound("agent %s has no proposal %s", c.a.Name, c.req.ProposalID)
	} else if err != nil {
		return err
	}
	c.p = p
	return nil
}

// scopeStorable: a widened decision's pattern can be stored. Approve always (y!) makes
// an exact grant (Authorize's NewGrant) where a pattern could be stored, so a line the
// rules always ask about stays asked; deny always (n!) stores the deny pattern of the
// proposal's command and subject.
func scopeStorable(c *decisionCheck) error {
	if c.req.Scope == api.ScopeOnce {
		return nil
	}
	spec := c.s.specIn(c.ctx, c.s.live(), c.tx, c.a, c.p.Command)
	pat, err := policy.ScopePattern(c.req.Scope, spec, c.p)
	if err != nil {
		return badRequest("%v", err)
	}
	if c.req.Scope == api.ScopeDeny {
		c.d.Pattern = pat
	}
	return nil
}

// proposalOpen: the proposal is the agent's current one and still takes a decision.
func proposalOpen(c *decisionCheck) error {
	p, id := c.p, c.p.ID
	if p.Status == api.ProposalSuperseded {
		return conflict("proposal %s was superseded: the agent has moved on; decide on its current proposal", id)
	}
	if !p.Status.Decidable() {
		return alreadyDecided(c.tx, id, nil)
	}
	if open, err := c.tx.OpenProposal(c.a.ID); err != nil || open.ID != p.ID {
		return conflict("proposal %s is not the agent's current proposal", id)
	}
	return nil
}

// minShownHash is the shortest prefix of a proposal's Hash a decision may carry: chat
// buttons carry 16 hex characters (bots.HashLen).
const minShownHash = 16

// shownHashMatches: the reference the decision carries, the proposal as the person saw
// it, is the proposal's now: a lowercase hex prefix of p.Ref() of at least minShownHash
// characters. A proposal's command never changes, so a reference that no longer matches
// was shown an effect preview since run again. Empty means the caller shows no reference
// (an API client deciding on what it just fetched).
func shownHashMatches(c *decisionCheck) error {
	hash := c.req.Hash
	if hash == "" {
		return nil
	}
	if len(hash) >= minShownHash && strings.Trim(hash, "0123456789abcdef") == "" && strings.HasPrefix(c.p.Ref(), hash) {
		return nil
	}
	if c.p.Preview != nil && c.p.Preview.Effect != nil {
		return conflict("proposal %s changed since it was shown: the preview changed (run again on the workspace as it is now); look again and decide on the one shown now", c.p.ID)
	}
	return conflict("proposal %s changed since it was shown: decide on the one shown now", c.p.ID)
}

// authorized: the policy lets the person's decision stand (cycle.Authorize's answer
// for a decision).
func authorized(c *decisionCheck) error {
	au, owner, err := authorize(c.s.live(), c.tx, c.a, c.p, nil, nil, c.d)
	if err != nil {
		return err
	}
	if au.Decision == nil {
		return conflict("%s", au.Reason)
	}
	c.au, c.owner = au, owner
	return nil
}

// maxApproveCount bounds `y -N`.
const maxApproveCount = 1000

// decisionEvent is the cycle's event for a person's decision d on p.
func decisionEvent(p *api.Proposal, d *api.Decision) cycle.Event {
	switch {
	case d.Kind == api.DecisionApprove && d.Count > 1:
		return cycle.Event{Kind: cycle.ApproveN}
	case d.Kind == api.DecisionDeny:
		return cycle.Event{Kind: cycle.Deny, Reason: "run stopped: " + p.Command + " denied by " + cycle.Who(d), Detail: "denied by " + cycle.Who(d)}
	case d.Kind == api.DecisionFeedback:
		return cycle.Event{Kind: cycle.GiveFeedback}
	}
	return cycle.Event{Kind: cycle.Approve}
}

// errMoved is decideTx's answer when the proposal took another decision meanwhile.
var errMoved = errors.New("proposal moved on")

// decideTx records c's decision on its agent's open proposal in tx and moves the cycle
// on c's event: the one path of every decision, a person's (Decide) or the policy's
// (startTx). It returns the episode the decision ends the proposal with (deny,
// feedback), else nil. The caller writes the agent.
func (s *decisions) decideTx(tx *store.Tx, c *change) (*api.Episode, error) {
	c.rec, c.count = s.recordEpisode, s.countDecision
	res, err := apply(tx, c)
	if err != nil {
		return nil, err
	}
	if !res.moved {
		return nil, errMoved
	}
	return res.episode, nil
}

func alreadyDecided(tx *store.Tx, id string, err error) error {
	if err != nil && !errors.Is(err, errMoved) {
		return err
	}
	if d, err := tx.LastDecision(id); err == nil {
		return conflict("proposal %s was already decided: %s by %s", id, d.Kind, cycle.Who(d))
	}
	return conflict("proposal %s takes no decision now", id)
}

// Answer answers the agent's open ask_user question; the answer is the command's result,
// which the applier publishes.
func (s *decisions) Answer(ctx context.Context, ref string, req api.AnswerRequest) error {
	text := strings.TrimSpace(req.Text)
	if text == "" {
		return badRequest("empty answer")
	}
	if api.IsAnswerHelp(text) {
		return badRequest("%q asks how to answer, so it was not sent and the question still waits. %s", text, api.AnswerHelp)
	}
	if len(text) > api.MaxTextBytes {
		return badRequest("answer is %d bytes: at most %d; shorten it", len(text), api.MaxTextBytes)
	}
	shows := &change{}
	_, err := s.mutateThen(ctx, ref, func(tx *store.Tx, a *store.Agent) error {
		q, err := tx.Question(a.ID)
		if errors.Is(err, store.ErrNotFound) {
			return conflict("agent %s has no open question", a.Name)
		} else if err != nil {
			return err
		}
		if req.ProposalID != "" && req.ProposalID != q.ProposalID {
			return conflict("question %s was already answered or withdrawn", req.ProposalID)
		}
		p, err := tx.Proposal(q.ProposalID)
		if err != nil {
			return err
		}
		if p.Status != api.ProposalStarted {
			return conflict("question %s was already answered", p.ID)
		}
		shows.a, shows.p, shows.rec = a, p, s.recordEpisode
		shows.ev, shows.episode = cycle.Event{Kind: cycle.Answer, Result: text}, episodeOf(p, "succeeded", "The person answered: "+text, "")
		res, err := apply(tx, shows)
		if err != nil {
			return err
		} else if !res.moved {
			return conflict("question %s was already answered", p.ID)
		}
		if err := tx.ClearQuestions(a.ID); err != nil {
			return err
		}
		return tx.Audit(a.ID, "answer", answerAudit(p.ID, req))
	}, shows)
	return err
}

// decisions records people's decisions and answers on proposals: the one path agentctl,
// chat, schedules and the Agent Protocol share.
type decisions struct {
	st   *store.Store
	live func() *live // the settings in use: the patterns a decision is weighed against

	// What recording a decision needs of the other parts: changing an agent under its
	// runner's lock, the applier's events published once it commits (shows), and ending
	// a run (runs), ending a step (recordEpisode), counting decisions (metrics) and the
	// specs of commands (the pipelines).
	mutateThen    func(ctx context.Context, ref string, fn func(tx *store.Tx, a *store.Agent) error, shows *change) (*api.Agent, error)
	recordEpisode func(tx *store.Tx, agentID string, p *api.Proposal, ep *api.Episode) error
	runEnded      func(runID string)
	countDecision func(tx *store.Tx, d *api.Decision)
	specIn        func(ctx context.Context, l *live, tx *store.Tx, a *store.Agent, name string) *commands.Spec
}

// answerAudit is the audit entry of an answer: who answered, by name and, for a local
// user, by uid; the name alone could be anyone's.
func answerAudit(proposal string, req api.AnswerRequest) map[string]any {
	m := map[string]any{"proposal": proposal, "by": req.By}
	if req.ByName != "" {
		m["by_name"] = req.ByName
	}
	if req.UID != nil {
		m["uid"] = *req.UID
	}
	return m
}
