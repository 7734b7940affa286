package store

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentd/agentd/api"
)

// Agent is an agent row plus the daemon-only fields the wire type does not carry.
type Agent struct {
	api.Agent
	// Strikes counts invalid model replies in a row.
	Strikes int
	// Budget is the agent's own budget, set with agentctl budget; a nil field follows
	// the config.
	Budget AgentBudget
}

// AgentBudget is a budget for an agent over all its runs; nil fields are unset and 0
// bounds nothing.
type AgentBudget struct {
	MaxSteps  *int
	MaxTokens *int64
	MaxBusy   *time.Duration
	MaxDisk   *int64 // bytes
}

const agentCols = `id, name, description, goals, directives, task, state, state_reason, policy, run_id, step,
	workspace, strikes, prompt_tokens, eval_tokens, created_at, updated_at, parent_id, steps_total, busy_ms,
	budget_steps, budget_tokens, budget_busy_ms, commands, disk_bytes, budget_disk, state_since, unchecked`

func scanAgent(sc scanner) (*Agent, error) {
	var a Agent
	var goals, dirs, policy, cmds string
	var created, updated, since int64
	var bSteps, bTokens, bBusy, bDisk sql.NullInt64
	err := sc.Scan(&a.ID, &a.Name, &a.Description, &goals, &dirs, &a.Task, &a.State, &a.StateReason,
		&policy, &a.RunID, &a.Step, &a.Workspace, &a.Strikes, &a.PromptTokens, &a.EvalTokens, &created, &updated, &a.ParentID,
		&a.StepsTotal, &a.BusyMS, &bSteps, &bTokens, &bBusy, &cmds, &a.DiskBytes, &bDisk, &since, &a.Unchecked)
	if err != nil {
		return nil, rowError("reading agent", err)
	}
	json.Unmarshal([]byte(goals), &a.Goals)
	json.Unmarshal([]byte(dirs), &a.Directives)
	json.Unmarshal([]byte(policy), &a.Policy)
	if cmds != "" {
		json.Unmarshal([]byte(cmds), &a.Commands)
	}
	a.CreatedAt, a.UpdatedAt, a.StateSince = fromMS(created), fromMS(updated), fromMS(since)
	if bSteps.Valid {
		a.Budget.MaxSteps = new(int(bSteps.Int64))
	}
	if bTokens.Valid {
		a.Budget.MaxTokens = new(bTokens.Int64)
	}
	if bBusy.Valid {
		a.Budget.MaxBusy = new(time.Duration(bBusy.Int64) * time.Millisecond)
	}
	if bDisk.Valid {
		a.Budget.MaxDisk = new(bDisk.Int64)
	}
	return &a, nil
}

func js(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only our own types are marshalled here
	}
	return string(b)
}

// jsOr is a JSON column where "" is none: v as JSON, or "" when none.
func jsOr(none bool, v any) string {
	if none {
		return ""
	}
	return js(v)
}

// InsertAgent stores a new agent.
func (t *Tx) InsertAgent(a *Agent) error {
	a.CreatedAt, a.UpdatedAt = t.now, t.now
	return t.write("insert agent", `INSERT INTO agents (`+agentCols+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		a.ID, a.Name, a.Description, js(a.Goals), js(a.Directives), a.Task, a.State, a.StateReason,
		js(a.Policy), a.RunID, a.Step, a.Workspace, a.Strikes, a.PromptTokens, a.EvalTokens, ms(t.now), ms(t.now), a.ParentID,
		a.StepsTotal, a.BusyMS, nullable(a.Budget.MaxSteps), nullable(a.Budget.MaxTokens), a.Budget.busyMS(), jsOr(len(a.Commands) == 0, a.Commands),
		a.DiskBytes, nullable(a.Budget.MaxDisk), ms(t.now), a.Unchecked)
}

// SetDiskBytes records the disk agent id's workspace takes, measured again.
func (t *Tx) SetDiskBytes(id string, n int64) error {
	return t.write("set disk usage", `UPDATE agents SET disk_bytes=? WHERE id=?`, n, id)
}

// SetWorkspace changes the workspace path stored for agent id: the supervisor rewrites,
// at start, paths stored through the operator's symlinks to the real ones.
func (t *Tx) SetWorkspace(id, ws string) error {
	return t.write("set workspace", `UPDATE agents SET workspace=? WHERE id=?`, ws, id)
}

// UpdateAgent writes every mutable field of a (its commands are fixed at creation).
func (t *Tx) UpdateAgent(a *Agent) error {
	a.UpdatedAt = t.now
	// state_since moves only when the state does (the right side reads the old row).
	var since int64
	err := t.queryRow(`UPDATE agents SET name=?, description=?, goals=?, directives=?, task=?, state=?,
		state_reason=?, policy=?, run_id=?, step=?, strikes=?, prompt_tokens=?, eval_tokens=?, updated_at=?,
		steps_total=?, busy_ms=?, budget_steps=?, budget_tokens=?, budget_busy_ms=?, disk_bytes=?, budget_disk=?, unchecked=?,
		state_since=CASE WHEN state=? THEN state_since ELSE ? END WHERE id=? RETURNING state_since`,
		a.Name, a.Description, js(a.Goals), js(a.Directives), a.Task, a.State, a.StateReason, js(a.Policy),
		a.RunID, a.Step, a.Strikes, a.PromptTokens, a.EvalTokens, ms(t.now),
		a.StepsTotal, a.BusyMS, nullable(a.Budget.MaxSteps), nullable(a.Budget.MaxTokens), a.Budget.busyMS(), a.DiskBytes, nullable(a.Budget.MaxDisk), a.Unchecked,
		a.State, ms(t.now), a.ID).Scan(&since)
	if errors.Is(err, sql.ErrNoRows) {
		return nil // as an UPDATE of no row: nothing to do
	}
	if err != nil {
		return fmt.Errorf("store: update agent: %w", err)
	}
	a.StateSince = fromMS(since)
	return nil
}

// nullable and busyMS are the budget's columns: NULL when unset.
func nullable[T any](v *T) any {
	if v == nil {
		return nil
	}
	return *v
}

func (b AgentBudget) busyMS() any {
	if b.MaxBusy == nil {
		return nil
	}
	return b.MaxBusy.Milliseconds()
}

// Agent reads one agent by id.
func (t *Tx) Agent(id string) (*Agent, error) {
	return scanAgent(t.queryRow(`SELECT `+agentCols+` FROM agents WHERE id=?`, id))
}

// AgentByName reads one agent by its unique name.
func (t *Tx) AgentByName(name string) (*Agent, error) {
	return scanAgent(t.queryRow(`SELECT `+agentCols+` FROM agents WHERE name=?`, name))
}

// NameTaken reports whether an agent has this name.
func (t *Tx) NameTaken(name string) (bool, error) {
	var n int
	err := t.queryRow(`SELECT COUNT(*) FROM agents WHERE name=?`, name).Scan(&n)
	return n > 0, err
}

// AgentNames lists every agent's name, sorted: what a mistyped one is compared with.
func (t *Tx) AgentNames() ([]string, error) {
	return queryAll(t, nil, "list agent names", scanString, `SELECT name FROM agents ORDER BY name`)
}

// Agents lists all agents, oldest first.
func (t *Tx) Agents() ([]*Agent, error) {
	return queryAll(t, nil, "list agents", scanAgent, `SELECT `+agentCols+` FROM agents ORDER BY created_at, id`)
}

// DeleteAgent removes an agent and everything it owns.
func (t *Tx) DeleteAgent(id string) error {
	return t.write("delete agent", `DELETE FROM agents WHERE id=?`, id)
}

// StartRun records a new run. It notes the agent's token total, so the run's own tokens
// are known when it ends.
func (t *Tx) StartRun(id, agentID, task string) error {
	return t.write("start run", `INSERT INTO runs (id, agent_id, task, started_at, tokens_base) VALUES (?,?,?,?,
		COALESCE((SELECT prompt_tokens+eval_tokens FROM agents WHERE id=?), 0))`, id, agentID, task, ms(t.now), agentID)
}

// EndRun records how a run ended, with its steps and tokens as the agent's row has them;
// a run already ended keeps its first outcome.
func (t *Tx) EndRun(id string, outcome api.RunOutcome, reason string) error {
	return t.write("end run", `UPDATE runs SET ended_at=?, outcome=?, reason=?,
		steps=COALESCE((SELECT step FROM agents WHERE agents.id=runs.agent_id), 0),
		tokens=COALESCE((SELECT prompt_tokens+eval_tokens FROM agents WHERE agents.id=runs.agent_id), 0)-tokens_base
		WHERE id=? AND ended_at IS NULL`, ms(t.now), outcome, reason, id)
}

const proposalCols = `id, agent_id, run_id, step, thoughts, command, args, hash, status, result, model,
	prompt_tokens, eval_tokens, created_at, preview`

// briefProposalCols are proposalCols without the thoughts, args, result and preview a
// brief listing leaves out (api.Proposal.Brief): scanProposal reads them as empty.
const briefProposalCols = `id, agent_id, run_id, step, '{}', command, 'null', hash, status, '', model,
	prompt_tokens, eval_tokens, created_at, ''`

func scanProposal(sc scanner) (*api.Proposal, error) {
	var p api.Proposal
	var thoughts, args, preview string
	var created int64
	err := sc.Scan(&p.ID, &p.AgentID, &p.RunID, &p.Step, &thoughts, &p.Command, &args, &p.Hash, &p.Status,
		&p.Result, &p.Model, &p.PromptTokens, &p.EvalTokens, &created, &preview)
	if err != nil {
		return nil, rowError("reading proposal", err)
	}
	json.Unmarshal([]byte(thoughts), &p.Thoughts)
	if preview != "" {
		p.Preview = new(api.Preview)
		if json.Unmarshal([]byte(preview), p.Preview) != nil {
			p.Preview = &api.Preview{Note: "the stored preview cannot be read; judge the args"}
		}
	}
	p.Args = json.RawMessage(args)
	p.CreatedAt = fromMS(created)
	return &p, nil
}

// InsertProposal stores a proposal; it must be durable before anyone sees it.
func (t *Tx) InsertProposal(p *api.Proposal) error {
	p.CreatedAt = t.now
	return t.write("insert proposal", `INSERT INTO proposals (`+proposalCols+`, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		p.ID, p.AgentID, p.RunID, p.Step, js(p.Thoughts), p.Command, string(p.Args), p.Hash, p.Status, p.Result,
		p.Model, p.PromptTokens, p.EvalTokens, ms(t.now), jsOr(p.Preview == nil, p.Preview), ms(t.now))
}

// SetProposalPreview replaces a proposal's preview: the daemon adds to it what the person
// should know when asked (a file a y! bound changed since).
func (t *Tx) SetProposalPreview(id string, pv *api.Preview) error {
	return t.write("set proposal preview", `UPDATE proposals SET preview=?, updated_at=? WHERE id=?`, jsOr(pv == nil, pv), ms(t.now), id)
}

// NoteProposal adds note to p's preview, which every front end shows with p: what the
// person asked about it should know (a file a y! bound changed since, a workspace a
// restart left unchecked).
func (t *Tx) NoteProposal(p *api.Proposal, note string) error {
	var pv api.Preview
	if p.Preview != nil {
		pv = *p.Preview
	}
	if pv.Note != "" {
		note = pv.Note + "; " + note
	}
	pv.Note, p.Preview = note, &pv
	return t.SetProposalPreview(p.ID, p.Preview)
}

// SetProposalStatus moves a proposal from one of the from statuses to status, optionally
// setting its result. It reports whether the move happened: a false means someone else
// moved it first, which is how "first decision wins" is enforced.
func (t *Tx) SetProposalStatus(id string, status api.ProposalStatus, result *string, from ...api.ProposalStatus) (bool, error) {
	q := `UPDATE proposals SET status=?, updated_at=?`
	args := []any{status, ms(t.now)}
	if result != nil {
		q += `, result=?`
		args = append(args, *result)
	}
	q += ` WHERE id=?`
	args = append(args, id)
	if len(from) > 0 {
		q += ` AND status IN (?` + strings.Repeat(",?", len(from)-1) + `)`
		for _, f := range from {
			args = append(args, f)
		}
	}
	return t.affected("update proposal", q, args...)
}

// Proposal reads one proposal.
func (t *Tx) Proposal(id string) (*api.Proposal, error) {
	return scanProposal(t.queryRow(`SELECT `+proposalCols+` FROM proposals WHERE id=?`, id))
}

// OpenProposal returns the agent's proposal that is not yet settled (pending, interrupted,
// approved or started), or ErrNotFound. The cycle keeps at most one open at a time.
func (t *Tx) OpenProposal(agentID string) (*api.Proposal, error) {
	return scanProposal(t.queryRow(`SELECT `+proposalCols+` FROM proposals
		WHERE agent_id=? AND status IN ('pending','interrupted','approved','started')
		ORDER BY created_at DESC, rowid DESC LIMIT 1`, agentID))
}

// LastProposal returns the agent's most recent proposal in run, or ErrNotFound.
func (t *Tx) LastProposal(agentID, runID string) (*api.Proposal, error) {
	return scanProposal(t.queryRow(`SELECT `+proposalCols+` FROM proposals
		WHERE agent_id=? AND run_id=? ORDER BY step DESC, rowid DESC LIMIT 1`, agentID, runID))
}

// ProposalBefore returns the proposal made just before p in p's run, or nil.
func (t *Tx) ProposalBefore(p *api.Proposal) (*api.Proposal, error) {
	prev, err := scanProposal(t.queryRow(`SELECT `+proposalCols+` FROM proposals
		WHERE agent_id=? AND run_id=? AND step<? ORDER BY step DESC, rowid DESC LIMIT 1`, p.AgentID, p.RunID, p.Step))
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	return prev, err
}

// Proposals lists an agent's proposals, oldest first.
func (t *Tx) Proposals(agentID string) ([]api.Proposal, error) {
	return t.proposals(`agent_id=?`, agentID)
}

// ProposalsWithStatus lists every proposal in a status, across agents (crash recovery).
func (t *Tx) ProposalsWithStatus(status api.ProposalStatus) ([]api.Proposal, error) {
	return t.proposals(`status=?`, status)
}

func (t *Tx) proposals(where string, args ...any) ([]api.Proposal, error) {
	return t.proposalsBy(proposalCols, "", where, args...)
}

// proposalsBy is proposals read with its columns cols (proposalCols or
// briefProposalCols) and an index hint ("INDEXED BY name"; "" leaves the choice to SQLite).
func (t *Tx) proposalsBy(cols, hint, where string, args ...any) ([]api.Proposal, error) {
	return queryAll(t, nil, "list proposals", value(scanProposal), `SELECT `+cols+` FROM proposals `+hint+` WHERE `+where+` ORDER BY created_at, rowid`, args...)
}

// InsertDecision records a decision.
func (t *Tx) InsertDecision(d *api.Decision) error {
	d.At = t.now
	return t.write("insert decision", `INSERT INTO decisions (proposal_id, kind, count, feedback, by, source, scope, pattern, grant_id, grant_label, by_name, profile, grant_count, grant_left, at)
		VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		d.ProposalID, d.Kind, d.Count, d.Feedback, d.By, d.Source, d.Scope, d.Pattern, d.Grant, d.GrantLabel, d.ByName, d.Profile, d.GrantCount, d.GrantLeft, ms(t.now))
}

// decisionCols are the decisions columns scanDecision reads, as the alias d.
const decisionCols = `d.proposal_id, d.kind, d.count, d.feedback, d.by, d.source, d.scope, d.pattern, d.grant_id, d.grant_label, d.by_name, d.profile, d.grant_count, d.grant_left, d.at`

func scanDecision(sc scanner) (*api.Decision, error) {
	var d api.Decision
	var at int64
	if err := sc.Scan(&d.ProposalID, &d.Kind, &d.Count, &d.Feedback, &d.By, &d.Source, &d.Scope, &d.Pattern, &d.Grant, &d.GrantLabel, &d.ByName, &d.Profile, &d.GrantCount, &d.GrantLeft, &at); err != nil {
		return nil, err
	}
	d.At = fromMS(at)
	return &d, nil
}

// LastDecision returns the latest decision on a proposal, or ErrNotFound.
func (t *Tx) LastDecision(proposalID string) (*api.Decision, error) {
	d, err := scanDecision(t.queryRow(`SELECT `+decisionCols+` FROM decisions d
		WHERE d.proposal_id=? ORDER BY d.id DESC LIMIT 1`, proposalID))
	if err != nil {
		return nil, rowError("reading decision", err)
	}
	return d, nil
}

// CountDecisions counts decisions recorded for a proposal.
func (t *Tx) CountDecisions(proposalID string) (int, error) {
	var n int
	err := t.queryRow(`SELECT COUNT(*) FROM decisions WHERE proposal_id=?`, proposalID).Scan(&n)
	return n, err
}

// InsertEpisode records a finished step.
func (t *Tx) InsertEpisode(agentID string, e *api.Episode) error {
	e.At = t.now
	return t.write("insert episode", `INSERT INTO episodes (agent_id, run_id, step, proposal_id, command, args, reasoning, outcome, result, feedback, at)
		VALUES (?,?,?,?,?,?,?,?,?,?,?)`, agentID, e.RunID, e.Step, e.ProposalID, e.Command, string(e.Args), e.Reasoning,
		e.Outcome, e.Result, e.Feedback, ms(t.now))
}

// Episodes returns the agent's last limit episodes (all when limit <= 0), oldest first.
func (t *Tx) Episodes(agentID string, limit int) ([]api.Episode, error) {
	q := `SELECT ` + episodeCols + ` FROM episodes WHERE agent_id=? ORDER BY id DESC`
	args := []any{agentID}
	if limit > 0 {
		q += ` LIMIT ?`
		args = append(args, limit)
	}
	out, err := queryAll(t, nil, "list episodes", scanEpisode, q, args...)
	slices.Reverse(out)
	return out, err
}

// episodeCols are the columns scanEpisode reads, in its order.
const episodeCols = `run_id, step, proposal_id, command, args, reasoning, outcome, result, feedback, at`

// scanEpisode reads a row of episodeCols.
func scanEpisode(sc scanner) (api.Episode, error) {
	var e api.Episode
	var args string
	var at int64
	if err := sc.Scan(&e.RunID, &e.Step, &e.ProposalID, &e.Command, &args, &e.Reasoning, &e.Outcome, &e.Result, &e.Feedback, &at); err != nil {
		return e, fmt.Errorf("store: reading episode: %w", err)
	}
	e.Args, e.At = json.RawMessage(args), fromMS(at)
	return e, nil
}

// SetQuestion records an ask_user question waiting for an answer.
func (t *Tx) SetQuestion(agentID string, q *api.Question) error {
	q.AskedAt = t.now
	return t.write("set question", `INSERT OR REPLACE INTO questions (proposal_id, agent_id, text, asked_at) VALUES (?,?,?,?)`,
		q.ProposalID, agentID, q.Text, ms(t.now))
}

// Question returns the agent's open question, or ErrNotFound.
func (t *Tx) Question(agentID string) (*api.Question, error) {
	var q api.Question
	var at int64
	err := t.queryRow(`SELECT proposal_id, text, asked_at FROM questions WHERE agent_id=? ORDER BY asked_at DESC LIMIT 1`, agentID).Scan(&q.ProposalID, &q.Text, &at)
	if err != nil {
		return nil, rowError("reading question", err)
	}
	q.AskedAt = fromMS(at)
	return &q, nil
}

// ClearQuestions removes the agent's open questions.
func (t *Tx) ClearQuestions(agentID string) error {
	_, err := t.exec(`DELETE FROM questions WHERE agent_id=?`, agentID)
	return err
}

// Audit appends one line to the audit log.
func (t *Tx) Audit(agentID, kind string, detail any) error {
	return t.write("audit", `INSERT INTO audit (at, agent_id, kind, detail) VALUES (?,?,?,?)`, ms(t.now), agentID, kind, js(detail))
}

// StateValue returns one key of an agent's component state, or nil when unset.
func (t *Tx) StateValue(agentID, key string) ([]byte, error) {
	var v []byte
	err := t.queryRow(`SELECT value FROM agent_state WHERE agent_id=? AND key=?`, agentID, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: reading state %s: %w", key, err)
	}
	return v, nil
}

// SetStateValue sets one key of an agent's component state; nil deletes it.
func (t *Tx) SetStateValue(agentID, key string, value []byte) error {
	var err error
	if value == nil {
		_, err = t.exec(`DELETE FROM agent_state WHERE agent_id=? AND key=?`, agentID, key)
	} else {
		_, err = t.exec(`INSERT INTO agent_state (agent_id, key, value) VALUES (?,?,?)
			ON CONFLICT (agent_id, key) DO UPDATE SET value=excluded.value`, agentID, key, value)
	}
	if err != nil {
		return fmt.Errorf("store: writing state %s: %w", key, err)
	}
	return nil
}

// AddPermission stores a pattern for the agent; storing one it has is not an error.
// It reports whether the pattern is new.
func (t *Tx) AddPermission(agentID, effect, pattern, by string) (bool, error) {
	return t.affected("add permission", `INSERT INTO permissions (agent_id, effect, pattern, created_by, created_at) VALUES (?,?,?,?,?)
		ON CONFLICT (agent_id, effect, pattern) DO NOTHING`, agentID, effect, pattern, by, ms(t.now))
}

// RemovePermission deletes the agent's pattern with that effect; it reports whether one was there.
func (t *Tx) RemovePermission(agentID, effect, pattern string) (bool, error) {
	return t.affected("remove permission", `DELETE FROM permissions WHERE agent_id=? AND effect=? AND pattern=?`, agentID, effect, pattern)
}

// Permissions lists the agent's stored patterns, oldest first.
func (t *Tx) Permissions(agentID string) ([]api.Permission, error) {
	return queryAll(t, nil, "permissions", func(sc scanner) (api.Permission, error) {
		var p api.Permission
		var at int64
		err := sc.Scan(&p.ID, &p.Effect, &p.Pattern, &p.CreatedBy, &at)
		p.CreatedAt = fromMS(at)
		return p, err
	}, `SELECT id, effect, pattern, created_by, created_at FROM permissions WHERE agent_id=? ORDER BY id`, agentID)
}
