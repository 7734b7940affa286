package team

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/llm"
	"github.com/agentd/agentd/daemon/run"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/display"
	"github.com/agentd/agentd/internal/randid"
)

// Agents is what the engine needs of the agent supervisor: role agents are created idle
// and given one task per turn.
type Agents interface {
	Agent(ctx context.Context, ref string) (*api.Agent, error)
	CreateAgent(ctx context.Context, req api.CreateAgentRequest) (*api.Agent, error)
	StartTask(ctx context.Context, ref, task string, opt run.Options) (*api.Agent, error)
	Stop(ctx context.Context, ref string) (*api.Agent, error)
	// DeleteAgent removes a role agent and its workspace when its team run ended.
	DeleteAgent(ctx context.Context, ref string) error
	// Commands with ref "" lists the commands a new agent gets.
	Commands(ctx context.Context, ref string) ([]api.CommandInfo, error)
}

// Options configure an Engine.
type Options struct {
	Store  *store.Store
	LLM    *llm.Client
	Agents Agents
	Log    *slog.Logger
	// Backoff is the wait before retry n (n ≥ 1) of a failed model call (default llm.NextBackoff).
	Backoff func(n int) time.Duration
	// ModelAttempts is how many failed model calls in a row fail the run (default 6).
	ModelAttempts int
	// Settings gives the model and keep-alive of every call (the keep-alive goes to the
	// model server, as the agents' calls do, when the client does not choose it), read
	// when the call is made, so a config reload (SIGHUP) reaches the next turn; the daemon
	// passes Supervisor.ModelSettings. num_ctx is the model's one Load
	// (llm.Client.LoadFor), the same as the agents' calls to it.
	Settings func() run.ModelSettings
}

// request is a chat request to the model in use now, sized to the model's one num_ctx
// (asking for another would make the server reload the model): the reply gets at most
// half of it and the longest messages are cut so the prompt fits the rest. Without an
// answer from the model server it goes as it is, and the call reports the server's error.
func (e *Engine) request(ctx context.Context, msgs []llm.Message, numPredict int) llm.ChatRequest {
	set := e.opt.Settings()
	req := llm.ChatRequest{Model: set.Model, Messages: msgs, NumPredict: numPredict, KeepAlive: set.KeepAlive}
	ld, err := e.opt.LLM.LoadFor(ctx, set.Model)
	if err != nil || ld.NumCtx <= 0 {
		return req
	}
	req.NumCtx, req.KeepAlive = ld.NumCtx, ld.KeepAlive
	req.NumPredict = min(numPredict, ld.NumCtx/2)
	req.Messages = fitMessages(msgs, (ld.NumCtx-req.NumPredict)*charsPerToken-16*len(msgs))
	return req
}

// charsPerToken is a cautious characters-per-token guess for sizing team prompts.
const charsPerToken = 3

// fitMessages cuts the longest messages until their text fits budget characters; the
// caller's slice is left as it is.
func fitMessages(msgs []llm.Message, budget int) []llm.Message {
	total := 0
	for _, m := range msgs {
		total += len(m.Content)
	}
	if total <= budget {
		return msgs
	}
	out := slices.Clone(msgs)
	for over := total - budget; over > 0; {
		i := 0
		for j := range out {
			if len(out[j].Content) > len(out[i].Content) {
				i = j
			}
		}
		keep := max(64, len(out[i].Content)-over-8) // 8: the ellipsis Cut adds
		if keep >= len(out[i].Content) {
			break // nothing left worth cutting
		}
		cut := display.Cut(out[i].Content, keep, display.Ellipsis)
		over -= len(out[i].Content) - len(cut)
		out[i].Content = cut
	}
	return out
}

// Engine runs team runs. Lifecycle: New, Start (resumes the runs the store has running),
// the API methods and RunEnded at any time; runs end with the Start context.
type Engine struct {
	opt Options
	st  *store.Store
	log *slog.Logger

	events *run.Broker // team runs' events (events.go)
	// cleanMu makes cleanups one at a time, so a stop's cleanup returns only once the
	// agents are gone with their workspaces, even when the run's loop began removing them.
	cleanMu sync.Mutex

	mu   sync.Mutex
	ctx  context.Context
	live map[string]*live // by team run id
	wg   sync.WaitGroup
}

// live is a team run whose loop is running.
type live struct {
	cancel context.CancelFunc
	wake   chan struct{}
	agent  string // the role agent whose run the loop waits for
	// orphans are role agents the loop created but could not record (the run ended
	// meanwhile): cleaned up with the run's. Only the loop's goroutine touches it.
	orphans []string
}

// New returns an Engine; call Start before starting runs.
func New(opt Options) (*Engine, error) {
	if opt.Store == nil || opt.LLM == nil || opt.Agents == nil || opt.Settings == nil {
		return nil, errors.New("team: Store, LLM, Agents and Settings are required")
	}
	opt.Log = cmp.Or(opt.Log, slog.New(slog.DiscardHandler))
	opt.ModelAttempts = cmp.Or(max(opt.ModelAttempts, 0), 6)
	if opt.Backoff == nil {
		opt.Backoff = llm.NextBackoff
	}
	return &Engine{opt: opt, st: opt.Store, log: opt.Log, live: map[string]*live{}, events: run.NewBroker()}, nil
}

// Start resumes every running team run; they run until ctx ends. A run whose workflow no
// longer parses fails with the reason.
func (e *Engine) Start(ctx context.Context) error {
	e.mu.Lock()
	e.ctx = ctx
	e.mu.Unlock()
	runs, err := store.Read(ctx, e.st, func(tx *store.Tx) ([]*store.TeamRun, error) { return tx.TeamRuns(true) })
	if err != nil {
		return fmt.Errorf("team: loading runs: %w", err)
	}
	for _, r := range runs {
		e.spawn(r.ID)
	}
	e.sweep(ctx)
	return nil
}

// cleanup removes the role agents of a team run that ended (and extra ones it created
// but did not record), unless the run keeps them. Their transcript stays in team_turns.
// It is idempotent: an agent already gone is skipped.
func (e *Engine) cleanup(ctx context.Context, id string, extra ...string) {
	e.cleanMu.Lock()
	defer e.cleanMu.Unlock()
	r, err := store.Read(ctx, e.st, func(tx *store.Tx) (*store.TeamRun, error) { return tx.TeamRun(id) })
	if err != nil {
		return
	}
	if r.Status == api.TeamRunning || r.KeepAgents {
		return
	}
	ids := append(slices.Sorted(maps.Values(r.Agents)), extra...)
	for _, a := range ids {
		if err := e.opt.Agents.DeleteAgent(ctx, a); err != nil && !errors.Is(err, api.ErrNotFound) {
			e.log.Warn("team: removing a role agent", "team", id, "agent", a, "err", err)
		}
	}
}

// sweep cleans up after runs that ended while the daemon died before their agents were
// removed.
func (e *Engine) sweep(ctx context.Context) {
	runs, err := store.Read(ctx, e.st, func(tx *store.Tx) ([]*store.TeamRun, error) { return tx.TeamRuns(false) })
	if err != nil {
		return
	}
	for _, r := range runs {
		if r.Status == api.TeamRunning || r.KeepAgents {
			continue
		}
		for _, a := range r.Agents {
			if _, err := e.opt.Agents.Agent(ctx, a); err == nil {
				e.cleanup(ctx, r.ID)
				break
			}
		}
	}
}

// Wait blocks until every run's loop has returned (after the Start context ended).
func (e *Engine) Wait() { e.wg.Wait() }

// RunEnded is the supervisor's OnRunEnd: a team waiting for that agent's run goes on.
func (e *Engine) RunEnded(end run.End) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, l := range e.live {
		if l.agent == end.AgentID {
			wakeUp(l.wake)
		}
	}
}

func wakeUp(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// spawn starts the loop of a running team run, once.
func (e *Engine) spawn(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ctx == nil || e.ctx.Err() != nil || e.live[id] != nil {
		return
	}
	ctx, cancel := context.WithCancel(e.ctx)
	l := &live{cancel: cancel, wake: make(chan struct{}, 1)}
	e.live[id] = l
	e.wg.Go(func() {
		defer func() {
			e.mu.Lock()
			if e.live[id] == l {
				delete(e.live, id)
			}
			e.mu.Unlock()
			cancel()
		}()
		e.loop(ctx, id, l)
		// After a shutdown the run is still running and keeps its agents.
		e.cleanup(context.WithoutCancel(ctx), id, l.orphans...)
	})
}

// waitFor records which role agent the run waits for, before its run starts, so that an
// end reported at once is not missed.
func (e *Engine) waitFor(l *live, agentID string) {
	e.mu.Lock()
	l.agent = agentID
	e.mu.Unlock()
}

// AgentName is the name of a role's agent in a team run: TEAM-ROLE, the team part being
// the run id without its "t-" prefix, cut to 8 characters.
func AgentName(runID, role string) string {
	short := strings.TrimPrefix(runID, "t-")
	if len(short) > 8 {
		short = short[:8]
	}
	return "t" + short + "-" + strings.ReplaceAll(role, "_", "-")
}

func badRequest(format string, args ...any) error {
	return api.Errorf(api.ErrBadRequest, format, args...)
}

// checkTask trims a team's task and refuses one that is empty or too long.
func checkTask(task string) (string, error) {
	task = strings.TrimSpace(task)
	if task == "" {
		return "", badRequest("empty task: say what the team should do")
	}
	if len(task) > api.MaxTextBytes {
		return "", badRequest("task is %d bytes: at most %d; shorten it, or put the details in a file in the workspace", len(task), api.MaxTextBytes)
	}
	return task, nil
}

// StartTeam checks the workflow and starts a run of it.
func (e *Engine) StartTeam(ctx context.Context, req api.TeamRunRequest) (*api.TeamRun, error) {
	var err error
	if req.Task, err = checkTask(req.Task); err != nil {
		return nil, err
	}
	if strings.TrimSpace(req.Workflow) == "" {
		return nil, badRequest("empty workflow: send the workflow file's content")
	}
	if len(req.Workflow) > maxWorkflowFile {
		return nil, badRequest("workflow is %d bytes: at most 256 KiB", len(req.Workflow))
	}
	file := cmp.Or(req.File, "workflow")
	wf, err := Parse(file, []byte(req.Workflow))
	if err != nil {
		return nil, badRequest("%v", err)
	}
	if err := e.checkCommands(ctx, file, wf); err != nil {
		return nil, err
	}
	r := &store.TeamRun{
		TeamRun: api.TeamRun{
			ID: randid.ID("t-"), Workflow: wf.Name, File: req.File, Task: req.Task, Status: api.TeamRunning,
			State: wf.Root, Vars: map[string]string{}, Agents: map[string]string{}, MaxTurns: wf.MaxTurns,
		},
		Source: req.Workflow, CreatedBy: req.By,
	}
	r.KeepAgents = req.KeepAgents
	maps.Copy(r.Vars, wf.Vars)
	r.Vars["task"] = req.Task
	c := cursor{State: wf.Root}
	r.Cursor, _ = json.Marshal(c)
	err = e.st.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.InsertTeamRun(r); err != nil {
			return err
		}
		return tx.Audit("", "team_started", map[string]string{"team": r.ID, "workflow": wf.Name, "task": req.Task, "by": req.By})
	})
	if err != nil {
		return nil, err
	}
	e.spawn(r.ID)
	out := r.TeamRun
	return &out, nil
}

// Teams lists team runs, newest first.
func (e *Engine) Teams(ctx context.Context) ([]api.TeamRun, error) {
	out := []api.TeamRun{}
	err := e.st.View(ctx, func(tx *store.Tx) error {
		runs, err := tx.TeamRuns(false)
		for _, r := range runs {
			out = append(out, r.TeamRun)
		}
		return err
	})
	return out, err
}

// Team returns one team run with its transcript.
func (e *Engine) Team(ctx context.Context, ref string) (*api.TeamRun, error) {
	var out *api.TeamRun
	err := e.st.View(ctx, func(tx *store.Tx) error {
		r, err := teamRun(tx, ref)
		if err != nil {
			return err
		}
		turns, err := tx.TeamTurns(r.ID, -1)
		if err != nil {
			return err
		}
		out = &r.TeamRun
		out.Transcript = []api.TeamTurn{}
		for _, t := range turns {
			out.Transcript = append(out.Transcript, t.TeamTurn)
		}
		return nil
	})
	return out, err
}

// teamRun reads the team run ref names, or says how to find one.
func teamRun(tx *store.Tx, ref string) (*store.TeamRun, error) {
	r, err := tx.TeamRun(ref)
	if errors.Is(err, store.ErrNotFound) {
		return nil, api.Errorf(api.ErrNotFound, "no team run %q: see `agentctl team ls`", ref)
	}
	return r, err
}

// StopTeam stops a running team run; the run of the role agent it waits for is stopped
// too (an open proposal superseded, a running command cancelled).
func (e *Engine) StopTeam(ctx context.Context, ref string) (*api.TeamRun, error) {
	return e.StopTeamBy(ctx, ref, "")
}

// StopTeamBy is StopTeam for a known person (chat's "PLATFORM:USER"), whom the run's
// reason and its last transcript entry name, so the record says who stopped it.
func (e *Engine) StopTeamBy(ctx context.Context, ref, by string) (*api.TeamRun, error) {
	reason := "stopped by a person"
	if by = strings.TrimSpace(by); by != "" {
		reason = "stopped by " + by
	}
	var out *api.TeamRun
	var waiting string
	var end api.TeamTurn
	var ended *store.TeamRun
	err := e.st.Tx(ctx, func(tx *store.Tx) error {
		r, err := teamRun(tx, ref)
		if err != nil {
			return err
		}
		if r.Status != api.TeamRunning {
			return api.Errorf(api.ErrConflict, "team run %s has ended already (%s)", r.ID, r.Status)
		}
		waiting = r.Waiting
		if end, err = endTx(tx, r, api.TeamStopped, reason); err != nil {
			return err
		}
		out, ended = &r.TeamRun, r
		return nil
	})
	if err != nil {
		return nil, err
	}
	e.publish(ended, []api.TeamTurn{end}, "")
	e.mu.Lock()
	if l := e.live[out.ID]; l != nil {
		l.cancel()
	}
	e.mu.Unlock()
	if waiting != "" {
		if _, err := e.opt.Agents.Stop(ctx, waiting); err != nil && !errors.Is(err, api.ErrConflict) && !errors.Is(err, api.ErrNotFound) {
			e.log.Warn("team: stopping the role agent", "team", out.ID, "agent", waiting, "err", err)
		}
	}
	e.cleanup(context.WithoutCancel(ctx), out.ID)
	return out, nil
}

// endTx ends r with status and reason and records the end in its transcript, which
// it returns.
func endTx(tx *store.Tx, r *store.TeamRun, status, reason string) (api.TeamTurn, error) {
	var c cursor
	_ = json.Unmarshal(r.Cursor, &c)
	c.Seq++
	r.Cursor, _ = json.Marshal(c)
	r.Status, r.Reason, r.Waiting, r.WaitRun = status, reason, "", ""
	end := &store.TeamTurn{TeamRunID: r.ID, TeamTurn: api.TeamTurn{
		Seq: c.Seq, Kind: api.TurnEnd, State: r.State, Phase: r.Phase, Text: reason, Mode: status}}
	if err := tx.InsertTeamTurn(end); err != nil {
		return api.TeamTurn{}, err
	}
	if err := tx.UpdateTeamRun(r); err != nil {
		return api.TeamTurn{}, err
	}
	return end.TeamTurn, tx.Audit("", "team_ended", map[string]string{"team": r.ID, "status": status, "reason": reason})
}

// checkCommands refuses roles whose commands this daemon does not offer. MCP tools
// (names with a dot) are left out: their servers connect in the background.
func (e *Engine) checkCommands(ctx context.Context, file string, wf *Workflow) error {
	infos, err := e.opt.Agents.Commands(ctx, "")
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, ci := range infos {
		have[ci.Name] = true
	}
	var probs []string
	for _, name := range sortedKeys(wf.Roles) {
		var missing []string
		for _, c := range wf.Roles[name].Commands {
			if !have[c] && !strings.Contains(c, ".") {
				missing = append(missing, c)
			}
		}
		if len(missing) > 0 {
			probs = append(probs, fmt.Sprintf("%s: role %s uses %s, which this daemon does not offer (see agentctl commands; web commands need [web_commands] in the config)",
				file, name, strings.Join(missing, ", ")))
		}
	}
	if len(probs) > 0 {
		return badRequest("%s", strings.Join(probs, "\n"))
	}
	return nil
}
