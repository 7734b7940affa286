package team

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/backoff"
	"github.com/agentd/agentd/internal/display"
)

// cursor is where a team run is in its workflow. It is stored with the run and moved in
// the same transaction as the transcript entries that move it.
type cursor struct {
	State      string `json:"state"`
	Index      int    `json:"index"`                 // the phase of the state's list that runs
	Sub        int    `json:"sub,omitempty"`         // the sub-phase, in a composed phase
	Cycle      int    `json:"cycle,omitempty"`       // the composed phase's cycle, from 1
	PhaseSeq   int    `json:"phase_seq,omitempty"`   // the running phase instance; 0: none started
	Phases     int    `json:"phases,omitempty"`      // phase instances started so far
	Turn       int    `json:"turn,omitempty"`        // messages in the running phase instance
	StateTurns int    `json:"state_turns,omitempty"` // messages in the current state
	Seq        int    `json:"seq,omitempty"`         // the transcript's last seq
}

// errEnded stops a loop whose run ended (stopped by a person) while it worked.
var errEnded = errors.New("team run ended")

// step is one unit of progress: what the loop computed (model calls, an agent's run),
// applied to the run in one transaction.
type step struct {
	turns []api.TeamTurn    // appended to the transcript in order; Seq is set on commit
	vars  map[string]string // variables set
	c     cursor            // the new cursor
	// end, when set, ends the run with this status and the reason.
	end, reason string
	// waitAgent and waitRun set (or with clear, clear) what the run waits for.
	waitAgent, waitRun string
	clearWait          bool
	agents             map[string]string // role agents created
	countTurn          bool              // a message was said: the run's turn count goes up
	phase              string            // the phase at the new cursor, as the API shows it
}

// phaseAt names the two-role phase at c ("" between phases of a state and its transition).
func phaseAt(wf *Workflow, c cursor) string {
	st := wf.States[c.State]
	if st == nil || c.Index >= len(st.Phases) {
		return ""
	}
	ph := wf.Phases[st.Phases[c.Index]]
	if ph.Composed() && c.Sub < len(ph.Phases) {
		return ph.Phases[c.Sub]
	}
	return ph.Name
}

// loop drives one team run until it ends or ctx does.
func (e *Engine) loop(ctx context.Context, id string, l *live) {
	failures := 0
	for ctx.Err() == nil {
		r, wf, c, ok := e.read(ctx, id)
		if !ok {
			return
		}
		s, wait, err := e.next(ctx, l, r, wf, c)
		// A role run that started is recorded even when a stop cancelled ctx meanwhile:
		// the stop may have read no run to stop, so the step's commit, finding the team
		// ended, is what stops it. Dropping the step would leave that run going.
		started := err == nil && s != nil && s.waitRun != ""
		switch {
		case ctx.Err() != nil && !started:
			return
		case wait:
			select {
			case <-l.wake:
			case <-ctx.Done():
				return
			}
			continue
		case err != nil:
			var me *modelError
			if !errors.As(err, &me) {
				e.fail(ctx, r, err.Error())
				return
			}
			failures++
			if !e.retryModel(ctx, r, failures, me) {
				return
			}
			continue
		}
		failures = 0
		s.phase = phaseAt(wf, s.c)
		if !e.record(ctx, id, l, s, started) {
			return
		}
	}
}

// read reads team run id with its workflow and cursor; false ends the loop: the run
// is gone or over, or what it stored no longer reads (the run fails).
func (e *Engine) read(ctx context.Context, id string) (*store.TeamRun, *Workflow, cursor, bool) {
	var c cursor
	r, err := store.Read(ctx, e.st, func(tx *store.Tx) (*store.TeamRun, error) { return tx.TeamRun(id) })
	if err != nil {
		if ctx.Err() == nil {
			e.log.Error("team: reading run", "team", id, "err", err)
		}
		return nil, nil, c, false
	}
	if r.Status != api.TeamRunning {
		return nil, nil, c, false
	}
	wf, err := Parse(r.File, []byte(r.Source))
	if err != nil {
		e.fail(ctx, r, "the workflow no longer parses: "+err.Error())
		return nil, nil, c, false
	}
	if err := json.Unmarshal(r.Cursor, &c); err != nil {
		e.fail(ctx, r, "the stored cursor is unreadable: "+err.Error())
		return nil, nil, c, false
	}
	return r, wf, c, true
}

// retryModel waits out a failed model call, the failures-th in a row, with backoff cut
// short when the pool finds a host of the model back; false ends the loop (the run
// fails after too many, or ctx ended).
func (e *Engine) retryModel(ctx context.Context, r *store.TeamRun, failures int, me *modelError) bool {
	if failures >= e.opt.ModelAttempts {
		e.fail(ctx, r, fmt.Sprintf("the model failed %d times in a row: %v", failures, me.err))
		return false
	}
	e.log.Warn("team: model call failed", "team", r.ID, "attempt", failures, "err", me.err)
	back, stop := e.opt.LLM.Servable(e.opt.Settings().Model)
	defer stop()
	return backoff.SleepOr(ctx, e.opt.Backoff(failures), nil, back)
}

// record applies step s to team run id; false ends the loop (the team ended, or ctx
// did). A role run s started is the team's to stop when the team ended meanwhile.
func (e *Engine) record(ctx context.Context, id string, l *live, s *step, started bool) bool {
	actx := ctx
	if started {
		actx = context.WithoutCancel(ctx)
	}
	err := e.apply(actx, id, s)
	if err == nil {
		return true
	}
	if errors.Is(err, errEnded) && started {
		// Stopped while the role's run started: that run is the team's to stop.
		if _, err := e.opt.Agents.Stop(context.WithoutCancel(ctx), s.waitAgent); err != nil && !errors.Is(err, api.ErrConflict) {
			e.log.Warn("team: stopping the role agent's run", "team", id, "agent", s.waitAgent, "err", err)
		}
	}
	if errors.Is(err, errEnded) {
		l.orphans = slices.AppendSeq(l.orphans, maps.Values(s.agents))
		return false
	}
	if ctx.Err() != nil {
		return false
	}
	e.log.Error("team: recording a step", "team", id, "err", err)
	return backoff.Sleep(ctx, e.opt.Backoff(1))
}

// modelError marks a failed model call, which the loop retries with backoff.
type modelError struct{ err error }

func (m *modelError) Error() string { return "model: " + m.err.Error() }

// fail ends the run as failed (unless it ended meanwhile).
func (e *Engine) fail(ctx context.Context, r *store.TeamRun, reason string) {
	e.log.Warn("team run failed", "team", r.ID, "reason", reason)
	err := e.apply(ctx, r.ID, &step{end: api.TeamFailed, reason: reason})
	if err != nil && !errors.Is(err, errEnded) && ctx.Err() == nil {
		e.log.Error("team: recording the failure", "team", r.ID, "err", err)
	}
}

// apply commits s: its turns, variables and cursor, or the run's end; then it publishes
// what it wrote.
func (e *Engine) apply(ctx context.Context, id string, s *step) error {
	var r *store.TeamRun
	var turns []api.TeamTurn
	err := e.st.Tx(ctx, func(tx *store.Tx) (err error) {
		turns = nil
		r, err = tx.TeamRun(id)
		if err != nil {
			return err
		}
		if r.Status != api.TeamRunning {
			return errEnded // stopped while the step was computed: drop it
		}
		var old cursor
		_ = json.Unmarshal(r.Cursor, &old)
		c := s.c
		if s.end != "" {
			c = old
		}
		c.Seq = old.Seq
		for _, t := range s.turns {
			c.Seq++
			t.Seq = c.Seq
			row := &store.TeamTurn{TeamRunID: id, PhaseSeq: old.PhaseSeq, TeamTurn: t}
			if err := tx.InsertTeamTurn(row); err != nil {
				return err
			}
			turns = append(turns, row.TeamTurn)
		}
		maps.Copy(r.Vars, s.vars)
		maps.Copy(r.Agents, s.agents)
		if s.countTurn {
			r.Turns++
		}
		if s.clearWait {
			r.Waiting, r.WaitRun = "", ""
		}
		if s.waitRun != "" {
			r.Waiting, r.WaitRun = s.waitAgent, s.waitRun
		}
		r.Cursor, _ = json.Marshal(c)
		r.State = c.State
		if s.end != "" {
			if s.phase == "" {
				s.phase = r.Phase // keep where it ended
			}
			r.Phase = s.phase
			end, err := endTx(tx, r, s.end, s.reason)
			turns = append(turns, end)
			return err
		}
		r.Phase = s.phase
		return tx.UpdateTeamRun(r)
	})
	if err == nil {
		e.publish(r, turns, s.waitAgent)
	}
	return err
}

// next computes the run's next step. wait reports that the run waits for a role agent's
// run to end (RunEnded wakes it).
func (e *Engine) next(ctx context.Context, l *live, r *store.TeamRun, wf *Workflow, c cursor) (s *step, wait bool, err error) {
	if r.Turns >= wf.MaxTurns && r.WaitRun == "" {
		return &step{end: api.TeamTurnLimit, reason: fmt.Sprintf("the run used its %d turns", wf.MaxTurns)}, false, nil
	}
	st, ok := wf.States[c.State]
	if !ok {
		return nil, false, fmt.Errorf("state %q is not in the workflow", c.State)
	}
	if c.Index >= len(st.Phases) {
		s, err := e.transition(ctx, r, wf, st, c)
		return s, false, err
	}
	ph := wf.Phases[st.Phases[c.Index]]
	if c.PhaseSeq == 0 {
		return e.startPhase(wf, st, ph, c), false, nil
	}
	cur := ph
	if ph.Composed() {
		cur = wf.Phases[ph.Phases[c.Sub]]
	}
	return e.turn(ctx, l, r, wf, st, ph, cur, c)
}

// startPhase opens the next phase instance.
func (e *Engine) startPhase(wf *Workflow, st *State, ph *Phase, c cursor) *step {
	if ph.Composed() && c.Cycle == 0 {
		c.Cycle, c.Sub = 1, 0
	}
	c.Phases++
	c.PhaseSeq, c.Turn = c.Phases, 0
	return &step{c: c}
}

// endPhase is the step that ends the running phase instance (after its last message,
// if any), stores its conclusion, and moves the cursor to what comes next.
func (e *Engine) endPhase(r *store.TeamRun, wf *Workflow, st *State, ph, cur *Phase, c cursor, s *step, mode, reason, conclusion string) *step {
	vars := map[string]string{}
	maps.Copy(vars, r.Vars)
	maps.Copy(vars, s.vars)
	if conclusion != "" && cur.Store != "" {
		if s.vars == nil {
			s.vars = map[string]string{}
		}
		s.vars[cur.Store] = conclusion
		vars[cur.Store] = conclusion
		s.turns = append(s.turns, api.TeamTurn{Kind: api.TurnConclusion, State: st.Name, Phase: cur.Name,
			Cycle: c.Cycle, Text: conclusion, Mode: cur.Store})
	}
	s.turns = append(s.turns, api.TeamTurn{Kind: api.TurnPhaseEnd, State: st.Name, Phase: cur.Name, Cycle: c.Cycle, Text: reason, Mode: mode})
	c.PhaseSeq, c.Turn = 0, 0
	switch {
	case mode == "state_turn_limit":
		c.Index, c.Sub, c.Cycle = len(st.Phases), 0, 0 // the state's other phases are skipped
	case !ph.Composed():
		c.Index++
	case ph.Until != nil && ph.Until.Eval(vars):
		s.turns = append(s.turns, api.TeamTurn{Kind: api.TurnPhaseEnd, State: st.Name, Phase: ph.Name, Cycle: c.Cycle,
			Text: fmt.Sprintf("its break condition %q holds", ph.Until), Mode: "break"})
		c.Index, c.Sub, c.Cycle = c.Index+1, 0, 0
	case c.Sub+1 < len(ph.Phases):
		c.Sub++
	case c.Cycle < ph.Cycles:
		c.Sub, c.Cycle = 0, c.Cycle+1
	default:
		s.turns = append(s.turns, api.TeamTurn{Kind: api.TurnPhaseEnd, State: st.Name, Phase: ph.Name, Cycle: c.Cycle,
			Text: fmt.Sprintf("ran its %d cycles", ph.Cycles), Mode: "cycle_limit"})
		c.Index, c.Sub, c.Cycle = c.Index+1, 0, 0
	}
	s.c = c
	return s
}

// turn takes the next turn of a two-role phase, or ends the phase.
func (e *Engine) turn(ctx context.Context, l *live, r *store.TeamRun, wf *Workflow, st *State, ph, cur *Phase, c cursor) (*step, bool, error) {
	var hist []api.TeamTurn
	err := e.st.View(ctx, func(tx *store.Tx) error {
		turns, err := tx.TeamTurns(r.ID, c.PhaseSeq)
		for _, t := range turns {
			if t.Kind == api.TurnMessage {
				hist = append(hist, t.TeamTurn)
			}
		}
		return err
	})
	if err != nil {
		return nil, false, err
	}
	if r.WaitRun == "" {
		if c.Turn >= cur.MaxTurns {
			return e.endReflected(ctx, r, wf, st, ph, cur, c, &step{}, "turn_limit", fmt.Sprintf("reached its %d turns without <INFO>", cur.MaxTurns), hist), false, nil
		}
		if st.MaxTurns > 0 && c.StateTurns >= st.MaxTurns {
			return e.endReflected(ctx, r, wf, st, ph, cur, c, &step{}, "state_turn_limit", fmt.Sprintf("state %s reached its %d turns", st.Name, st.MaxTurns), hist), false, nil
		}
	}
	speaker, other := cur.Instructor, cur.Assistant
	if c.Turn%2 == 1 {
		speaker, other = other, speaker
	}
	role := wf.Roles[speaker]
	msg := api.TeamTurn{Kind: api.TurnMessage, State: st.Name, Phase: cur.Name, Cycle: c.Cycle, Role: speaker}
	s := &step{}
	if len(role.Commands) > 0 {
		text, ok, wait, err := e.agentTurn(ctx, l, r, wf, st, cur, role, other, hist, c, s)
		if wait || err != nil || s.waitRun != "" || len(s.agents) > 0 {
			return s, wait, err // waiting, or a step that starts the wait
		}
		s.clearWait = true
		msg.AgentID, msg.RunID = r.Waiting, r.WaitRun
		if !ok {
			return e.endReflected(ctx, r, wf, st, ph, cur, c, s, "no_reply", text, hist), false, nil
		}
		msg.Text = text
	} else {
		text, err := e.chatTurn(ctx, r, wf, st, cur, role, other, hist)
		if err != nil {
			return nil, false, err
		}
		msg.Text = text
	}
	if strings.TrimSpace(msg.Text) == "" {
		return e.endReflected(ctx, r, wf, st, ph, cur, c, s, "no_reply", speaker+" gave an empty reply", hist), false, nil
	}
	s.turns = append(s.turns, msg)
	s.countTurn = true
	c.Turn++
	c.StateTurns++
	if info, ok := Info(msg.Text); ok {
		return e.endPhase(r, wf, st, ph, cur, c, s, "info", speaker+" concluded with <INFO>", info), false, nil
	}
	all := append(hist, msg)
	tr := make([]Msg, 0, len(all))
	for _, h := range all {
		tr = append(tr, Msg{Role: h.Role, Assistant: h.Role == cur.Assistant, Text: h.Text})
	}
	if f := Detect(tr); f != nil {
		return e.endReflected(ctx, r, wf, st, ph, cur, c, s, f.Mode, f.Reason, all), false, nil
	}
	s.c = c
	return s, false, nil
}

// Info returns the conclusion of a reply with a line starting <INFO>: the rest of that
// line and the lines after it.
func Info(text string) (string, bool) {
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "<INFO>"); ok {
			parts := []string{strings.TrimSpace(rest), strings.TrimSpace(strings.Join(lines[i+1:], "\n"))}
			return strings.Join(slices.DeleteFunc(parts, func(s string) bool { return s == "" }), "\n"), true
		}
	}
	return "", false
}

// transition picks the next state, by rule or by the model, or ends the run.
func (e *Engine) transition(ctx context.Context, r *store.TeamRun, wf *Workflow, st *State, c cursor) (*step, error) {
	var options []string
	for _, n := range st.Next {
		if n.When == nil || n.When.Eval(r.Vars) {
			options = append(options, n.State)
		}
	}
	if len(options) == 0 {
		return &step{end: api.TeamFinished, reason: fmt.Sprintf("state %s has no next state whose condition holds", st.Name)}, nil
	}
	next, why := options[0], "the first next state whose condition holds"
	if st.Choose == "model" && len(options) > 1 {
		var err error
		if next, why, err = e.choose(ctx, r, wf, st, options); err != nil {
			return nil, err
		}
	}
	if next == End {
		return &step{end: api.TeamFinished, reason: fmt.Sprintf("state %s led to the end: %s", st.Name, why)}, nil
	}
	s := &step{c: cursor{State: next, Phases: c.Phases, Seq: c.Seq}}
	s.turns = []api.TeamTurn{{Kind: api.TurnTransition, State: next, Text: fmt.Sprintf("%s → %s: %s", st.Name, next, why), Mode: st.Choose}}
	return s, nil
}

// endReflected ends a phase that reached no <INFO>. With reflect set, the model writes
// the conclusion from the transcript; a reflection that fails or gives none is said in
// the phase end's reason, never left as a silent lack of conclusion.
func (e *Engine) endReflected(ctx context.Context, r *store.TeamRun, wf *Workflow, st *State, ph, cur *Phase, c cursor, s *step, mode, reason string, hist []api.TeamTurn) *step {
	var conclusion string
	switch {
	case !cur.Reflect:
	case len(hist) == 0:
		reason += "; nothing was said to reflect on"
	default:
		var err error
		switch conclusion, err = e.reflect(ctx, r, wf, st, cur, hist); {
		case err != nil:
			e.log.Warn("team: reflection failed", "team", r.ID, "phase", cur.Name, "err", err)
			reason += "; reflection failed, so no conclusion: " + display.Cut(err.Error(), 300, display.Ellipsis)
		case conclusion == "":
			reason += "; reflection gave no conclusion"
		default:
			reason += "; the conclusion is the model's reflection on the transcript"
		}
	}
	return e.endPhase(r, wf, st, ph, cur, c, s, mode, reason, conclusion)
}

// agentTurn runs a turn of a role with commands as a run of its agent. It returns the
// agent's finish reason (ok) or why there is none; with s.waitRun or s.agents set, the
// caller commits s first (the agent was created or its run started).
func (e *Engine) agentTurn(ctx context.Context, l *live, r *store.TeamRun, wf *Workflow, st *State, cur *Phase, role *Role, other string, hist []api.TeamTurn, c cursor, s *step) (text string, ok, wait bool, err error) {
	if r.WaitRun != "" {
		e.waitFor(l, r.Waiting)
		run, err := store.Read(ctx, e.st, func(tx *store.Tx) (*store.Run, error) { return tx.Run(r.WaitRun) })
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Sprintf("the run of %s's agent is gone (the agent was removed)", role.Name), false, false, nil
		} else if err != nil {
			return "", false, false, err
		}
		if run.Ended.IsZero() {
			return "", false, true, nil
		}
		if run.Outcome != api.RunFinished {
			return fmt.Sprintf("%s's agent run ended %s: %s", role.Name, run.Outcome, run.Reason), false, false, nil
		}
		return run.Reason, true, false, nil
	}
	id := r.Agents[role.Name]
	if id == "" {
		a, err := e.roleAgent(ctx, r, role)
		if err != nil {
			return "", false, false, err
		}
		s.agents = map[string]string{role.Name: a.ID}
		s.c = c
		return "", false, false, nil
	}
	e.waitFor(l, id)
	task := agentTask(r, wf, st, cur, role, other, hist)
	opt := agentRunOptions(r, role)
	a, err := e.opt.Agents.StartTask(ctx, id, task, opt)
	if errors.Is(err, api.ErrConflict) {
		// A restart between starting the run and recording it: adopt the agent's run.
		if a, err = e.opt.Agents.Agent(ctx, id); err == nil && a.RunID == "" {
			err = fmt.Errorf("role agent %s is busy without a run", id)
		}
	}
	if errors.Is(err, api.ErrNotFound) {
		return "", false, false, fmt.Errorf("the agent of role %s (%s) was removed", role.Name, id)
	}
	if err != nil {
		return "", false, false, err
	}
	s.waitAgent, s.waitRun, s.c = id, a.RunID, c
	return "", false, false, nil
}

// roleAgent creates the idle agent of a role (or finds it, when a restart came between
// creating and recording it).
func (e *Engine) roleAgent(ctx context.Context, r *store.TeamRun, role *Role) (*api.Agent, error) {
	name := AgentName(r.ID, role.Name)
	start := false
	a, err := e.opt.Agents.CreateAgent(ctx, api.CreateAgentRequest{
		Name: name, Description: fmt.Sprintf("the %s of team run %s (%s): %s", role.Name, r.ID, r.Workflow, role.Description),
		Start: &start, Commands: role.Commands,
	})
	if errors.Is(err, api.ErrConflict) {
		return e.opt.Agents.Agent(ctx, name)
	}
	return a, err
}
