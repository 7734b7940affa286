package agent

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

// maxApproveCount bounds `y -N`.
const maxApproveCount = 1000

// Decide records a person's decision on the agent's current proposal. The first valid
// decision wins: a second one, or one naming a superseded proposal, gets ErrConflict with
// the reason.
func (s *decisions) Decide(ctx context.Context, ref string, req api.DecideRequest) (*api.Decision, error) {
	d, err := decisionOf(req)
	if err != nil {
		return nil, err
	}
	if err := s.widen(ctx, ref, req, d); err != nil {
		return nil, err
	}
	var ep *api.Episode
	var finished bool
	var runID string
	_, err = s.mutateThen(ctx, ref, func(tx *store.Tx, a *store.Agent) error {
		runID = a.RunID
		p, err := decidable(tx, a, req.ProposalID)
		if err != nil {
			return err
		}
		if err := shownIs(p, req.Hash); err != nil {
			return err
		}
		au, owner, err := authorize(s.live(), tx, a, p, nil, nil, d)
		if err != nil {
			return err
		}
		if au.Decision == nil {
			return conflict("%s", au.Reason)
		}
		// y -N and y! make a grant, on the top agent: the next N-1 are the whole family's.
		ev := decisionEvent(p, d)
		if ep, err = s.decideTx(tx, &change{a: a, p: p, ev: ev, decision: d, auth: &au, owner: owner}); err != nil {
			return alreadyDecided(tx, p.ID, err)
		}
		if d.Pattern != "" {
			effect := "allow"
			if d.Scope == api.ScopeDeny {
				effect = "deny"
			}
			if _, err := tx.AddPermission(a.ID, effect, d.Pattern, who(d)); err != nil {
				return err
			}
			if err := tx.Audit(a.ID, "permission", map[string]string{"effect": effect, "pattern": d.Pattern, "by": who(d)}); err != nil {
				return err
			}
		}
		if ev.Kind == cycle.Deny {
			finished, a.Policy.AutoSteps = true, 0
		}
		return nil
	}, func(a *api.Agent) []api.Event {
		evs := []api.Event{{Type: api.EventDecision, AgentID: a.ID, Decision: d}}
		if ep != nil {
			evs = append(evs, api.Event{Type: api.EventResult, AgentID: a.ID, Episode: ep})
		}
		if finished {
			evs = append(evs, api.Event{Type: api.EventFinish, AgentID: a.ID, Agent: a, Message: a.StateReason})
		}
		return evs
	})
	if err != nil {
		return nil, err
	}
	if finished {
		s.runEnded(runID)
	}
	return d, nil
}

// decisionOf checks a person's decision request and makes the decision it asks for.
// Each kind carries only its own fields: feedback on a deny would reach the model's
// history unbounded, a count on a deny would be recorded as if it meant something.
func decisionOf(req api.DecideRequest) (*api.Decision, error) {
	if req.ProposalID == "" {
		return nil, badRequest("proposal_id is required: decisions name the proposal they decide")
	}
	if req.Kind != api.DecisionFeedback && req.Feedback != "" {
		return nil, badRequest("feedback goes with kind feedback, not %s: send it as its own decision", req.Kind)
	}
	if req.Kind != api.DecisionApprove && req.Count != 0 {
		return nil, badRequest("count goes with kind approve, not %s: drop it", req.Kind)
	}
	switch req.Kind {
	case api.DecisionApprove:
		if req.Count == 0 {
			req.Count = 1
		}
		if req.Count < 1 || req.Count > maxApproveCount {
			return nil, badRequest("count %d: want 1 to %d", req.Count, maxApproveCount)
		}
	case api.DecisionDeny:
	case api.DecisionFeedback:
		req.Feedback = strings.TrimSpace(req.Feedback)
		if req.Feedback == "" {
			return nil, badRequest("feedback is empty")
		}
		// A front end that forgot to catch "?" must not drop the proposal for it.
		if api.IsHelp(req.Feedback) {
			return nil, badRequest("%q asks for help, so it was not sent as feedback and the proposal still waits; answer with one of:\n%s", req.Feedback, api.DecisionHelp)
		}
		if len(req.Feedback) > api.MaxTextBytes {
			return nil, badRequest("feedback is %d bytes: at most %d; shorten it or split it over several decisions", len(req.Feedback), api.MaxTextBytes)
		}
	default:
		return nil, badRequest("kind %q: use approve, deny or feedback", req.Kind)
	}
	switch req.Source {
	case "":
		req.Source = "api"
	case "policy", cycle.SourceGrant:
		return nil, badRequest(`source %q is reserved for the daemon's own approvals`, req.Source)
	}
	return &api.Decision{ProposalID: req.ProposalID, Kind: req.Kind, Count: req.Count, Feedback: req.Feedback, By: req.By, ByName: req.ByName, UID: req.UID, Source: req.Source, Scope: req.Scope}, nil
}

// widen checks a decision's scope. Approve always (y!) makes an exact grant (Authorize's
// NewGrant) where a pattern could be stored, so a line the rules always ask about stays
// asked; deny always (n!) stores the deny pattern of the proposal's command and subject.
func (s *decisions) widen(ctx context.Context, ref string, req api.DecideRequest, d *api.Decision) error {
	switch {
	case req.Scope == api.ScopeOnce:
		return nil
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
	var p *api.Proposal
	var spec *commands.Spec
	err := s.st.View(ctx, func(tx *store.Tx) error {
		a, err := resolve(tx, ref)
		if err != nil {
			return err
		}
		if p, err = tx.Proposal(req.ProposalID); errors.Is(err, store.ErrNotFound) || (err == nil && p.AgentID != a.ID) {
			return notFound("agent %s has no proposal %s", a.Name, req.ProposalID)
		} else if err != nil {
			return err
		}
		spec = s.specIn(ctx, s.live(), tx, a, p.Command)
		return nil
	})
	if err != nil {
		return err
	}
	pat, err := policy.ScopePattern(req.Scope, spec, p)
	if err != nil {
		return badRequest("%v", err)
	}
	if req.Scope == api.ScopeDeny {
		d.Pattern = pat
	}
	return nil
}

// decisionEvent is the cycle's event for a person's decision d on p.
func decisionEvent(p *api.Proposal, d *api.Decision) cycle.Event {
	switch {
	case d.Kind == api.DecisionApprove && d.Count > 1:
		return cycle.Event{Kind: cycle.ApproveN}
	case d.Kind == api.DecisionDeny:
		return cycle.Event{Kind: cycle.Deny, Reason: "run stopped: " + p.Command + " denied by " + who(d), Detail: "denied by " + who(d)}
	case d.Kind == api.DecisionFeedback:
		return cycle.Event{Kind: cycle.GiveFeedback}
	}
	return cycle.Event{Kind: cycle.Approve}
}

func who(d *api.Decision) string { return cycle.Who(d) }

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

// decidable checks that id names a's current proposal and that it still takes a decision.
func decidable(tx *store.Tx, a *store.Agent, id string) (*api.Proposal, error) {
	p, err := tx.Proposal(id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && p.AgentID != a.ID) {
		return nil, notFound("agent %s has no proposal %s", a.Name, id)
	} else if err != nil {
		return nil, err
	}
	if p.Status == api.ProposalSuperseded {
		return nil, conflict("proposal %s was superseded: the agent has moved on; decide on its current proposal", id)
	}
	if !p.Status.Decidable() {
		return nil, alreadyDecided(tx, id, nil)
	}
	if open, err := tx.OpenProposal(a.ID); err != nil || open.ID != p.ID {
		return nil, conflict("proposal %s is not the agent's current proposal", id)
	}
	return p, nil
}

// minShownHash is the shortest prefix of a proposal's Hash a decision may carry: chat
// buttons carry 16 hex characters (bots.HashLen).
const minShownHash = 16

// shownIs checks that hash, the proposal as the person saw it, is p: a lowercase hex
// prefix of p.Hash of at least minShownHash characters. Empty means the caller shows no
// hash (agentctl decides on what it just fetched).
func shownIs(p *api.Proposal, hash string) error {
	if hash == "" {
		return nil
	}
	if len(hash) < minShownHash || !isLowerHex(hash) || !strings.HasPrefix(p.Hash, hash) {
		return conflict("proposal %s changed since it was shown: decide on the one shown now", p.ID)
	}
	return nil
}

func isLowerHex(s string) bool {
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func alreadyDecided(tx *store.Tx, id string, err error) error {
	if err != nil && !errors.Is(err, errMoved) {
		return err
	}
	if d, err := tx.LastDecision(id); err == nil {
		return conflict("proposal %s was already decided: %s by %s", id, d.Kind, who(d))
	}
	return conflict("proposal %s takes no decision now", id)
}

// Answer answers the agent's open ask_user question; the answer is the command's result.
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
	var ep *api.Episode
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
		ep = episodeOf(p, "succeeded", "The person answered: "+text, "")
		res, err := apply(tx, &change{a: a, p: p, ev: cycle.Event{Kind: cycle.Answer, Result: text}, episode: ep, rec: s.recordEpisode})
		if err != nil {
			return err
		} else if !res.moved {
			return conflict("question %s was already answered", p.ID)
		}
		if err := tx.ClearQuestions(a.ID); err != nil {
			return err
		}
		if err := tx.Audit(a.ID, "answer", answerAudit(p.ID, req)); err != nil {
			return err
		}
		return nil
	}, func(a *api.Agent) []api.Event {
		return []api.Event{{Type: api.EventResult, AgentID: a.ID, Episode: ep}}
	})
	return err
}

// decisions records people's decisions and answers on proposals: the one path agentctl,
// chat, schedules and the Agent Protocol share.
type decisions struct {
	st   *store.Store
	live func() *live // the settings in use: the patterns a decision is weighed against

	// What recording a decision needs of the other parts: changing an agent under its
	// runner's lock and ending a run (runs), ending a step (recordEpisode), counting
	// decisions (metrics) and the specs of commands (the pipelines).
	mutateThen    func(ctx context.Context, ref string, fn func(tx *store.Tx, a *store.Agent) error, events func(*api.Agent) []api.Event) (*api.Agent, error)
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
