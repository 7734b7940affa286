package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/client"
	"github.com/agentd/agentd/daemon/store"
)

// runner drives one agent's cycle. Its loop reads the stored state, does the one thing that
// state calls for, and writes the outcome back; it holds nothing the store does not.
type runner struct {
	s    *Supervisor
	id   string
	wake chan struct{}

	// mu serializes this agent's state transitions between the loop and API calls.
	// It is never held across a model call or a command execution.
	mu         sync.Mutex
	running    bool // guarded by s.mu
	cancelStep context.CancelFunc
	cancelExec context.CancelFunc

	// smartNext makes the next proposal come from the smart model (after a repeat).
	smartNext bool
	// waitAttempt counts retries while the model server is unavailable.
	waitAttempt int
}

func newRunner(s *Supervisor, id string) *runner {
	return &runner{s: s, id: id, wake: make(chan struct{}, 1)}
}

func (r *runner) wakeUp() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// cancelThinking cancels a model call in flight. Caller holds r.mu.
func (r *runner) cancelThinking() {
	if r.cancelStep != nil {
		r.cancelStep()
	}
}

// cancelAll cancels a model call and a running command. Caller holds r.mu.
func (r *runner) cancelAll() {
	r.cancelThinking()
	if r.cancelExec != nil {
		r.cancelExec()
	}
}

type action int

const (
	actStop action = iota
	actWait
	actThink
	actExecute
)

func (r *runner) loop(ctx context.Context) {
	defer func() {
		r.s.mu.Lock()
		r.running = false
		r.s.mu.Unlock()
	}()
	for ctx.Err() == nil {
		act, p, err := r.next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if errors.Is(err, store.ErrNotFound) {
				return // deleted
			}
			r.s.log.Error("agent loop", "agent", r.id, "err", err)
			if !r.sleep(ctx, time.Second) {
				return
			}
			continue
		}
		switch act {
		case actStop:
			// kick wakes us under s.mu; checking for a wake-up under it too means a task
			// given just as this loop decided to stop is never left without a loop.
			r.s.mu.Lock()
			select {
			case <-r.wake:
				r.s.mu.Unlock()
				continue
			default:
			}
			r.running = false
			r.s.mu.Unlock()
			return
		case actWait:
			select {
			case <-r.wake:
			case <-ctx.Done():
				return
			}
		case actThink:
			r.think(ctx)
		case actExecute:
			r.execute(ctx, p)
		}
	}
}

// sleep waits d, or less when woken; it reports false when ctx ended.
func (r *runner) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.wake:
	case <-ctx.Done():
		return false
	}
	return true
}

// next decides the loop's next action from the stored state. Auto-approval by policy
// happens here, in the same transaction that reads the pending proposal.
func (r *runner) next(ctx context.Context) (action, *client.Proposal, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var act action
	var prop *client.Proposal
	var events []client.Event
	err := r.s.st.Tx(ctx, func(tx *store.Tx) error {
		act, prop, events = actStop, nil, nil
		a, err := tx.Agent(r.id)
		if err != nil {
			return err
		}
		if !active(a.State) {
			return nil
		}
		p, err := tx.OpenProposal(a.ID)
		if errors.Is(err, store.ErrNotFound) {
			act = actThink
			return nil
		} else if err != nil {
			return err
		}
		prop = p
		switch p.Status {
		case client.ProposalApproved:
			act = actExecute
			return nil
		case client.ProposalPending:
			if d := r.autoDecision(a, p); d != nil {
				if _, err := tx.SetProposalStatus(p.ID, client.ProposalApproved, nil, client.ProposalPending); err != nil {
					return err
				}
				if err := tx.InsertDecision(d); err != nil {
					return err
				}
				tx.Audit(a.ID, "decision", d)
				if err := tx.UpdateAgent(a); err != nil {
					return err
				}
				events = append(events, client.Event{Type: client.EventDecision, AgentID: a.ID, Decision: d})
				act = actExecute
				return nil
			}
		case client.ProposalStarted:
			if p.Command != commands.AskUser {
				// Recovery turns these into interrupted or approved at start; seeing one
				// here means its execution is still finishing. Wait for it.
				act = actWait
				return nil
			}
		}
		act = actWait
		if a.State != client.StateAwaitingDecision {
			a.State = client.StateAwaitingDecision
			if err := tx.UpdateAgent(a); err != nil {
				return err
			}
			v, _ := view(tx, a)
			events = append(events, client.Event{Type: client.EventState, AgentID: a.ID, Agent: v})
		}
		return nil
	})
	if err == nil {
		for _, ev := range events {
			r.s.events.Publish(ev)
		}
	}
	return act, prop, err
}

// autoDecision returns the decision the agent's policy makes for p, or nil to ask a person.
// It updates a.Policy's counters; the caller persists a.
func (r *runner) autoDecision(a *store.Agent, p *client.Proposal) *client.Decision {
	if p.Command == commands.AskUser {
		// Asking is harmless, and the person's answer is their decision.
		return &client.Decision{ProposalID: p.ID, Kind: client.DecisionApprove, Count: 1, Source: "policy", By: "ask_user needs no approval"}
	}
	if a.StateReason != "" && a.State == client.StateAwaitingDecision {
		return nil // the watchdog asked a person explicitly
	}
	switch a.Policy.Mode {
	case "auto":
		if a.Policy.AutoSteps > 0 {
			a.Policy.AutoSteps--
			if a.Policy.AutoSteps == 0 {
				a.Policy.Mode = "ask"
			}
			return &client.Decision{ProposalID: p.ID, Kind: client.DecisionApprove, Count: 1, Source: "policy", By: "auto"}
		}
	case "continuous":
		limit := a.Policy.ContinuousLimit
		if limit <= 0 {
			limit = r.s.opt.ContinuousLimit
		}
		if p.Step <= limit {
			return &client.Decision{ProposalID: p.ID, Kind: client.DecisionApprove, Count: 1, Source: "policy", By: "continuous"}
		}
	}
	return nil
}

// Hash is the proposal hash: sha256 over the command name and its canonical args.
func Hash(command string, canonicalArgs []byte) string {
	h := sha256.New()
	h.Write([]byte(command))
	h.Write([]byte{0})
	h.Write(canonicalArgs)
	return hex.EncodeToString(h.Sum(nil))
}

// setState moves the agent to state (if it is still active) and publishes the change.
func (r *runner) setState(ctx context.Context, state client.AgentState, reason string) {
	r.mu.Lock()
	var v *client.Agent
	err := r.s.st.Tx(ctx, func(tx *store.Tx) error {
		a, err := tx.Agent(r.id)
		if err != nil {
			return err
		}
		if !active(a.State) || (a.State == state && a.StateReason == reason) {
			return nil
		}
		a.State, a.StateReason = state, reason
		if err := tx.UpdateAgent(a); err != nil {
			return err
		}
		v, err = view(tx, a)
		return err
	})
	r.mu.Unlock()
	if err == nil && v != nil {
		r.s.events.Publish(client.Event{Type: client.EventState, AgentID: r.id, Agent: v})
	}
}

// execute runs an approved proposal with a write-ahead record: approved → started →
// succeeded|failed. ask_user stops at started: the question waits for its answer.
func (r *runner) execute(ctx context.Context, p *client.Proposal) {
	cmd, ok := r.s.cmds.Get(p.Command)
	var a *store.Agent
	var v *client.Agent
	var q *client.Question
	r.mu.Lock()
	err := r.s.st.Tx(ctx, func(tx *store.Tx) error {
		var err error
		if a, err = tx.Agent(r.id); err != nil {
			return err
		}
		if moved, err := tx.SetProposalStatus(p.ID, client.ProposalStarted, nil, client.ProposalApproved); err != nil || !moved {
			if err == nil {
				err = fmt.Errorf("proposal %s is no longer approved", p.ID)
			}
			return err
		}
		tx.Audit(a.ID, "started", map[string]string{"proposal": p.ID, "command": p.Command})
		if p.Command == commands.AskUser {
			q = &client.Question{ProposalID: p.ID, Text: questionText(p)}
			if err := tx.SetQuestion(a.ID, q); err != nil {
				return err
			}
			a.State = client.StateAwaitingDecision
		} else {
			a.State = client.StateExecuting
		}
		a.StateReason = ""
		if err := tx.UpdateAgent(a); err != nil {
			return err
		}
		v, err = view(tx, a)
		return err
	})
	var execCtx context.Context
	var cancel context.CancelFunc
	if err == nil && q == nil {
		execCtx, cancel = context.WithCancel(ctx)
		r.cancelExec = cancel
	}
	r.mu.Unlock()
	if err != nil {
		r.s.log.Error("starting command", "agent", r.id, "proposal", p.ID, "err", err)
		r.sleep(ctx, time.Second)
		return
	}
	r.s.events.Publish(client.Event{Type: client.EventState, AgentID: r.id, Agent: v})
	if q != nil {
		r.s.events.Publish(client.Event{Type: client.EventQuestion, AgentID: r.id, Question: q})
		return
	}
	defer cancel()

	var out string
	var runErr error
	if !ok {
		runErr = fmt.Errorf("command %q is not available to this agent", p.Command)
	} else {
		env := commands.Env{Workspace: a.Workspace, AgentID: a.ID}
		out, runErr = commands.Run(execCtx, cmd, env, p.Args, r.s.opt.Limits)
	}
	if ctx.Err() != nil {
		// The daemon is shutting down: leave the proposal started so the next start
		// treats it as interrupted rather than guessing its outcome.
		return
	}
	r.finishExecution(ctx, p, out, runErr)
}

func questionText(p *client.Proposal) string {
	var args struct {
		Question string `json:"question"`
	}
	jsonUnmarshal(p.Args, &args)
	if args.Question == "" {
		return "(the agent asked an empty question)"
	}
	return args.Question
}

// finishExecution records the outcome and the episode in one transaction.
func (r *runner) finishExecution(ctx context.Context, p *client.Proposal, out string, runErr error) {
	status, outcome, result := client.ProposalSucceeded, "succeeded", out
	if runErr != nil {
		status, outcome = client.ProposalFailed, "failed"
		result = "Error: " + runErr.Error()
		if out != "" {
			result += "\n" + out
		}
	}
	ep := episodeOf(p, outcome, result, "")
	finished := p.Command == commands.Finish && runErr == nil
	var v *client.Agent
	r.mu.Lock()
	r.cancelExec = nil
	err := r.s.st.Tx(ctx, func(tx *store.Tx) error {
		if _, err := tx.SetProposalStatus(p.ID, status, &result, client.ProposalStarted); err != nil {
			return err
		}
		if err := tx.InsertEpisode(r.id, ep); err != nil {
			return err
		}
		tx.Audit(r.id, outcome, map[string]string{"proposal": p.ID, "command": p.Command})
		a, err := tx.Agent(r.id)
		if err != nil {
			return err
		}
		if finished {
			if err := tx.EndRun(a.RunID, "finished", out); err != nil {
				return err
			}
			a.State, a.StateReason, a.Policy.AutoSteps = client.StateIdle, "finished: "+cut(out, 200), 0
			if a.Policy.Mode == "auto" {
				a.Policy.Mode = "ask"
			}
		} else if a.State == client.StateExecuting {
			a.State, a.StateReason = client.StateThinking, ""
		}
		if err := tx.UpdateAgent(a); err != nil {
			return err
		}
		v, err = view(tx, a)
		return err
	})
	r.mu.Unlock()
	if err != nil {
		r.s.log.Error("recording result", "agent", r.id, "proposal", p.ID, "err", err)
		return
	}
	r.s.events.Publish(client.Event{Type: client.EventResult, AgentID: r.id, Episode: ep})
	r.s.events.Publish(client.Event{Type: client.EventState, AgentID: r.id, Agent: v})
	if finished {
		r.s.events.Publish(client.Event{Type: client.EventFinish, AgentID: r.id, Agent: v, Message: out})
	}
}
