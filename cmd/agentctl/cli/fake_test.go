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

	"github.com/agentd/agentd/daemon/client"
	"github.com/agentd/agentd/daemon/client/clienttest"
	"github.com/agentd/agentd/daemon/client/display"
	"github.com/agentd/agentd/daemon/testutil"
)

// fakeDaemon serves the /v0 routes daemon/client calls, on a unix socket, with canned
// client types: the API's one test fake (clienttest.Fake) with its routes set to canned
// answers, and a test may set more. Tests script the event streams and how decisions
// are answered.
type fakeDaemon struct {
	sock string
	api  clienttest.Fake // every route but the event streams

	mu         sync.Mutex
	status     client.Status
	agents     []*client.Agent
	imported   []client.MemoryImportRequest // batches the memory import route took
	history    map[string][]client.Episode
	decisions  []client.DecideRequest
	answers    []client.AnswerRequest
	schedules  []client.ScheduleRequest // schedules added
	sinces     []int64                  // the since of each events request, in order
	auditCalls atomic.Int32             // audit listings served

	// decide, if set, answers a decision instead of the default (accept it).
	decide func(agent *client.Agent, req client.DecideRequest) (*client.Decision, error)
	// events, if set, serves an agent's event stream; conn counts connections from 1.
	events func(w *eventWriter, r *http.Request, conn int)
	// subscribing, if set, runs as an events request subscribes, before the headers go
	// out: what happens there reaches the follower only by reading the agent again.
	subscribing func()

	decided  chan client.DecideRequest // every decision received
	answered chan client.AnswerRequest // every answer received
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
		history:  map[string][]client.Episode{"a-1": cannedHistory()},
		decided:  make(chan client.DecideRequest, 16),
		answered: make(chan client.AnswerRequest, 16),
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
func (f *fakeDaemon) set(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn()
}

func (f *fakeDaemon) routes() http.Handler {
	mux := http.NewServeMux()
	fk := &f.api
	clienttest.Handle(fk, client.WebLogoutRoute, func(context.Context, string, client.None) (*client.WebLogout, error) {
		return &client.WebLogout{Sessions: 2}, nil
	})
	clienttest.Handle(fk, client.WebLoginRoute, func(context.Context, string, client.None) (*client.WebLogin, error) {
		return &client.WebLogin{URL: "http://127.0.0.1:7077/", LoginURL: "http://127.0.0.1:7077/login?token=0123abcd"}, nil
	})
	clienttest.Handle(fk, client.StatusRoute, func(context.Context, string, client.None) (*client.Status, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		st := f.status
		return &st, nil
	})
	clienttest.HandleList(fk, client.AgentsRoute, func(_ context.Context, q client.AgentQuery, p client.Page) ([]client.Agent, string, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		out := []client.Agent{}
		for _, a := range f.agents {
			if q.Brief && a.Pending != nil {
				b := *a
				b.Pending = a.Pending.Brief()
				a = &b
			}
			out = append(out, *a)
		}
		return clienttest.PageOf(out, func(a client.Agent) string { return a.ID }, p)
	})
	clienttest.Handle(fk, client.CreateAgentRoute, f.create)
	agent := func(_ context.Context, ref string, _ client.None) (*client.Agent, error) { return f.agent(ref) }
	clienttest.Handle(fk, client.AgentRoute, agent)
	clienttest.Handle(fk, client.DeleteAgentRoute, func(_ context.Context, ref string, _ client.None) (client.None, error) {
		_, err := f.agent(ref)
		return client.None{}, err
	})
	clienttest.Handle(fk, client.HistoryRoute, f.historyOf)
	clienttest.Handle(fk, client.DecideRoute, f.decision)
	clienttest.Handle(fk, client.AnswerRoute, f.answer)
	clienttest.Handle(fk, client.TaskRoute, f.task)
	clienttest.Handle(fk, client.PauseRoute, agent)
	clienttest.Handle(fk, client.ResumeRoute, agent)
	clienttest.Handle(fk, client.StopRoute, agent)
	clienttest.Handle(fk, client.BudgetRoute, f.budget)
	clienttest.Handle(fk, client.AuditRoute, func(_ context.Context, _ string, q client.AuditQuery) ([]client.AuditEntry, error) {
		at := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
		all := []client.AuditEntry{
			{ID: 1, At: at, AgentID: "a-1", Agent: "researcher", Kind: "created", Detail: json.RawMessage(`{"name":"researcher"}`)},
			{ID: 2, At: at.Add(time.Minute), AgentID: "a-1", Agent: "researcher", Kind: "proposal", Detail: json.RawMessage(`{"command":"read_file","proposal":"p-1"}`)},
			{ID: 3, At: at.Add(2 * time.Minute), AgentID: "a-1", Agent: "researcher", Kind: "decision", Detail: json.RawMessage(`{"by":"alice","kind":"approve","proposal_id":"p-1","source":"slack"}`)},
			{ID: 4, At: at.Add(3 * time.Minute), AgentID: "a-9", Kind: "removed", Detail: json.RawMessage(`{}`)},
		}
		if q.Agent == "busy" { // a long log, past one listing's 10,000 entries
			all = nil
			for id := int64(1); id <= busyAuditEntries; id++ {
				all = append(all, client.AuditEntry{ID: id, At: at, AgentID: "a-7", Agent: "busy", Kind: "proposal", Detail: json.RawMessage(`{}`)})
			}
		}
		// As the daemon: 0 means 100, at most 10,000, the newest below Before, oldest first.
		limit := q.Limit
		if limit < 0 || limit > 10_000 {
			return nil, client.Errorf(client.ErrBadRequest, "limit %d: want 1 to 10000 (0 for 100)", limit)
		}
		if limit == 0 {
			limit = 100
		}
		f.auditCalls.Add(1)
		var out []client.AuditEntry
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
	clienttest.Handle(fk, client.ReplayRoute, func(_ context.Context, ref string, _ client.None) (*client.Replay, error) {
		if ref == "r-2" {
			return grantReplay(), nil
		}
		if ref != "r-1" && ref != "researcher" {
			return nil, client.Errorf(client.ErrNotFound, "no run or agent %q (run ids are in agentctl history and agentctl show)", ref)
		}
		at := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
		return &client.Replay{
			Run: client.Run{ID: "r-1", AgentID: "a-1", Agent: "researcher", Task: "summarize notes.md", StartedAt: at,
				EndedAt: at.Add(5 * time.Minute), Outcome: "finished", Reason: "summary written"},
			Steps: []client.ReplayStep{
				{Proposal: client.Proposal{ID: "p-1", Step: 1, Command: "read_file", Args: json.RawMessage(`{"path":"notes.md"}`), CreatedAt: at.Add(time.Minute),
					Status: client.ProposalSucceeded, Thoughts: client.Thoughts{Observations: "a notes file exists", Plan: "read it, then summarize", Speak: "Reading notes.md"}},
					Decisions: []client.Decision{{ProposalID: "p-1", Kind: client.DecisionApprove, By: "alice", Source: "slack", At: at.Add(2 * time.Minute)}},
					Episode:   &client.Episode{Step: 1, Command: "read_file", Outcome: "succeeded", Result: "line one\nline two"}},
				{Proposal: client.Proposal{ID: "p-2", Step: 2, Command: "write_file", Args: json.RawMessage(`{"path":"summary.md","contents":"x"}`), CreatedAt: at.Add(3 * time.Minute),
					Status: client.ProposalPending, Thoughts: client.Thoughts{Text: "write the summary"}},
					Decisions: []client.Decision{{ProposalID: "p-2", Kind: client.DecisionFeedback, Feedback: "shorter, please", By: "bob", Source: "agentctl", At: at.Add(4 * time.Minute)}}},
			},
		}, nil
	})
	clienttest.Handle(fk, client.DoctorRoute, func(context.Context, string, client.None) (*client.DoctorReport, error) {
		return &client.DoctorReport{Checks: []client.Check{
			{Name: "ollama", Status: client.CheckOK, Detail: "version 0.17.4 at http://127.0.0.1:11434"},
			{Name: "model", Status: client.CheckFail, Detail: "qwen2.5:3b is not on the server", Fix: "ollama pull qwen2.5:3b"},
			{Name: "ollama host", Status: client.CheckOK, Detail: "http://127.0.0.1:11434 up, 1 of 2 slots busy, 340 calls served; models: qwen3:4b"},
			{Name: "ollama host", Status: client.CheckWarn, Detail: "http://gpu-box:11434 down (next try in 4.2s): ollama at http://gpu-box:11434: tags: connection refused",
				Fix: "start Ollama there (`ollama serve`), or remove it from [[ollama.hosts]] in the config"},
			{Name: "store", Status: client.CheckFail, Detail: "/var/lib/agentd/agentd.db has mode 0644: others on this machine can read every agent's history",
				Fix: "chmod 600 /var/lib/agentd/agentd.db (agentd makes it 0600 at start; something changed it)"},
			{Name: "disk", Status: client.CheckWarn, Detail: "812.0 MiB free where /var/lib/agentd is", Fix: "free space on that file system"},
			{Name: "state dir", Status: client.CheckFail, Detail: "others on this machine can read or enter what agentd keeps: /var/lib/agentd has mode 0755, /var/lib/agentd/agentd.db 0644",
				Fix: "chmod 700 /var/lib/agentd; chmod 600 /var/lib/agentd/agentd.db (or restart agentd: it makes its state dir private at start)"},
			{Name: "token file", Status: client.CheckOK, Detail: "/etc/agentd/slack-bot.token (slack.bot_token_file) is private (mode 0600)"},
			{Name: "http", Status: client.CheckOK, Detail: "listening on 127.0.0.1:7070 (metrics, agent protocol)"},
			{Name: "http token", Status: client.CheckFail, Detail: "/etc/agentd/http.token has mode 0644: others on this machine can read the token that steers your agents",
				Fix: "chmod 600 /etc/agentd/http.token"},
		}}, nil
	})
	clienttest.Handle(fk, client.ReloadRoute, func(context.Context, string, client.None) (*client.ReloadResult, error) {
		return &client.ReloadResult{Config: "/etc/agentd/agentd.toml", Applied: []string{"ollama.model", "permissions.allow"},
			NeedsRestart: []string{"memory.k"}, BotsRestarted: true,
			Warnings: []string{"http.agent_protocol: is on but http.listen is empty: nothing serves it"}}, nil
	})
	clienttest.Handle(fk, client.CommandsRoute, func(context.Context, string, client.None) ([]client.CommandInfo, error) {
		return cannedCommands(false), nil
	})
	clienttest.Handle(fk, client.AgentCommandsRoute, func(_ context.Context, ref string, _ client.None) ([]client.CommandInfo, error) {
		_, err := f.agent(ref)
		return cannedCommands(true), err
	})
	clienttest.Handle(fk, client.PolicyRoute, func(_ context.Context, ref string, _ client.None) (*client.PolicyView, error) {
		a, err := f.agent(ref)
		if err != nil {
			return nil, err
		}
		return &client.PolicyView{AgentID: a.ID, AutoRead: true, Permissions: []client.Permission{
			{Effect: "deny", Pattern: "delete_file(*)", Source: "stored", CreatedBy: "alice", Paths: true},
			{Effect: "allow", Pattern: "execute_shell(git status)", Source: "agent-config", Profile: client.ProfileBounded},
			{Effect: "allow", Pattern: "execute_shell(make fmt)+write", Source: "agent-config", Profile: client.ProfileBoundedWrite},
			{Effect: "allow", Pattern: "read_file(*)", Source: "config"},
		}}, nil
	})
	clienttest.Handle(fk, client.TestPolicyRoute, f.testPolicy)
	f.grantRoutes()
	mux.HandleFunc("GET /v0/agents/{ref}/events", f.eventStream)
	f.scheduleRoutes()
	f.teamRoutes()
	f.memoryRoutes()
	mux.HandleFunc("GET /v0/teams/{ref}/events", f.teamEventStream)
	mux.Handle("/", clienttest.Handler(&f.api))
	return mux
}

// cannedCommands is a command list as the daemon reports it; an agent's adds its own patterns.
func cannedCommands(agent bool) []client.CommandInfo {
	read := []client.Permission{{Effect: "allow", Pattern: "read_file(*)", Source: "config"}}
	shell := []client.Permission{}
	if agent {
		read = append([]client.Permission{{Effect: "deny", Pattern: "read_file(secrets/*)", Source: "stored"}}, read...)
		shell = append(shell, client.Permission{Effect: "allow", Pattern: "execute_shell(git status)", Source: "agent-config"})
	}
	return []client.CommandInfo{
		{Name: "read_file", Description: "Read a text file from the workspace", Class: "read", Idempotent: true,
			Params: json.RawMessage(`{"type":"object"}`), Policy: "allow (auto_read)", Provider: "commands", Patterns: read},
		{Name: "execute_shell", Description: "Run a shell command in the workspace", Class: "execute",
			Params: json.RawMessage(`{"type":"object"}`), Policy: "ask (always, unless an allow pattern names it)", Provider: "shell", Patterns: shell},
		{Name: "finish", Description: "End the task: done, or impossible", Class: "message",
			Params: json.RawMessage(`{"type":"object"}`), Policy: "ask", Provider: "commands", Patterns: []client.Permission{}},
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
	return client.Errorf(client.ErrNotFound, "no agent %q%s: see `agentctl ls`", ref, display.DidYouMean(ref, names))
}

func (f *fakeDaemon) agent(ref string) (*client.Agent, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range f.agents {
		if a.ID == ref || a.Name == ref {
			return a, nil
		}
	}
	return nil, f.noAgent(ref)
}

func (f *fakeDaemon) create(_ context.Context, _ string, req client.CreateAgentRequest) (*client.Agent, error) {
	a := &client.Agent{ID: "a-9", Name: req.Name, Description: req.Description, Goals: req.Goals,
		Task: req.Task, State: client.StateThinking, Policy: client.Policy{Mode: "ask"}}
	if a.Task == "" && len(a.Goals) > 0 {
		a.Task = client.GoalsTask // as the daemon does: the run works on the goals
	}
	if req.Name == "" {
		a.Name = "new-agent"
	}
	if req.Policy != nil {
		a.Policy = *req.Policy
	}
	if req.Start != nil && !*req.Start {
		a.State = client.StateIdle
	} else {
		// The run it starts, with its budget, as the daemon shows it.
		a.RunID = "r-9"
		a.Runs = []client.Run{{ID: "r-9", AgentID: a.ID, Task: a.Task, Budget: req.Budget}}
	}
	return a, nil
}

func (f *fakeDaemon) historyOf(_ context.Context, ref string, _ client.None) ([]client.Episode, error) {
	a, err := f.agent(ref)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.history[a.ID], nil
}

func (f *fakeDaemon) decision(_ context.Context, ref string, req client.DecideRequest) (*client.Decision, error) {
	a, err := f.agent(ref)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.decisions = append(f.decisions, req)
	decide := f.decide
	f.mu.Unlock()
	f.decided <- req
	if req.Kind == client.DecisionFeedback && client.IsHelp(req.Feedback) { // as the daemon refuses it
		return nil, client.Errorf(client.ErrBadRequest, "%q asks for help, so it was not sent as feedback and the proposal still waits", req.Feedback)
	}
	if decide != nil {
		return decide(a, req)
	}
	return &client.Decision{ProposalID: req.ProposalID, Kind: req.Kind, Count: req.Count,
		Feedback: req.Feedback, By: req.By, Source: req.Source, At: fixedTime}, nil
}

func (f *fakeDaemon) answer(_ context.Context, ref string, req client.AnswerRequest) (client.None, error) {
	if _, err := f.agent(ref); err != nil {
		return client.None{}, err
	}
	f.mu.Lock()
	f.answers = append(f.answers, req)
	gate := f.answerGate
	f.mu.Unlock()
	f.answered <- req
	if gate != nil {
		<-gate
	}
	if client.IsAnswerHelp(req.Text) { // as the daemon refuses it
		return client.None{}, client.Errorf(client.ErrBadRequest, "%q asks how to answer, so it was not sent and the question still waits", req.Text)
	}
	return client.None{}, nil
}

func (f *fakeDaemon) task(_ context.Context, ref string, req client.TaskRequest) (*client.Agent, error) {
	a, err := f.agent(ref)
	if err != nil {
		return nil, err
	}
	if a.State != client.StateIdle {
		return nil, client.Errorf(client.ErrConflict, "agent %s is %s: stop it first (`agentctl stop %s`) or wait until it is idle", a.Name, a.State, a.Name)
	}
	b := *a
	b.Task, b.State, b.StateReason, b.RunID, b.Step = req.Task, client.StateThinking, "", "r-new", 0
	b.Runs = append([]client.Run{{ID: "r-new", AgentID: a.ID, Task: req.Task, Budget: req.Budget}}, a.Runs...)
	return &b, nil
}

// budget applies a budget request to a copy of the agent, as the daemon would.
func (f *fakeDaemon) budget(_ context.Context, ref string, req client.BudgetRequest) (*client.Agent, error) {
	a, err := f.agent(ref)
	if err != nil {
		return nil, err
	}
	b := *a
	nb := client.Budget{}
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
	if b.State == client.StatePaused && strings.HasPrefix(b.StateReason, "agent budget exhausted: ") {
		b.State, b.StateReason = client.StateThinking, ""
	}
	return &b, nil
}

func (f *fakeDaemon) eventStream(w http.ResponseWriter, r *http.Request) {
	if _, err := f.agent(r.PathValue("ref")); err != nil {
		w.WriteHeader(http.StatusNotFound)
		json.NewEncoder(w).Encode(client.ErrorResponse{Error: err.Error()})
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

func (e *eventWriter) send(ev client.Event) {
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

func cannedStatus() client.Status {
	return client.Status{
		Version: "0.1.0", PID: 4242, Started: fixedTime.Add(-2 * time.Hour), StateDir: "/var/lib/agentd",
		Ollama: client.OllamaStatus{
			Host: "http://127.0.0.1:11434", Reachable: true, Version: "0.17.4", Model: "qwen3:4b",
			ModelPresent: true, ContextLength: 8192, Capabilities: []string{"completion", "tools"},
		},
		Agents: map[string]int{"awaiting_decision": 1, "idle": 1, "failed": 1, "thinking": 1},
		Bots: []client.BotStatus{
			{Platform: "discord", State: "reconnecting", Since: fixedTime.Add(-time.Minute), Attempt: 3, Error: "no heartbeat ACK for 1m2s"},
			{Platform: "slack", State: "connected", Since: fixedTime.Add(-time.Hour)},
		},
		HTTP:  client.HTTPStatus{Listening: true, Addr: "127.0.0.1:7070", Metrics: true, AgentProtocol: true},
		Shell: client.ShellStatus{Enabled: true, Confined: true, Sandbox: "bubblewrap (/usr/bin/bwrap), uid 65534, no capabilities, no network"},
	}
}

func cannedAgents() []*client.Agent {
	created := fixedTime.Add(-time.Hour)
	return []*client.Agent{{
		ID: "a-1", Name: "researcher", Description: "a careful researcher who cites sources",
		Goals: []string{"find three recent papers on grammar-constrained decoding", "summarize each in notes.md"},
		Directives: client.Directives{
			Constraints:   []string{"stay inside the workspace"},
			Resources:     []string{"web search", "files in the workspace"},
			BestPractices: []string{"check the result of each command"},
		},
		Task: "find three recent papers on grammar-constrained decoding and summarize them", RunID: "r-2", Step: 4,
		State: client.StateAwaitingDecision, Policy: client.Policy{Mode: "ask"}, Workspace: "/var/lib/agentd/work/a-1",
		Pending: &client.Proposal{
			ID: "p-7", AgentID: "a-1", RunID: "r-2", Step: 4, Command: "write_file", Status: client.ProposalPending,
			Args: json.RawMessage(`{"path":"notes.md","content":"# Notes\n\n1. Outlines (2023)\n2. XGrammar (2024)\n"}`),
			Thoughts: client.Thoughts{
				Observations: "Two papers found so far.", Text: "I should save what I have.",
				Reasoning:     "Writing notes now means nothing is lost if the run stops.",
				SelfCriticism: "I have only two papers.", Plan: "- save notes\n- search for a third paper",
				Speak: "I'll save my notes before searching further.",
			},
			CreatedAt: fixedTime,
		},
		PromptTokens: 12840, EvalTokens: 1733, CreatedAt: created, UpdatedAt: fixedTime,
		StepsTotal: 31, BusyMS: 125400, DiskBytes: 3 << 29, Budget: &client.Budget{MaxTokens: 500000, MaxTime: "2h0m0s", MaxDisk: 10 << 30},
		Runs: []client.Run{
			{ID: "r-2", AgentID: "a-1", Task: "find three recent papers on grammar-constrained decoding and summarize them", StartedAt: created.Add(30 * time.Minute), Steps: 4, Tokens: 5210,
				Budget: &client.Budget{MaxSteps: 10, MaxTime: "30m0s"}},
			{ID: "r-1", AgentID: "a-1", Task: "list what is in the workspace", StartedAt: created, EndedAt: created.Add(20 * time.Minute),
				Outcome: "finished", Reason: "listed", Steps: 27, Tokens: 9363},
		},
	}, {
		ID: "a-2", Name: "scribe", Description: "a meticulous note taker", State: client.StateIdle,
		Task:  "keep the meeting notes in notes.md tidy, merge duplicate action items and flag anything without an owner",
		RunID: "r-1", Step: 12, Policy: client.Policy{Mode: "auto", AutoSteps: 3}, CreatedAt: created, UpdatedAt: created,
		StateReason: "budget exhausted: the run made 12 steps, its step budget",
		Runs: []client.Run{{ID: "r-1", AgentID: "a-2", Task: "keep the meeting notes in notes.md tidy", StartedAt: created, EndedAt: created.Add(10 * time.Minute),
			Outcome: "budget_exhausted", Reason: "the run made 12 steps, its step budget", Steps: 12, Tokens: 4100, Budget: &client.Budget{MaxSteps: 12}}},
	}, {
		ID: "a-3", Name: "builder", Description: "builds the project", State: client.StateFailed,
		StateReason: "the model server returned 500 three times", Task: "build and test the project",
		RunID: "r-3", Step: 2, Policy: client.Policy{Mode: "ask"}, CreatedAt: created, UpdatedAt: created,
	}, {
		ID: "a-4", Name: "walker", Description: "walks the file tree", State: client.StateThinking,
		Task: "list the largest files", RunID: "r-4", Step: 0, Policy: client.Policy{Mode: "ask"},
		Pending:   &client.Proposal{ID: "p-old", Command: "list_files", Status: client.ProposalSuperseded},
		CreatedAt: created, UpdatedAt: created,
	}, {
		ID: "a-5", Name: "stale", Description: "proposes what was already decided", State: client.StateAwaitingDecision,
		Task: "tidy the workspace", RunID: "r-5", Step: 1, Policy: client.Policy{Mode: "ask"},
		Pending: &client.Proposal{ID: "p-9", Step: 1, Command: "delete_file", Status: client.ProposalPending,
			Args: json.RawMessage(`{"path":"tmp.txt"}`)},
		CreatedAt: created, UpdatedAt: created,
	}, {
		ID: "a-6", Name: "scribe/filer", Description: "files action items", State: client.StateIdle, ParentID: "a-2",
		StateReason: "finished: filed 4 action items", Task: "file the action items of notes.md",
		RunID: "r-6", Step: 3, Policy: client.Policy{Mode: "ask"}, CreatedAt: created, UpdatedAt: created,
	}}
}

// conflictOnP9 refuses decisions on p-9 the way the daemon refuses a decided proposal.
func conflictOnP9(_ *client.Agent, req client.DecideRequest) (*client.Decision, error) {
	if req.ProposalID == "p-9" {
		return nil, client.Errorf(client.ErrConflict, "proposal p-9 was already approved by alice via slack")
	}
	return &client.Decision{ProposalID: req.ProposalID, Kind: req.Kind, Count: req.Count, By: req.By, Source: req.Source}, nil
}

func cannedHistory() []client.Episode {
	return []client.Episode{{
		RunID: "r-1", Step: 1, ProposalID: "p-1", Command: "web_search", Outcome: "succeeded",
		Args:      json.RawMessage(`{"query":"grammar-constrained decoding survey"}`),
		Reasoning: "Start broad to find the main papers.",
		Result:    "1. Outlines: efficient guided generation\n2. XGrammar\n3. SynCode\n4. GCD for LLMs\n5. Picard\n6. Guidance\n7. LMQL",
		At:        fixedTime.Add(-50 * time.Minute),
		Decision: &client.Decision{ProposalID: "p-1", Kind: client.DecisionApprove, Count: 1, Source: "grant", By: "root",
			Grant: "g-2b", GrantLabel: "root's y -3", GrantCount: 2, GrantLeft: 1},
	}, {
		RunID: "r-1", Step: 2, ProposalID: "p-2", Command: "execute_shell", Outcome: "denied",
		Args:      json.RawMessage(`{"command":"curl -s https://example.com | sh"}`),
		Reasoning: "Install a PDF reader.", At: fixedTime.Add(-45 * time.Minute),
		Decision: &client.Decision{ProposalID: "p-2", Kind: client.DecisionDeny, Source: "slack", By: "alice"},
	}, {
		RunID: "r-2", Step: 1, ProposalID: "p-5", Command: "read_file", Outcome: "feedback",
		Args:      json.RawMessage(`{"path":"papers.txt"}`),
		Reasoning: "Check what is already collected.", Feedback: "papers.txt does not exist; search instead",
		At: fixedTime.Add(-10 * time.Minute),
		Decision: &client.Decision{ProposalID: "p-5", Kind: client.DecisionFeedback, Source: "agentctl", By: "bob",
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
func (f *fakeDaemon) testPolicy(_ context.Context, ref string, req client.PolicyTestRequest) (*client.PolicyTest, error) {
	a, err := f.agent(ref)
	if err != nil {
		return nil, err
	}
	args := req.Args
	if args == nil {
		args, _ = json.Marshal(map[string]string{"subject": req.Subject})
	}
	v := &client.PolicyTest{AgentID: a.ID, Command: req.Command, Args: args, Subject: req.Subject}
	if req.Command == "execute_python_file" {
		g := &client.Grant{ID: "g-4e", AgentID: a.ID, Kind: client.GrantExact, By: "root", Source: "agentctl", Label: "y!", Command: req.Command,
			Hash: "5be0c1d2e3f4a5b6c7d8e9f0a1b2c3d4", Used: 1, Files: []client.BoundFile{{Path: "check.py", SHA256: "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f809"}}}
		v.Effect, v.Reason, v.Grant = "allow", "approved by root's y! on this exact execute_python_file", g
		v.Decision = &client.Decision{Kind: client.DecisionApprove, Count: 1, Source: "grant", By: "root", Grant: g.ID, GrantLabel: "root's y! on this exact execute_python_file"}
		return v, nil
	}
	if req.Command == "execute_shell" && req.Subject == "git status" {
		v.Effect, v.Pattern, v.Source, v.Reason = "allow", "execute_shell(git status*)", "config", "auto-approved by execute_shell(git status*) (config rules)"
		v.Decision = &client.Decision{Kind: client.DecisionApprove, Count: 1, Source: "policy", By: "allow pattern execute_shell(git status*)",
			Pattern: "execute_shell(git status*)", Profile: client.ProfileBounded}
		return v, nil
	}
	if req.Command != "execute_shell" {
		v.Effect, v.Pattern, v.Source, v.Reason = "deny", "read_file(secrets/*)", "stored", "denied by read_file(secrets/*) (stored rules)"
		v.Decision = &client.Decision{Kind: client.DecisionFeedback, Source: "policy", By: "deny pattern read_file(secrets/*)", Pattern: "read_file(secrets/*)"}
		return v, nil
	}
	v.Effect = "ask"
	v.Reason = "asking: git -c core.pager=sh status: a wildcard never approves git's global option -c"
	v.Commands = []client.PolicyTestCommand{
		{Command: "git -c core.pager=sh status", Effect: "ask", Reason: "a wildcard never approves git's global option -c"},
		{Command: "git log -n 1", Effect: "allow", Pattern: "execute_shell(git *)", Source: "config", Reason: "allowed by execute_shell(git *) (config rules)"},
		{Command: "echo \u202ex", Effect: "allow", Pattern: "execute_shell(echo *)", Source: "config", Reason: "allowed by execute_shell(echo *) (config rules)"},
	}
	return v, nil
}
