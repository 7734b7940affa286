package localapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/daemon/client"
	"github.com/agentd/agentd/daemon/client/clienttest"
)

// fakeService is a map-backed Service: the one test fake (clienttest.Fake) with every
// route set to a method below. It keeps just enough rules (names unique, one
// pending proposal per agent, a task only when idle) to return each kind of error.
type fakeService struct {
	clienttest.Fake

	mu        sync.Mutex
	agents    map[string]*client.Agent // by id
	order     []string
	history   map[string][]client.Episode
	proposals map[string][]client.Proposal
	events    []client.Event // held for replay
	memories  []client.Memory
	subs      map[*fakeSub]struct{}
	// subscribed and unsubscribed tell a test a stream has begun or ended.
	subscribed   chan struct{}
	unsubscribed chan struct{}
}

type fakeSub struct {
	agent string
	ch    chan client.Event
}

var t0 = time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)

// newFake returns a fake holding one agent, "writer" (id a1), awaiting a decision on p1
// and asked a question, with one episode and three events held.
func newFake() *fakeService {
	f := &fakeService{
		agents: map[string]*client.Agent{}, history: map[string][]client.Episode{},
		proposals: map[string][]client.Proposal{}, subs: map[*fakeSub]struct{}{},
		subscribed: make(chan struct{}, 16), unsubscribed: make(chan struct{}, 16),
	}
	p := client.Proposal{
		ID: "p1", AgentID: "a1", RunID: "r1", Step: 2, Command: "write_file",
		Args: json.RawMessage(`{"path":"a.txt","content":"hi"}`), Hash: "h1",
		Status: client.ProposalPending, Model: "m", CreatedAt: t0,
	}
	f.agents["a1"] = &client.Agent{
		ID: "a1", Name: "writer", Description: "writes", Task: "write a.txt",
		State: client.StateAwaitingDecision, Policy: client.Policy{Mode: "ask"}, RunID: "r1",
		Step: 2, Workspace: "/w/a1", Pending: &p, CreatedAt: t0, UpdatedAt: t0,
		Question: &client.Question{ProposalID: "p0", Text: "which file?", AskedAt: t0},
	}
	f.order = []string{"a1"}
	f.proposals["a1"] = []client.Proposal{p}
	f.history["a1"] = []client.Episode{{
		RunID: "r1", Step: 1, ProposalID: "p0", Command: "list_folder",
		Args: json.RawMessage(`{"path":"."}`), Outcome: "succeeded", Result: "a.txt", At: t0,
	}}
	for i := 1; i <= 3; i++ {
		f.events = append(f.events, client.Event{Seq: int64(i), Type: client.EventState, AgentID: "a1", Time: t0})
	}
	f.handleAll()
	return f
}

func (f *fakeService) resolve(ref string) (*client.Agent, error) {
	if ref == "boom" {
		return nil, errors.New("database is on fire")
	}
	if a, ok := f.agents[ref]; ok {
		return a, nil
	}
	for _, a := range f.agents {
		if a.Name == ref {
			return a, nil
		}
	}
	return nil, fmt.Errorf("no agent %q: %w", ref, client.ErrNotFound)
}

func (f *fakeService) statusRoute(ctx context.Context, _ string, _ client.None) (*client.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := &client.Status{Version: "test", PID: 1, Started: t0, StateDir: "/s", Agents: map[string]int{}}
	for _, a := range f.agents {
		st.Agents[string(a.State)]++
	}
	return st, nil
}

func (f *fakeService) agentsRoute(ctx context.Context, q client.AgentQuery, p client.Page) ([]client.Agent, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []client.Agent
	for _, id := range f.order {
		out = append(out, *f.agents[id])
	}
	return clienttest.PageOf(out, func(a client.Agent) string { return a.ID }, p)
}

func (f *fakeService) createAgentRoute(ctx context.Context, _ string, req client.CreateAgentRequest) (*client.Agent, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if req.Name == "" && req.Task == "" {
		return nil, fmt.Errorf("give a task or a name: %w", client.ErrBadRequest)
	}
	if _, err := f.resolve(req.Name); err == nil {
		return nil, fmt.Errorf("an agent named %q exists: %w", req.Name, client.ErrConflict)
	}
	id := fmt.Sprintf("a%d", len(f.order)+1)
	a := &client.Agent{ID: id, Name: req.Name, Description: req.Description, Goals: req.Goals,
		Task: req.Task, State: client.StateThinking, Policy: client.Policy{Mode: "ask"}, CreatedAt: t0, UpdatedAt: t0}
	if req.Policy != nil {
		a.Policy = *req.Policy
	}
	f.agents[id] = a
	f.order = append(f.order, id)
	return a, nil
}

func (f *fakeService) agentRoute(ctx context.Context, ref string, _ client.None) (*client.Agent, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.resolve(ref)
}

func (f *fakeService) deleteAgentRoute(ctx context.Context, ref string, _ client.None) (client.None, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a, err := f.resolve(ref)
	if err != nil {
		return client.None{}, err
	}
	delete(f.agents, a.ID)
	for i, id := range f.order {
		if id == a.ID {
			f.order = append(f.order[:i], f.order[i+1:]...)
			break
		}
	}
	return client.None{}, nil
}

func (f *fakeService) decideRoute(ctx context.Context, ref string, req client.DecideRequest) (*client.Decision, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a, err := f.resolve(ref)
	if err != nil {
		return nil, err
	}
	if req.By == "mallory" {
		return nil, fmt.Errorf("%s is not an approver: %w", req.By, client.ErrForbidden)
	}
	if a.Pending == nil || a.Pending.ID != req.ProposalID {
		return nil, fmt.Errorf("proposal %s was already decided: %w", req.ProposalID, client.ErrConflict)
	}
	a.Pending = nil
	a.State = client.StateExecuting
	return &client.Decision{ProposalID: req.ProposalID, Kind: req.Kind, Count: req.Count,
		Feedback: req.Feedback, By: req.By, Source: req.Source, At: t0}, nil
}

func (f *fakeService) answerRoute(ctx context.Context, ref string, req client.AnswerRequest) (client.None, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a, err := f.resolve(ref)
	if err != nil {
		return client.None{}, err
	}
	if a.Question == nil {
		return client.None{}, fmt.Errorf("agent %s asked nothing: %w", a.Name, client.ErrConflict)
	}
	a.Question = nil
	return client.None{}, nil
}

func (f *fakeService) taskRunRoute(ctx context.Context, ref string, req client.TaskRequest) (*client.Agent, error) {
	task := req.Task
	f.mu.Lock()
	defer f.mu.Unlock()
	a, err := f.resolve(ref)
	if err != nil {
		return nil, err
	}
	if task == "" {
		return nil, fmt.Errorf("empty task: %w", client.ErrBadRequest)
	}
	if a.State != client.StateIdle {
		return nil, fmt.Errorf("agent %s is %s, not idle: %w", a.Name, a.State, client.ErrConflict)
	}
	a.Task, a.State = task, client.StateThinking
	a.Runs = append([]client.Run{{ID: fmt.Sprintf("r-%d", len(a.Runs)+1), AgentID: a.ID, Task: task, Budget: req.Budget}}, a.Runs...)
	return a, nil
}

func (f *fakeService) setState(ref string, s client.AgentState) (*client.Agent, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a, err := f.resolve(ref)
	if err != nil {
		return nil, err
	}
	a.State = s
	return a, nil
}

func (f *fakeService) pauseRoute(ctx context.Context, ref string, _ client.None) (*client.Agent, error) {
	return f.setState(ref, client.StatePaused)
}

func (f *fakeService) resumeRoute(ctx context.Context, ref string, _ client.None) (*client.Agent, error) {
	return f.setState(ref, client.StateThinking)
}

func (f *fakeService) setBudgetRoute(ctx context.Context, ref string, req client.BudgetRequest) (*client.Agent, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a, err := f.resolve(ref)
	if err != nil {
		return nil, err
	}
	if req.MaxSteps != nil && *req.MaxSteps < 0 {
		return nil, client.Errorf(client.ErrBadRequest, "max_steps %d: want 0 (no bound) or more", *req.MaxSteps)
	}
	if a.Budget == nil || req.Reset {
		a.Budget = &client.Budget{}
	}
	if req.MaxSteps != nil {
		a.Budget.MaxSteps = *req.MaxSteps
	}
	if req.MaxTokens != nil {
		a.Budget.MaxTokens = *req.MaxTokens
	}
	if req.MaxTime != nil {
		a.Budget.MaxTime = *req.MaxTime
	}
	return a, nil
}

func (f *fakeService) stopRoute(ctx context.Context, ref string, _ client.None) (*client.Agent, error) {
	return f.setState(ref, client.StateIdle)
}

func (f *fakeService) historyRoute(ctx context.Context, ref string, _ client.None) ([]client.Episode, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a, err := f.resolve(ref)
	if err != nil {
		return nil, err
	}
	return f.history[a.ID], nil
}

func (f *fakeService) proposalsRoute(ctx context.Context, ref string, _ client.None) ([]client.Proposal, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a, err := f.resolve(ref)
	if err != nil {
		return nil, err
	}
	return f.proposals[a.ID], nil
}

func (f *fakeService) Subscribe(ref string, since int64) (<-chan client.Event, func(), error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := ""
	if ref != "" {
		a, err := f.resolve(ref)
		if err != nil {
			return nil, nil, err
		}
		id = a.ID
	}
	s := &fakeSub{agent: id, ch: make(chan client.Event, 64)}
	for _, ev := range f.events {
		if since > 0 && ev.Seq > since && (id == "" || ev.AgentID == id) {
			s.ch <- ev
		}
	}
	f.subs[s] = struct{}{}
	f.subscribed <- struct{}{}
	var once sync.Once
	return s.ch, func() {
		once.Do(func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			if _, ok := f.subs[s]; ok {
				delete(f.subs, s)
				close(s.ch)
			}
			f.unsubscribed <- struct{}{}
		})
	}, nil
}

// publish delivers ev to the subscribers it concerns.
func (f *fakeService) publish(ev client.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, ev)
	for s := range f.subs {
		if s.agent == "" || s.agent == ev.AgentID {
			s.ch <- ev
		}
	}
}

// closeAll ends every stream from the service's side, as when followers fall behind.
func (f *fakeService) closeAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for s := range f.subs {
		delete(f.subs, s)
		close(s.ch)
	}
}

func (f *fakeService) auditRoute(_ context.Context, _ string, q client.AuditQuery) ([]client.AuditEntry, error) {
	return []client.AuditEntry{{ID: 1, AgentID: "a-1", Kind: "created", Detail: []byte(`{"limit":` + fmt.Sprint(q.Limit) + `}`)}}, nil
}

func (f *fakeService) replayRoute(_ context.Context, ref string, _ client.None) (*client.Replay, error) {
	if ref != "r-1" {
		return nil, client.Errorf(client.ErrNotFound, "no run or agent %q", ref)
	}
	return &client.Replay{Run: client.Run{ID: "r-1"}, Steps: []client.ReplayStep{}}, nil
}

func (f *fakeService) doctorRoute(_ context.Context, _ string, _ client.None) (*client.DoctorReport, error) {
	return &client.DoctorReport{Checks: []client.Check{{Name: "store", Status: client.CheckOK, Detail: "quick_check ok"}}}, nil
}

func (f *fakeService) reloadRoute(_ context.Context, _ string, _ client.None) (*client.ReloadResult, error) {
	return &client.ReloadResult{Config: "/etc/agentd/agentd.toml", Applied: []string{"ollama.model"}, NeedsRestart: []string{}}, nil
}

func (f *fakeService) commandsRoute(ctx context.Context, ref string, _ client.None) ([]client.CommandInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.resolve(ref); err != nil {
		return nil, err
	}
	return []client.CommandInfo{{Name: "finish", Class: "message", Policy: "ask", Provider: "commands"}}, nil
}

func (f *fakeService) policyRoute(ctx context.Context, ref string, _ client.None) (*client.PolicyView, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a, err := f.resolve(ref)
	if err != nil {
		return nil, err
	}
	return &client.PolicyView{AgentID: a.ID, Permissions: []client.Permission{}}, nil
}

func (f *fakeService) addPermissionRoute(ctx context.Context, ref string, req client.PermissionRequest) (*client.PolicyView, error) {
	v, err := f.policyRoute(ctx, ref, client.None{})
	if err == nil {
		v.Permissions = append(v.Permissions, client.Permission{Effect: req.Effect, Pattern: req.Pattern, Source: "stored"})
	}
	return v, err
}

func (f *fakeService) removePermissionRoute(ctx context.Context, ref string, req client.PermissionRequest) (*client.PolicyView, error) {
	return f.policyRoute(ctx, ref, client.None{})
}

func (f *fakeService) testPolicyRoute(ctx context.Context, ref string, req client.PolicyTestRequest) (*client.PolicyTest, error) {
	v, err := f.policyRoute(ctx, ref, client.None{})
	if err != nil {
		return nil, err
	}
	return &client.PolicyTest{AgentID: v.AgentID, Command: req.Command, Args: req.Args, Subject: req.Subject,
		Effect: "ask", Reason: "asking: no allow pattern matches"}, nil
}

// The memory methods keep memories in a slice; search is a substring match, scored by
// position so the order is fixed.

func (f *fakeService) memoriesRoute(ctx context.Context, _ string, req client.MemoryListRequest) ([]client.Memory, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := ""
	if req.Agent != "" {
		a, err := f.resolve(req.Agent)
		if err != nil {
			return nil, err
		}
		id = a.ID
	}
	out := []client.Memory{}
	for i := len(f.memories) - 1; i >= 0; i-- {
		m := f.memories[i]
		if (id == "" || m.AgentID == id || m.AgentID == "") && (req.Kind == "" || m.Kind == req.Kind) {
			out = append(out, m)
		}
	}
	return out, nil
}

func (f *fakeService) addMemoryRoute(ctx context.Context, _ string, req client.MemoryAddRequest) (*client.Memory, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if strings.TrimSpace(req.Text) == "" {
		return nil, client.Errorf(client.ErrBadRequest, "empty memory text: give the text to remember")
	}
	if req.Kind == "" {
		req.Kind = "note"
	}
	if !slices.Contains(client.MemoryKinds, req.Kind) {
		return nil, client.Errorf(client.ErrBadRequest, "memory kind %q: use one of %s", req.Kind, strings.Join(client.MemoryKinds, ", "))
	}
	m := client.Memory{ID: fmt.Sprintf("m%d", len(f.memories)+1), Kind: req.Kind, Text: req.Text, Source: req.Source, CreatedAt: t0}
	if req.Agent != "" {
		a, err := f.resolve(req.Agent)
		if err != nil {
			return nil, err
		}
		m.AgentID, m.Agent = a.ID, a.Name
	}
	f.memories = append(f.memories, m)
	return &m, nil
}

func (f *fakeService) searchMemoryRoute(ctx context.Context, _ string, req client.MemorySearchRequest) ([]client.Memory, error) {
	if strings.TrimSpace(req.Query) == "" {
		return nil, client.Errorf(client.ErrBadRequest, "empty query: give the words to search for")
	}
	all, err := f.memoriesRoute(ctx, "", client.MemoryListRequest{Agent: req.Agent})
	if err != nil {
		return nil, err
	}
	out := []client.Memory{}
	for _, m := range all {
		if i := strings.Index(m.Text, req.Query); i >= 0 {
			m.Score, m.BM25 = 1/float64(i+1), 1/float64(i+1)
			out = append(out, m)
		}
	}
	return out, nil
}

func (f *fakeService) deleteMemoryRoute(ctx context.Context, id string, _ client.None) (client.None, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, m := range f.memories {
		if m.ID == id {
			f.memories = slices.Delete(f.memories, i, i+1)
			return client.None{}, nil
		}
	}
	return client.None{}, client.Errorf(client.ErrNotFound, "no memory %q: see agentctl memory ls", id)
}

func (f *fakeService) reindexMemoryRoute(ctx context.Context, _ string, _ client.None) (*client.MemoryStats, error) {
	return f.memoryStatsRoute(ctx, "", client.None{})
}

func (f *fakeService) memoryStatsRoute(ctx context.Context, _ string, _ client.None) (*client.MemoryStats, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &client.MemoryStats{Memories: len(f.memories), Indexed: uint64(len(f.memories)), Generation: "gen-000001"}, nil
}

// handleAll sets every route of f.Fake to the map-backed method that answers it.
func (f *fakeService) handleAll() {
	fk := &f.Fake
	clienttest.Handle(fk, client.StatusRoute, f.statusRoute)
	clienttest.HandleList(fk, client.AgentsRoute, f.agentsRoute)
	clienttest.Handle(fk, client.CreateAgentRoute, f.createAgentRoute)
	clienttest.Handle(fk, client.AgentRoute, f.agentRoute)
	clienttest.Handle(fk, client.DeleteAgentRoute, f.deleteAgentRoute)
	clienttest.Handle(fk, client.DecideRoute, f.decideRoute)
	clienttest.Handle(fk, client.AnswerRoute, f.answerRoute)
	clienttest.Handle(fk, client.TaskRoute, f.taskRunRoute)
	clienttest.Handle(fk, client.PauseRoute, f.pauseRoute)
	clienttest.Handle(fk, client.ResumeRoute, f.resumeRoute)
	clienttest.Handle(fk, client.BudgetRoute, f.setBudgetRoute)
	clienttest.Handle(fk, client.StopRoute, f.stopRoute)
	clienttest.Handle(fk, client.HistoryRoute, f.historyRoute)
	clienttest.Handle(fk, client.ProposalsRoute, f.proposalsRoute)
	clienttest.Handle(fk, client.AuditRoute, f.auditRoute)
	clienttest.Handle(fk, client.ReplayRoute, f.replayRoute)
	clienttest.Handle(fk, client.DoctorRoute, f.doctorRoute)
	clienttest.Handle(fk, client.ReloadRoute, f.reloadRoute)
	clienttest.Handle(fk, client.PolicyRoute, f.policyRoute)
	clienttest.Handle(fk, client.AddPermissionRoute, f.addPermissionRoute)
	clienttest.Handle(fk, client.RemovePermissionRoute, f.removePermissionRoute)
	clienttest.Handle(fk, client.TestPolicyRoute, f.testPolicyRoute)
	clienttest.Handle(fk, client.MemoriesRoute, f.memoriesRoute)
	clienttest.Handle(fk, client.AddMemoryRoute, f.addMemoryRoute)
	clienttest.Handle(fk, client.SearchMemoryRoute, f.searchMemoryRoute)
	clienttest.Handle(fk, client.DeleteMemoryRoute, f.deleteMemoryRoute)
	clienttest.Handle(fk, client.ReindexMemoryRoute, f.reindexMemoryRoute)
	clienttest.Handle(fk, client.MemoryStatsRoute, f.memoryStatsRoute)
	clienttest.Handle(fk, client.ImportMemoryRoute, f.importMemoryRoute)
	clienttest.Handle(fk, client.ExportMemoryRoute, f.exportMemoryRoute)
	clienttest.Handle(fk, client.SchedulesRoute, f.schedulesRoute)
	clienttest.Handle(fk, client.ScheduleRoute, f.scheduleRoute)
	clienttest.Handle(fk, client.AddScheduleRoute, f.addScheduleRoute)
	clienttest.Handle(fk, client.RemoveScheduleRoute, f.removeScheduleRoute)
	clienttest.Handle(fk, client.PauseScheduleRoute, f.pauseScheduleRoute)
	clienttest.Handle(fk, client.ResumeScheduleRoute, f.resumeScheduleRoute)
	clienttest.Handle(fk, client.RunScheduleRoute, f.runScheduleRoute)
	clienttest.Handle(fk, client.ScheduleHistoryRoute, f.scheduleHistoryRoute)
	clienttest.Handle(fk, client.TeamsRoute, f.teamsRoute)
	clienttest.Handle(fk, client.StartTeamRoute, f.startTeamRoute)
	clienttest.Handle(fk, client.TeamRoute, f.teamRoute)
	clienttest.Handle(fk, client.StopTeamRoute, f.stopTeamRoute)
	clienttest.Handle(fk, client.PlanTeamRoute, f.planTeamRoute)
	clienttest.Handle(fk, client.CommandsRoute, f.commandsRoute)
	clienttest.Handle(fk, client.AgentCommandsRoute, f.commandsRoute)
	clienttest.HandleStream(fk, client.EventsRoute, f.Subscribe)
	clienttest.HandleStream(fk, client.AgentEventsRoute, f.Subscribe)
	clienttest.HandleStream(fk, client.TeamEventsRoute, f.SubscribeTeam)
}
