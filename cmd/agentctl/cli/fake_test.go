package cli_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/apitest"
	"github.com/agentd/agentd/internal/display"
	"github.com/agentd/agentd/internal/testutil"
)

// fakeDaemon serves the /v0 routes api calls, on a unix socket, with canned
// client types: the API's one test fake (apitest.Fake) with its routes set to canned
// answers, and a test may set more. Tests script the event streams and how decisions
// are answered.
type fakeDaemon struct {
	sock string
	api  apitest.Fake // every route but the event streams

	mu         sync.Mutex
	status     api.Status
	agents     []*api.Agent
	imported   []api.MemoryImportRequest // batches the memory import route took
	history    map[string][]api.Episode
	decisions  []api.DecideRequest
	answers    []api.AnswerRequest
	schedules  []api.ScheduleRequest // schedules added
	sinces     []int64               // the since of each events request, in order
	auditCalls atomic.Int32          // audit listings served

	// decide, if set, answers a decision instead of the default (accept it).
	decide func(agent *api.Agent, req api.DecideRequest) (*api.Decision, error)
	// events, if set, serves an agent's event stream; conn counts connections from 1.
	events func(w *eventWriter, r *http.Request, conn int)
	// subscribing, if set, runs as an events request subscribes, before the headers go
	// out: what happens there reaches the follower only by reading the agent again.
	subscribing func()

	decided  chan api.DecideRequest // every decision received
	answered chan api.AnswerRequest // every answer received
	// answerGate, if set, holds each answer's reply until it is closed, as the daemon
	// publishes the answer's events before it replies.
	answerGate chan struct{}
}

func newFakeDaemon(t *testing.T) *fakeDaemon {
	t.Helper()
	dir := testutil.ShortTempDir(t)
	f := &fakeDaemon{
		sock:     filepath.Join(dir, "agentd.sock"),
		status:   cannedStatus(),
		agents:   cannedAgents(),
		history:  map[string][]api.Episode{"a-1": cannedHistory()},
		decided:  make(chan api.DecideRequest, 16),
		answered: make(chan api.AnswerRequest, 16),
	}
	ln, err := net.Listen("unix", f.sock)
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(f.sock, 0o600) // as agentd makes it
	srv := &http.Server{Handler: f.routes()}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return f
}

// set changes the fake's canned data or hooks while it serves.
// newFakeDaemonWith starts the fake daemon with the agent a after its canned ones.
func newFakeDaemonWith(t *testing.T, a *api.Agent) *fakeDaemon {
	f := newFakeDaemon(t)
	f.set(func() { f.agents = append(f.agents, a) })
	return f
}

func (f *fakeDaemon) set(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn()
}

func (f *fakeDaemon) routes() http.Handler {
	mux := http.NewServeMux()
	fk := &f.api
	apitest.Handle(fk, api.WebLogoutRoute, func(context.Context, string, api.None) (*api.WebLogout, error) {
		return &api.WebLogout{Sessions: 2}, nil
	})
	apitest.Handle(fk, api.WebLoginRoute, func(context.Context, string, api.None) (*api.WebLogin, error) {
		return &api.WebLogin{URL: "http://127.0.0.1:7077/", LoginURL: "http://127.0.0.1:7077/login?token=0123abcd"}, nil
	})
	apitest.Handle(fk, api.StatusRoute, func(context.Context, string, api.None) (*api.Status, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		st := f.status
		return &st, nil
	})
	apitest.HandleList(fk, api.AgentsRoute, func(_ context.Context, q api.AgentQuery, p api.Page) ([]api.Agent, string, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		out := []api.Agent{}
		for _, a := range f.agents {
			if q.Brief && a.Pending != nil {
				b := *a
				b.Pending = a.Pending.Brief()
				a = &b
			}
			out = append(out, *a)
		}
		return apitest.PageOf(out, func(a api.Agent) string { return a.ID }, p)
	})
	apitest.Handle(fk, api.CreateAgentRoute, f.create)
	agent := func(_ context.Context, ref string, _ api.None) (*api.Agent, error) { return f.agent(ref) }
	apitest.Handle(fk, api.AgentRoute, agent)
	apitest.Handle(fk, api.DeleteAgentRoute, func(_ context.Context, ref string, _ api.None) (api.None, error) {
		_, err := f.agent(ref)
		return api.None{}, err
	})
	apitest.Handle(fk, api.HistoryRoute, f.historyOf)
	apitest.Handle(fk, api.DecideRoute, f.decision)
	apitest.Handle(fk, api.AnswerRoute, f.answer)
	apitest.Handle(fk, api.TaskRoute, f.task)
	apitest.Handle(fk, api.PauseRoute, agent)
	apitest.Handle(fk, api.ResumeRoute, agent)
	apitest.Handle(fk, api.StopRoute, agent)
	apitest.Handle(fk, api.BudgetRoute, f.budget)
	apitest.Handle(fk, api.AuditRoute, func(_ context.Context, _ string, q api.AuditQuery) ([]api.AuditEntry, error) {
		at := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
		all := []api.AuditEntry{
			{ID: 1, At: at, AgentID: "a-1", Agent: "researcher", Kind: "created", Detail: json.RawMessage(`{"name":"researcher"}`)},
			{ID: 2, At: at.Add(time.Minute), AgentID: "a-1", Agent: "researcher", Kind: "proposal", Detail: json.RawMessage(`{"command":"read_file","proposal":"p-1"}`)},
			{ID: 3, At: at.Add(2 * time.Minute), AgentID: "a-1", Agent: "researcher", Kind: "decision", Detail: json.RawMessage(`{"by":"alice","kind":"approve","proposal_id":"p-1","source":"slack"}`)},
			{ID: 4, At: at.Add(3 * time.Minute), AgentID: "a-9", Kind: "removed", Detail: json.RawMessage(`{}`)},
		}
		if q.Agent == "busy" { // a long log, past one listing's 10,000 entries
			all = nil
			for id := int64(1); id <= busyAuditEntries; id++ {
				all = append(all, api.AuditEntry{ID: id, At: at, AgentID: "a-7", Agent: "busy", Kind: "proposal", Detail: json.RawMessage(`{}`)})
			}
		}
		// As the daemon: 0 means 100, at most 10,000, the newest below Before, oldest first.
		limit := q.Limit
		if limit < 0 || limit > 10_000 {
			return nil, api.Errorf(api.ErrBadRequest, "limit %d: want 1 to 10000 (0 for 100)", limit)
		}
		if limit == 0 {
			limit = 100
		}
		f.auditCalls.Add(1)
		var out []api.AuditEntry
		for i := len(all) - 1; i >= 0 && len(out) < limit; i-- {
			e := all[i]
			if a := q.Agent; (a == "" || a == e.AgentID || a == e.Agent) && (q.Before == 0 || e.ID < q.Before) {
				out = append(out, e)
			}
		}
		slices.Reverse(out)
		if q.Agent != "" && len(out) == 0 { // as the daemon: an agent it never knew is an error
			if _, err := f.agent(q.Agent); err != nil {
				return nil, err
			}
		}
		return out, nil
	})
	apitest.Handle(fk, api.ReplayRoute, func(_ context.Context, ref string, _ api.None) (*api.Replay, error) {
		if ref == "r-2" {
			return grantReplay(), nil
		}
		if ref != "r-1" && ref != "researcher" {
			return nil, api.Errorf(api.ErrNotFound, "no run or agent %q (run ids are in agentctl history and agentctl show)", ref)
		}
		at := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
		return &api.Replay{
			Run: api.Run{ID: "r-1", AgentID: "a-1", Agent: "researcher", Task: "summarize notes.md", StartedAt: at,
				EndedAt: at.Add(5 * time.Minute), Outcome: "finished", Reason: "summary written"},
			Steps: []api.ReplayStep{
				{Proposal: api.Proposal{ID: "p-1", Step: 1, Command: "read_file", Args: json.RawMessage(`{"path":"notes.md"}`), CreatedAt: at.Add(time.Minute),
					Status: api.ProposalSucceeded, Thoughts: api.Thoughts{Observations: "a notes file exists", Plan: "read it, then summarize", Speak: "Reading notes.md"}},
					Decisions: []api.Decision{{ProposalID: "p-1", Kind: api.DecisionApprove, By: "alice", Source: "slack", At: at.Add(2 * time.Minute)}},
					Episode:   &api.Episode{Step: 1, Command: "read_file", Outcome: "succeeded", Result: "line one\nline two"}},
				{Proposal: api.Proposal{ID: "p-2", Step: 2, Command: "write_file", Args: json.RawMessage(`{"path":"summary.md","contents":"x"}`), CreatedAt: at.Add(3 * time.Minute),
					Status: api.ProposalPending, Thoughts: api.Thoughts{Text: "write the summary"}},
					Decisions: []api.Decision{{ProposalID: "p-2", Kind: api.DecisionFeedback, Feedback: "shorter, please", By: "bob", Source: "agentctl", At: at.Add(4 * time.Minute)}}},
			},
		}, nil
	})
	apitest.Handle(fk, api.DoctorRoute, func(context.Context, string, api.None) (*api.DoctorReport, error) {
		return &api.DoctorReport{Checks: []api.Check{
			{Name: "ollama", Status: api.CheckOK, Detail: "version 0.17.4 at http://127.0.0.1:11434"},
			{Name: "model", Status: api.CheckFail, Detail: "qwen2.5:3b is not on the server", Fix: "ollama pull qwen2.5:3b"},
			{Name: "ollama host", Status: api.CheckOK, Detail: "http://127.0.0.1:11434 up, 1 of 2 slots busy, 340 calls served; models: qwen3:4b"},
			{Name: "ollama host", Status: api.CheckWarn, Detail: "http://gpu-box:11434 down (next try in 4.2s): ollama at http://gpu-box:11434: tags: connection refused",
				Fix: "start Ollama there (`ollama serve`), or remove it from [[ollama.hosts]] in the config"},
			{Name: "store", Status: api.CheckFail, Detail: "/var/lib/agentd/agentd.db has mode 0644: others on this machine can read every agent's history",
				Fix: "chmod 600 /var/lib/agentd/agentd.db (agentd makes it 0600 at start; something changed it)"},
			{Name: "disk", Status: api.CheckWarn, Detail: "812.0 MiB free where /var/lib/agentd is", Fix: "free space on that file system"},
			{Name: "state dir", Status: api.CheckFail, Detail: "others on this machine can read or enter what agentd keeps: /var/lib/agentd has mode 0755, /var/lib/agentd/agentd.db 0644",
				Fix: "chmod 700 /var/lib/agentd; chmod 600 /var/lib/agentd/agentd.db (or restart agentd: it makes its state dir private at start)"},
			{Name: "token file", Status: api.CheckOK, Detail: "/etc/agentd/slack-bot.token (slack.bot_token_file) is private (mode 0600)"},
			{Name: "http", Status: api.CheckOK, Detail: "listening on 127.0.0.1:7070 (metrics, agent protocol)"},
			{Name: "http token", Status: api.CheckFail, Detail: "/etc/agentd/http.token has mode 0644: others on this machine can read the token that steers your agents",
				Fix: "chmod 600 /etc/agentd/http.token"},
		}}, nil
	})
	apitest.Handle(fk, api.ReloadRoute, func(context.Context, string, api.None) (*api.ReloadResult, error) {
		return &api.ReloadResult{Config: "/etc/agentd/agentd.toml", Applied: []string{"ollama.model", "permissions.allow"},
			NeedsRestart: []string{"memory.k"}, BotsRestarted: true,
			Warnings: []string{"http.agent_protocol: is on but http.listen is empty: nothing serves it"}}, nil
	})
	apitest.Handle(fk, api.CommandsRoute, func(context.Context, string, api.None) ([]api.CommandInfo, error) {
		return cannedCommands(false), nil
	})
	apitest.Handle(fk, api.AgentCommandsRoute, func(_ context.Context, ref string, _ api.None) ([]api.CommandInfo, error) {
		_, err := f.agent(ref)
		return cannedCommands(true), err
	})
	apitest.Handle(fk, api.PolicyRoute, func(_ context.Context, ref string, _ api.None) (*api.PolicyView, error) {
		a, err := f.agent(ref)
		if err != nil {
			return nil, err
		}
		return &api.PolicyView{AgentID: a.ID, AutoRead: true, Permissions: []api.Permission{
			{Effect: "deny", Pattern: "delete_file(*)", Source: "stored", CreatedBy: "alice", Paths: true},
			{Effect: "allow", Pattern: "execute_shell(git status)", Source: "agent-config", Profile: api.ProfileBounded},
			{Effect: "allow", Pattern: "execute_shell(make fmt)+write", Source: "agent-config", Profile: api.ProfileBoundedWrite},
			{Effect: "allow", Pattern: "read_file(*)", Source: "config"},
		}, Warnings: []string{"checkpoints are off ([checkpoints] enabled = false), so the deny rules have no second wall: set [checkpoints] enabled = true in the config"}}, nil
	})
	apitest.Handle(fk, api.TestPolicyRoute, f.testPolicy)
	f.grantRoutes()
	mux.HandleFunc("GET /v0/agents/{ref}/events", f.eventStream)
	f.scheduleRoutes()
	f.teamRoutes()
	f.memoryRoutes()
	mux.HandleFunc("GET /v0/teams/{ref}/events", f.teamEventStream)
	mux.Handle("/", apitest.Handler(&f.api))
	return mux
}

// cannedCommands is a command list as the daemon reports it; an agent's adds its own patterns.
func cannedCommands(agent bool) []api.CommandInfo {
	read := []api.Permission{{Effect: "allow", Pattern: "read_file(*)", Source: "config"}}
	shell := []api.Permission{}
	if agent {
		read = append([]api.Permission{{Effect: "deny", Pattern: "read_file(secrets/*)", Source: "stored"}}, read...)
		shell = append(shell, api.Permission{Effect: "allow", Pattern: "execute_shell(git status)", Source: "agent-config"})
	}
	return []api.CommandInfo{
		{Name: "read_file", Description: "Read a text file from the workspace", Class: "read", Idempotent: true,
			Params: json.RawMessage(`{"type":"object"}`), Policy: "allow (auto_read)", Provider: "commands", Patterns: read},
		{Name: "execute_shell", Description: "Run a shell command in the workspace", Class: "execute",
			Params: json.RawMessage(`{"type":"object"}`), Policy: "ask (always, unless an allow pattern names it)", Provider: "shell", Patterns: shell},
		{Name: "finish", Description: "End the task: done, or impossible", Class: "message",
			Params: json.RawMessage(`{"type":"object"}`), Policy: "ask", Provider: "commands", Patterns: []api.Permission{}},
	}
}

// noAgent is the daemon's error for a ref that names no agent, with the closest name.
// Call with f.mu held.
func (f *fakeDaemon) noAgent(ref string) error {
	var names []string
	for _, a := range f.agents {
		names = append(names, a.Name)
	}
	slices.Sort(names)
	return api.Errorf(api.ErrNotFound, "no agent %q%s: see `agentctl ls`", ref, display.DidYouMean(ref, names))
}

func (f *fakeDaemon) agent(ref string) (*api.Agent, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range f.agents {
		if a.ID == ref || a.Name == ref {
			return a, nil
		}
	}
	return nil, f.noAgent(ref)
}

func (f *fakeDaemon) create(_ context.Context, _ string, req api.CreateAgentRequest) (*api.Agent, error) {
	a := &api.Agent{ID: "a-9", Name: req.Name, Description: req.Description, Goals: req.Goals,
		Task: req.Task, State: api.StateThinking, Policy: api.Policy{Mode: "ask"}}
	if a.Task == "" && len(a.Goals) > 0 {
		a.Task = api.GoalsTask // as the daemon does: the run works on the goals
	}
	if req.Name == "" {
		a.Name = "new-agent"
	}
	if req.Policy != nil {
		a.Policy = *req.Policy
	}
	if req.Start != nil && !*req.Start {
		a.State = api.StateIdle
	} else {
		// The run it starts, with its budget, as the daemon shows it.
		a.RunID = "r-9"
		a.Runs = []api.Run{{ID: "r-9", AgentID: a.ID, Task: a.Task, Budget: req.Budget}}
	}
	return a, nil
}

func (f *fakeDaemon) historyOf(_ context.Context, ref string, _ api.None) ([]api.Episode, error) {
	a, err := f.agent(ref)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.history[a.ID], nil
}

func (f *fakeDaemon) decision(_ context.Context, ref string, req api.DecideRequest) (*api.Decision, error) {
	a, err := f.agent(ref)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.decisions = append(f.decisions, req)
	decide := f.decide
	f.mu.Unlock()
	f.decided <- req
	if req.Kind == api.DecisionFeedback && api.IsHelp(req.Feedback) { // as the daemon refuses it
		return nil, api.Errorf(api.ErrBadRequest, "%q asks for help, so it was not sent as feedback and the proposal still waits", req.Feedback)
	}
	if decide != nil {
		return decide(a, req)
	}
	return &api.Decision{ProposalID: req.ProposalID, Kind: req.Kind, Count: req.Count,
		Feedback: req.Feedback, By: req.By, Source: req.Source, At: fixedTime}, nil
}

func (f *fakeDaemon) answer(_ context.Context, ref string, req api.AnswerRequest) (api.None, error) {
	if _, err := f.agent(ref); err != nil {
		return api.None{}, err
	}
	f.mu.Lock()
	f.answers = append(f.answers, req)
	gate := f.answerGate
	f.mu.Unlock()
	f.answered <- req
	if gate != nil {
		<-gate
	}
	if api.IsAnswerHelp(req.Text) { // as the daemon refuses it
		return api.None{}, api.Errorf(api.ErrBadRequest, "%q asks how to answer, so it was not sent and the question still waits", req.Text)
	}
	return api.None{}, nil
}

// sent checks that follow sent exactly one decision and one answer, these.
func (f *fakeDaemon) sent(t *testing.T, decision api.DecideRequest, answer api.AnswerRequest) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.decisions) != 1 || f.decisions[0] != decision {
		t.Errorf("decisions = %+v, want [%+v]", f.decisions, decision)
	}
	if len(f.answers) != 1 || f.answers[0] != answer {
		t.Errorf("answers = %+v, want [%+v]", f.answers, answer)
	}
}

func (f *fakeDaemon) task(_ context.Context, ref string, req api.TaskRequest) (*api.Agent, error) {
	a, err := f.agent(ref)
	if err != nil {
		return nil, err
	}
	if a.State != api.StateIdle {
		return nil, api.Errorf(api.ErrConflict, "agent %s is %s: stop it first (`agentctl stop %s`) or wait until it is idle", a.Name, a.State, a.Name)
	}
	b := *a
	b.Task, b.State, b.StateReason, b.RunID, b.Step = req.Task, api.StateThinking, "", "r-new", 0
	b.Runs = append([]api.Run{{ID: "r-new", AgentID: a.ID, Task: req.Task, Budget: req.Budget}}, a.Runs...)
	return &b, nil
}

// budget applies a budget request to a copy of the agent, as the daemon would.
func (f *fakeDaemon) budget(_ context.Context, ref string, req api.BudgetRequest) (*api.Agent, error) {
	a, err := f.agent(ref)
	if err != nil {
		return nil, err
	}
	b := *a
	nb := api.Budget{}
	if a.Budget != nil && !req.Reset {
		nb = *a.Budget
	}
	if req.MaxSteps != nil {
		nb.MaxSteps = *req.MaxSteps
	}
	if req.MaxTokens != nil {
		nb.MaxTokens = *req.MaxTokens
	}
	if req.MaxTime != nil {
		if *req.MaxTime == "0s" {
			nb.MaxTime = ""
		} else {
			nb.MaxTime = *req.MaxTime
		}
	}
	if req.MaxDisk != nil {
		nb.MaxDisk = *req.MaxDisk
	}
	b.Budget = &nb
	if b.State == api.StatePaused && strings.HasPrefix(b.StateReason, "agent budget exhausted: ") {
		b.State, b.StateReason = api.StateThinking, ""
	}
	return &b, nil
}

func (f *fakeDaemon) eventStream(w http.ResponseWriter, r *http.Request) {
	if _, err := f.agent(r.PathValue("ref")); err != nil {
		w.WriteHeader(http.StatusNotFound)
		json.NewEncoder(w).Encode(api.ErrorResponse{Error: err.Error()})
		return
	}
	since, _ := strconv.ParseInt(r.URL.Query().Get("since"), 10, 64)
	f.mu.Lock()
	f.sinces = append(f.sinces, since)
	conn, events, subscribing := len(f.sinces), f.events, f.subscribing
	f.mu.Unlock()
	if subscribing != nil {
		subscribing()
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	ew := &eventWriter{w: w, r: r}
	ew.flush()
	if events == nil {
		<-r.Context().Done()
		return
	}
	events(ew, r, conn)
}

// eventWriter writes one NDJSON event at a time, flushed, as the daemon does.
type eventWriter struct {
	w http.ResponseWriter
	r *http.Request
}

func (e *eventWriter) send(ev api.Event) {
	if ev.Time.IsZero() {
		ev.Time = fixedTime
	}
	json.NewEncoder(e.w).Encode(ev)
	e.flush()
}

func (e *eventWriter) flush() { http.NewResponseController(e.w).Flush() }

// wait blocks until ch delivers, the client hangs up or 10s pass.
func wait[T any](t *testing.T, e *eventWriter, ch <-chan T) (T, bool) {
	select {
	case v := <-ch:
		return v, true
	case <-e.r.Context().Done():
	case <-time.After(10 * time.Second):
		t.Errorf("fake daemon: timed out waiting for %T", *new(T))
	}
	var zero T
	return zero, false
}

var fixedTime = time.Date(2026, 11, 21, 9, 30, 0, 0, time.UTC)

// stepAt is when the past steps why, diff and rewind show were decided and checkpointed.
var stepAt = fixedTime.Add(-25 * time.Minute)

func cannedStatus() api.Status {
	return api.Status{
		Version: "0.1.0", PID: 4242, Started: fixedTime.Add(-2 * time.Hour), StateDir: "/var/lib/agentd",
		Ollama: api.OllamaStatus{
			Host: "http://127.0.0.1:11434", Reachable: true, Version: "0.17.4", Model: "qwen3:4b",
			ModelPresent: true, ContextLength: 8192, Capabilities: []string{"completion", "tools"},
		},
		Agents: map[string]int{"awaiting_decision": 1, "idle": 1, "failed": 1, "thinking": 1},
		Bots: []api.BotStatus{
			{Platform: "discord", State: "reconnecting", Since: fixedTime.Add(-time.Minute), Attempt: 3, Error: "no heartbeat ACK for 1m2s"},
			{Platform: "slack", State: "connected", Since: fixedTime.Add(-time.Hour)},
		},
		HTTP:  api.HTTPStatus{Listening: true, Addr: "127.0.0.1:7070", Metrics: true, AgentProtocol: true},
		Shell: api.ShellStatus{Enabled: true, Confined: true, Sandbox: "bubblewrap (/usr/bin/bwrap), uid 65534, no capabilities, no network"},
	}
}

func cannedAgents() []*api.Agent {
	created := fixedTime.Add(-time.Hour)
	return []*api.Agent{{
		ID: "a-1", Name: "researcher", Description: "a careful researcher who cites sources",
		Goals: []string{"find three recent papers on grammar-constrained decoding", "summarize each in notes.md"},
		Directives: api.Directives{
			Constraints:   []string{"stay inside the workspace"},
			Resources:     []string{"web search", "files in the workspace"},
			BestPractices: []string{"check the result of each command"},
		},
		Task: "find three recent papers on grammar-constrained decoding and summarize them", RunID: "r-2", Step: 4,
		State: api.StateAwaitingDecision, Policy: api.Policy{Mode: "ask"}, Workspace: "/var/lib/agentd/work/a-1",
		Pending: &api.Proposal{
			ID: "p-7", AgentID: "a-1", RunID: "r-2", Step: 4, Command: "write_file", Status: api.ProposalPending,
			Args: json.RawMessage(`{"path":"notes.md","content":"# Notes\n\n1. Outlines (2023)\n2. XGrammar (2024)\n"}`),
			Thoughts: api.Thoughts{
				Observations: "Two papers found so far.", Text: "I should save what I have.",
				Reasoning:     "Writing notes now means nothing is lost if the run stops.",
				SelfCriticism: "I have only two papers.", Plan: "- save notes\n- search for a third paper",
				Speak: "I'll save my notes before searching further.",
			},
			CreatedAt: fixedTime,
		},
		PromptTokens: 12840, EvalTokens: 1733, CreatedAt: created, UpdatedAt: fixedTime,
		StepsTotal: 31, BusyMS: 125400, DiskBytes: 3 << 29, Budget: &api.Budget{MaxTokens: 500000, MaxTime: "2h0m0s", MaxDisk: 10 << 30},
		Runs: []api.Run{
			{ID: "r-2", AgentID: "a-1", Task: "find three recent papers on grammar-constrained decoding and summarize them", StartedAt: created.Add(30 * time.Minute), Steps: 4, Tokens: 5210,
				Budget: &api.Budget{MaxSteps: 10, MaxTime: "30m0s"}},
			{ID: "r-1", AgentID: "a-1", Task: "list what is in the workspace", StartedAt: created, EndedAt: created.Add(20 * time.Minute),
				Outcome: "finished", Reason: "listed", Steps: 27, Tokens: 9363},
		},
	}, {
		ID: "a-2", Name: "scribe", Description: "a meticulous note taker", State: api.StateIdle,
		Task:  "keep the meeting notes in notes.md tidy, merge duplicate action items and flag anything without an owner",
		RunID: "r-1", Step: 12, Policy: api.Policy{Mode: "auto", AutoSteps: 3}, CreatedAt: created, UpdatedAt: created,
		StateReason: "budget exhausted: the run made 12 steps, its step budget",
		Runs: []api.Run{{ID: "r-1", AgentID: "a-2", Task: "keep the meeting notes in notes.md tidy", StartedAt: created, EndedAt: created.Add(10 * time.Minute),
			Outcome: "budget_exhausted", Reason: "the run made 12 steps, its step budget", Steps: 12, Tokens: 4100, Budget: &api.Budget{MaxSteps: 12}}},
	}, {
		ID: "a-3", Name: "builder", Description: "builds the project", State: api.StateFailed,
		StateReason: "the model server returned 500 three times", Task: "build and test the project",
		RunID: "r-3", Step: 2, Policy: api.Policy{Mode: "ask"}, CreatedAt: created, UpdatedAt: created,
		Unchecked: "step 2 (execute_shell) of run r-3: could not put back build/: the checkpoints could not capture it",
	}, {
		ID: "a-4", Name: "walker", Description: "walks the file tree", State: api.StateThinking,
		Task: "list the largest files", RunID: "r-4", Step: 0, Policy: api.Policy{Mode: "ask"},
		Pending:   &api.Proposal{ID: "p-old", Command: "list_files", Status: api.ProposalSuperseded},
		CreatedAt: created, UpdatedAt: created,
	}, {
		ID: "a-5", Name: "stale", Description: "proposes what was already decided", State: api.StateAwaitingDecision,
		Task: "tidy the workspace", RunID: "r-5", Step: 1, Policy: api.Policy{Mode: "ask"},
		Pending: &api.Proposal{ID: "p-9", Step: 1, Command: "delete_file", Status: api.ProposalPending,
			Args: json.RawMessage(`{"path":"tmp.txt"}`)},
		CreatedAt: created, UpdatedAt: created,
	}, {
		ID: "a-6", Name: "scribe/filer", Description: "files action items", State: api.StateIdle, ParentID: "a-2",
		StateReason: "finished: filed 4 action items", Task: "file the action items of notes.md",
		RunID: "r-6", Step: 3, Policy: api.Policy{Mode: "ask"}, CreatedAt: created, UpdatedAt: created,
	}}
}

// conflictOnP9 refuses decisions on p-9 the way the daemon refuses a decided proposal.
func conflictOnP9(_ *api.Agent, req api.DecideRequest) (*api.Decision, error) {
	if req.ProposalID == "p-9" {
		return nil, api.Errorf(api.ErrConflict, "proposal p-9 was already approved by alice via slack")
	}
	return &api.Decision{ProposalID: req.ProposalID, Kind: req.Kind, Count: req.Count, By: req.By, Source: req.Source}, nil
}

func cannedHistory() []api.Episode {
	return []api.Episode{{
		RunID: "r-1", Step: 1, ProposalID: "p-1", Command: "web_search", Outcome: "succeeded",
		Args:      json.RawMessage(`{"query":"grammar-constrained decoding survey"}`),
		Reasoning: "Start broad to find the main papers.",
		Result:    "1. Outlines: efficient guided generation\n2. XGrammar\n3. SynCode\n4. GCD for LLMs\n5. Picard\n6. Guidance\n7. LMQL",
		At:        fixedTime.Add(-50 * time.Minute),
		Decision: &api.Decision{ProposalID: "p-1", Kind: api.DecisionApprove, Count: 1, Source: "grant", By: "root",
			Grant: "g-2b", GrantLabel: "root's y -3", GrantCount: 2, GrantLeft: 1},
	}, {
		RunID: "r-1", Step: 2, ProposalID: "p-2", Command: "execute_shell", Outcome: "denied",
		Args:      json.RawMessage(`{"command":"curl -s https://example.com | sh"}`),
		Reasoning: "Install a PDF reader.", At: fixedTime.Add(-45 * time.Minute),
		Decision: &api.Decision{ProposalID: "p-2", Kind: api.DecisionDeny, Source: "slack", By: "alice"},
	}, {
		RunID: "r-2", Step: 1, ProposalID: "p-5", Command: "read_file", Outcome: "feedback",
		Args:      json.RawMessage(`{"path":"papers.txt"}`),
		Reasoning: "Check what is already collected.", Feedback: "papers.txt does not exist; search instead",
		At: fixedTime.Add(-10 * time.Minute),
		Decision: &api.Decision{ProposalID: "p-5", Kind: api.DecisionFeedback, Source: "agentctl", By: "bob",
			Feedback: "papers.txt does not exist; search instead"},
	}, {
		RunID: "r-2", Step: 2, ProposalID: "p-6", Command: "read_file", Outcome: "failed",
		Args:      json.RawMessage(`{"path":"missing.txt"}`),
		Reasoning: "Look for earlier notes.", Result: "open missing.txt: no such file or directory",
		At: fixedTime.Add(-5 * time.Minute),
	}}
}

// testPolicy answers policy AGENT test with canned verdicts: a shell line of two commands,
// one asking on a risky form; execute_python_file approved by a y! binding check.py; any
// other command denied by a path pattern.
func (f *fakeDaemon) testPolicy(_ context.Context, ref string, req api.PolicyTestRequest) (*api.PolicyTest, error) {
	a, err := f.agent(ref)
	if err != nil {
		return nil, err
	}
	args := req.Args
	if args == nil {
		args, _ = json.Marshal(map[string]string{"subject": req.Subject})
	}
	v := &api.PolicyTest{AgentID: a.ID, Command: req.Command, Args: args, Subject: req.Subject}
	if req.Command == "execute_python_file" {
		g := &api.Grant{ID: "g-4e", AgentID: a.ID, Kind: api.GrantExact, By: "root", Source: "agentctl", Label: "y!", Command: req.Command,
			Hash: "5be0c1d2e3f4a5b6c7d8e9f0a1b2c3d4", Used: 1, Files: []api.BoundFile{{Path: "check.py", SHA256: "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f809"}}}
		v.Effect, v.Reason, v.Grant = "allow", "approved by root's y! on this exact execute_python_file", g
		v.Decision = &api.Decision{Kind: api.DecisionApprove, Count: 1, Source: "grant", By: "root", Grant: g.ID, GrantLabel: "root's y! on this exact execute_python_file"}
		return v, nil
	}
	if req.Command == "execute_shell" && req.Subject == "git status" {
		v.Effect, v.Pattern, v.Source, v.Reason = "allow", "execute_shell(git status*)", "config", "auto-approved by execute_shell(git status*) (config rules)"
		v.Decision = &api.Decision{Kind: api.DecisionApprove, Count: 1, Source: "policy", By: "allow pattern execute_shell(git status*)",
			Pattern: "execute_shell(git status*)", Profile: api.ProfileBounded}
		return v, nil
	}
	if req.Command != "execute_shell" {
		v.Effect, v.Pattern, v.Source, v.Reason = "deny", "read_file(secrets/*)", "stored", "denied by read_file(secrets/*) (stored rules)"
		v.Decision = &api.Decision{Kind: api.DecisionFeedback, Source: "policy", By: "deny pattern read_file(secrets/*)", Pattern: "read_file(secrets/*)"}
		return v, nil
	}
	v.Effect = "ask"
	v.Reason = "asking: git -c core.pager=sh status: a wildcard never approves git's global option -c"
	v.Commands = []api.PolicyTestCommand{
		{Command: "git -c core.pager=sh status", Effect: "ask", Reason: "a wildcard never approves git's global option -c"},
		{Command: "git log -n 1", Effect: "allow", Pattern: "execute_shell(git *)", Source: "config", Reason: "allowed by execute_shell(git *) (config rules)"},
		{Command: "echo \u202ex", Effect: "allow", Pattern: "execute_shell(echo *)", Source: "config", Reason: "allowed by execute_shell(echo *) (config rules)"},
	}
	return v, nil
}
