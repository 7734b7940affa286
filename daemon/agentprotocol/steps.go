package agentprotocol

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/localapi"
	"github.com/agentd/agentd/internal/display"
)

func (h *handler) listSteps(w http.ResponseWriter, r *http.Request) error {
	cur, size, err := pageParams(r)
	if err != nil {
		return err
	}
	rp, a, err := h.task(r.Context(), r.PathValue("task_id"))
	if err != nil {
		return err
	}
	lo, hi, p := paginate(len(rp.Steps), cur, size)
	out := StepListResponse{Steps: []Step{}, Pagination: p}
	m := h.mapper(r.Context(), rp, a)
	for i := lo; i < hi; i++ {
		out.Steps = append(out.Steps, m.step(i))
	}
	return localapi.Reply(w, http.StatusOK, out)
}

func (h *handler) getStep(w http.ResponseWriter, r *http.Request) error {
	rp, a, err := h.task(r.Context(), r.PathValue("task_id"))
	if err != nil {
		return err
	}
	id := r.PathValue("step_id")
	for i, s := range rp.Steps {
		if s.Proposal.ID == id {
			return localapi.Reply(w, http.StatusOK, h.mapper(r.Context(), rp, a).step(i))
		}
	}
	return errorf(http.StatusNotFound, "task %s has no step %q", rp.Run.ID, id)
}

// executeStep decides the task's pending proposal (or answers its question) and waits
// until the agent has settled, then returns the decided step.
func (h *handler) executeStep(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	var req StepRequest
	if err := localapi.DecodeBody(w, r, &req, true); err != nil {
		return err
	}
	input := strings.TrimSpace(*cmp.Or(req.Input, new(string)))
	kind, count, wantStep, err := stepOptions(req.AdditionalInput, input)
	if err != nil {
		return err
	}
	id := r.PathValue("task_id")
	a, err := h.settledTask(ctx, id)
	if err != nil {
		return err
	}
	decided := ""
	switch {
	case kind == resumeStep:
		if a.State != api.StatePaused {
			return errorf(http.StatusConflict, "task %s: the agent is %s, not paused: there is nothing to resume", id, a.State)
		}
		if _, err := h.svc.Resume(ctx, a.ID); err != nil { // as agentctl resume: it clears an unchecked change's mark
			return err
		}
	case a.Question != nil:
		if input == "" {
			return errorf(http.StatusUnprocessableEntity, "the agent asked %q: send the answer as the step's input", a.Question.Text)
		}
		if wantStep != "" && wantStep != a.Question.ProposalID {
			return errorf(http.StatusConflict, "step %s is not the pending step (%s is)", wantStep, a.Question.ProposalID)
		}
		if err := h.svc.Answer(ctx, a.ID, api.AnswerRequest{ProposalID: a.Question.ProposalID, Text: input, By: By}); err != nil {
			return err
		}
		decided = a.Question.ProposalID
	case a.Pending != nil:
		if wantStep != "" && wantStep != a.Pending.ID {
			return errorf(http.StatusConflict, "step %s is not the pending step (%s is)", wantStep, a.Pending.ID)
		}
		ref, seen := h.shownRef(a.Pending.ID)
		if kind == api.DecisionApprove && (wantStep == "" || seen) && ref != a.Pending.Ref() {
			// Never approve what the client has not seen (AutoGPT's first step only
			// proposes), nor a preview run again since: show it; the next step approves it.
			return h.replyStep(w, r, id, a.Pending.ID)
		}
		// The decision names what was shown: changed meanwhile, the daemon refuses it.
		d := api.DecideRequest{ProposalID: a.Pending.ID, Hash: ref, Kind: kind, Count: count, By: By, Source: By}
		if kind == api.DecisionFeedback {
			d.Feedback = input
		}
		if _, err := h.svc.Decide(ctx, a.ID, d); err != nil {
			return err
		}
		decided = a.Pending.ID
	case a.State == api.StatePaused:
		if a.Unchecked != "" || strings.HasPrefix(a.StateReason, api.UncheckedWaits) {
			// Only a resume that says so clears that mark, a person having looked: an empty
			// step, which a client loops on, does not.
			return errorf(http.StatusConflict, "the agent is paused on an unchecked change (%s): once a person has looked at the workspace (agentctl diff %s), "+
				`resume it with a step whose additional_input is {"decision": "resume"}, or with agentctl resume %s; an empty step does not`, a.StateReason, a.Name, a.Name)
		}
		if input != "" {
			return errorf(http.StatusConflict, "the agent is paused (%s): send an empty input to resume it", a.StateReason)
		}
		if _, err := h.svc.Resume(ctx, a.ID); err != nil {
			return err
		}
	case a.State == api.StateFailed:
		return errorf(http.StatusConflict, "task %s: the agent failed: %s", id, a.StateReason)
	default:
		return errorf(http.StatusConflict, "the agent is still %s after %s: send the step again to wait longer", a.State, h.stepWait)
	}
	if _, err := h.settle(ctx, a.ID, id, decided); err != nil {
		return err
	}
	return h.replyStep(w, r, id, decided)
}

// settledTask waits until the agent of task id has stopped thinking — only then is there
// something to decide — and returns it; an error when the task has ended meanwhile.
func (h *handler) settledTask(ctx context.Context, id string) (*api.Agent, error) {
	rp, a, err := h.task(ctx, id)
	if err != nil {
		return nil, err
	}
	if a == nil {
		return nil, errorf(http.StatusConflict, "task %s: its agent was deleted", id)
	}
	if a, err = h.settle(ctx, a.ID, id, ""); err != nil {
		return nil, err
	}
	if a.RunID != id || a.State == api.StateIdle {
		if rp, _, err = h.task(ctx, id); err != nil { // for the run's outcome, set meanwhile
			return nil, err
		}
	}
	return a, ended(a, id, rp)
}

// replyStep replies with the task's step stepID; "" is its latest.
func (h *handler) replyStep(w http.ResponseWriter, r *http.Request, taskID, stepID string) error {
	rp, a, err := h.task(r.Context(), taskID)
	if err != nil {
		return err
	}
	i := len(rp.Steps) - 1
	for j, s := range rp.Steps {
		if s.Proposal.ID == stepID {
			i = j
		}
	}
	if i < 0 {
		return errorf(http.StatusConflict, "task %s has no step yet: the agent is %s", taskID, a.State)
	}
	return localapi.Reply(w, http.StatusOK, h.mapper(r.Context(), rp, a).step(i))
}

// shownRef is the Ref of proposal proposalID as a reply last showed it, as a step or as
// the next one; seen is false when no reply has shown it.
func (h *handler) shownRef(proposalID string) (ref string, seen bool) {
	v, seen := h.shown.Load(proposalID)
	if !seen {
		return "", false
	}
	return v.(string), true
}

// resumeStep is additional_input.decision of a step that resumes a paused agent, as
// agentctl resume does: the one step that clears an unchecked change's mark.
const resumeStep api.DecisionKind = "resume"

// stepOptions reads a step's additional_input.
func stepOptions(ai map[string]any, input string) (kind api.DecisionKind, count int, step string, err error) {
	kind = api.DecisionApprove
	if input != "" {
		kind = api.DecisionFeedback
	}
	if v, ok := ai["decision"]; ok {
		s, _ := v.(string)
		switch api.DecisionKind(s) {
		case api.DecisionApprove, api.DecisionDeny:
			kind = api.DecisionKind(s)
		case resumeStep:
			if input != "" {
				return "", 0, "", errorf(http.StatusUnprocessableEntity, "additional_input.decision is resume, which takes no input: send an empty input")
			}
			kind = resumeStep
		case api.DecisionFeedback:
			if input == "" {
				return "", 0, "", errorf(http.StatusUnprocessableEntity, "additional_input.decision is feedback but input is empty: put the feedback in input")
			}
			kind = api.DecisionFeedback
		default:
			return "", 0, "", errorf(http.StatusUnprocessableEntity, "additional_input.decision %v: want approve, deny, feedback or resume", v)
		}
	}
	if v, ok := ai["count"]; ok {
		f, ok := v.(float64)
		if !ok || f != float64(int(f)) || f < 1 {
			return "", 0, "", errorf(http.StatusUnprocessableEntity, "additional_input.count %v: want a whole number of at least 1", v)
		}
		if kind != api.DecisionApprove {
			return "", 0, "", errorf(http.StatusUnprocessableEntity, "additional_input.count goes with an approval, not %s", kind)
		}
		count = int(f)
	}
	if v, ok := ai["step_id"]; ok {
		if step, ok = v.(string); !ok || step == "" {
			return "", 0, "", errorf(http.StatusUnprocessableEntity, "additional_input.step_id %v: want a step id", v)
		}
	}
	return kind, count, step, nil
}

// ended refuses a step on a task whose run is over.
func ended(a *api.Agent, id string, rp *api.Replay) error {
	if a.RunID == id && a.State != api.StateIdle {
		return nil
	}
	why := string(rp.Run.Outcome)
	if rp.Run.Reason != "" {
		why += ": " + rp.Run.Reason
	}
	if why == "" {
		why = "the agent moved on to another task"
	}
	return errorf(http.StatusConflict, "task %s has ended (%s): create a new task to go on", id, why)
}

// busy states change by themselves; the others wait for a person or are final.
func busy(s api.AgentState) bool {
	return s == api.StateThinking || s == api.StateExecuting || s == api.StateWaitingForModel
}

// settle polls the agent until it waits for a person on something other than decided,
// or has left the run, or stepWait passes; it returns the agent as last seen.
func (h *handler) settle(ctx context.Context, agentID, runID, decided string) (*api.Agent, error) {
	deadline := time.Now().Add(h.stepWait)
	delay := 5 * time.Millisecond
	for {
		a, err := h.svc.Agent(ctx, agentID)
		if err != nil {
			if errors.Is(err, api.ErrNotFound) {
				return nil, errorf(http.StatusConflict, "task %s: its agent was deleted", runID)
			}
			return nil, err
		}
		open := ""
		if a.Pending != nil {
			open = a.Pending.ID
		} else if a.Question != nil {
			open = a.Question.ProposalID
		}
		if a.RunID != runID || (!busy(a.State) && (open == "" || open != decided)) || time.Now().After(deadline) {
			return a, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(delay*2, 100*time.Millisecond)
	}
}

// stepMapper turns a run's replay into protocol steps.
type stepMapper struct {
	h       *handler
	rp      *api.Replay
	a       *api.Agent
	writers map[string]bool // commands that write the workspace
}

func (h *handler) mapper(ctx context.Context, rp *api.Replay, a *api.Agent) *stepMapper {
	m := &stepMapper{h: h, rp: rp, a: a, writers: map[string]bool{}}
	if a != nil {
		if cmds, err := h.svc.Commands(ctx, a.ID); err == nil {
			for _, c := range cmds {
				if c.Class == "write_workspace" {
					m.writers[c.Name] = true
				}
			}
		}
	}
	return m
}

func (m *stepMapper) step(i int) Step {
	rs := m.rp.Steps[i]
	p := rs.Proposal
	s := Step{TaskID: m.rp.Run.ID, StepID: p.ID, Name: shown(p.Command), Artifacts: []Artifact{}}
	last := i == len(m.rp.Steps)-1
	s.IsLast = last && m.rp.Run.Outcome != ""
	action := p.Command + " " + compact(p.Args)
	var out []string
	if p.Thoughts.Speak != "" {
		out = append(out, p.Thoughts.Speak)
	}
	asking := p.Command == "ask_user" && p.Status == api.ProposalStarted
	switch {
	case asking:
		s.Status = StatusCreated
		out = append(out, "The agent asks: "+questionOf(p)+" — send the answer as the next step's input.")
	case p.Status.Decidable():
		s.Status = StatusCreated
		m.h.shown.Store(p.ID, p.Ref())
		verb := "Proposes"
		if p.Status == api.ProposalInterrupted {
			verb = "Proposes again (it was running when the daemon stopped, or its effect preview was run again)"
		}
		out = append(out, fmt.Sprintf("%s %s — awaiting a decision: send an empty input to approve it, or text as feedback.", verb, action))
	case p.Status == api.ProposalApproved || p.Status == api.ProposalStarted:
		s.Status = StatusRunning
		out = append(out, "Running "+action+".")
	default:
		s.Status = StatusCompleted
		out = append(out, outcome(p, action))
	}
	for _, d := range rs.Decisions {
		if d.Kind == api.DecisionFeedback {
			s.Input = shown(d.Feedback)
		}
	}
	if p.Command == "ask_user" && p.Status == api.ProposalSucceeded {
		s.Input = shown(p.Result)
	}
	if !last {
		n := m.rp.Steps[i+1].Proposal
		m.h.shown.Store(n.ID, n.Ref())
		next := "Next: proposes " + n.Command + " " + compact(n.Args) + " (step " + n.ID + ")."
		if n.Thoughts.Speak != "" {
			next = "Next: " + n.Thoughts.Speak + " — proposes " + n.Command + " " + compact(n.Args) + " (step " + n.ID + ")."
		}
		out = append(out, next)
	}
	if s.IsLast {
		end := "The task ended: " + string(m.rp.Run.Outcome)
		if m.rp.Run.Reason != "" {
			end += " — " + m.rp.Run.Reason
		}
		out = append(out, end+".")
	}
	for i, l := range out {
		out[i] = shown(l) // each line is the daemon's: model text cannot start one
	}
	s.Output = strings.Join(out, "\n")
	ao := map[string]any{
		"command": p.Command, "args": json.RawMessage(orEmpty(p.Args)), "thoughts": p.Thoughts,
		"proposal_status": p.Status, "decisions": nonNil(rs.Decisions),
	}
	if p.Result != "" {
		ao["result"] = p.Result
	}
	if !last {
		ao["next_step_id"] = m.rp.Steps[i+1].Proposal.ID
	}
	if s.IsLast {
		ao["task_outcome"] = m.rp.Run.Outcome
	}
	s.AdditionalOutput = ao
	if p.Status == api.ProposalSucceeded && m.writers[p.Command] {
		if a := m.h.artifactAt(m.a, argPath(p.Args)); a != nil {
			s.Artifacts = append(s.Artifacts, *a)
		}
	}
	return s
}

// outcome says in words how a settled proposal ended.
func outcome(p api.Proposal, action string) string {
	switch p.Status {
	case api.ProposalSucceeded:
		return "Ran " + action + ": " + display.Cut(p.Result, 1000, display.Ellipsis)
	case api.ProposalFailed:
		return "Ran " + action + "; it failed: " + display.Cut(p.Result, 1000, display.Ellipsis)
	case api.ProposalDenied:
		return "Not run: " + action + " was denied."
	case api.ProposalFeedback:
		return "Not run: " + action + "; the feedback went to the agent."
	case api.ProposalSuperseded:
		return "Not run: " + action + " was left undecided when the run moved on."
	}
	return action + ": " + string(p.Status)
}

func questionOf(p api.Proposal) string {
	var q struct {
		Question string `json:"question"`
	}
	json.Unmarshal(p.Args, &q)
	return fmt.Sprintf("%q", q.Question)
}

// argPath is a command's "path" argument, the file a writing command wrote.
func argPath(args json.RawMessage) string {
	var a struct {
		Path string `json:"path"`
	}
	if json.Unmarshal(args, &a) != nil {
		return ""
	}
	return path.Clean(strings.TrimPrefix(a.Path, "/"))
}

func compact(args json.RawMessage) string {
	if len(args) == 0 {
		return "{}"
	}
	return display.Cut(string(args), 300, display.Ellipsis)
}

func orEmpty(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("{}")
	}
	return b
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
