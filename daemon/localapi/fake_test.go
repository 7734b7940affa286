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

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/apitest"
)

// fakeService is a map-backed Service: the one test fake (apitest.Fake) with every
// route set to a method below. It keeps just enough rules (names unique, one
// pending proposal per agent, a task only when idle) to return each kind of error.
type fakeService struct {
	apitest.Fake

	mu        sync.Mutex
	agents    map[string]*api.Agent // by id
	order     []string
	history   map[string][]api.Episode
	proposals map[string][]api.Proposal
	events    []api.Event // held for replay
	memories  []api.Memory
	subs      map[*fakeSub]struct{}
	// subscribed and unsubscribed tell a test a stream has begun or ended.
	subscribed   chan struct{}
	unsubscribed chan struct{}
}

type fakeSub struct {
	agent string
	ch    chan api.Event
}

var t0 = time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)

// newFake returns a fake holding one agent, "writer" (id a1), awaiting a decision on p1
// and asked a question, with one episode and three events held.
func newFake() *fakeService {
	f := &fakeService{
		agents: map[string]*api.Agent{}, history: map[string][]api.Episode{},
		proposals: map[string][]api.Proposal{}, subs: map[*fakeSub]struct{}{},
		subscribed: make(chan struct{}, 16), unsubscribed: make(chan struct{}, 16),
	}
	p := api.Proposal{
		ID: "p1", AgentID: "a1", RunID: "r1", Step: 2, Command: "write_file",
		Args: json.RawMessage(`{"path":"a.txt","content":"hi"}`), Hash: "h1",
		Status: api.ProposalPending, Model: "m", CreatedAt: t0,
	}
	f.agents["a1"] = &api.Agent{
		ID: "a1", Name: "writer", Description: "writes", Task: "write a.txt",
		State: api.StateAwaitingDecision, Policy: api.Policy{Mode: "ask"}, RunID: "r1",
		Step: 2, Workspace: "/w/a1", Pending: &p, CreatedAt: t0, UpdatedAt: t0,
		Question: &api.Question{ProposalID: "p0", Text: "which file?", AskedAt: t0},
	}
	f.order = []string{"a1"}
	f.proposals["a1"] = []api.Proposal{p}
	f.history["a1"] = []api.Episode{{
		RunID: "r1", Step: 1, ProposalID: "p0", Command: "list_folder",
		Args: json.RawMessage(`{"path":"."}`), Outcome: "succeeded", Result: "a.txt", At: t0,
	}}
	for i := 1; i <= 3; i++ {
		f.events = append(f.events, api.Event{Seq: int64(i), Type: api.EventState, AgentID: "a1", Time: t0})
	}
	f.handleAll()
	return f
}

func (f *fakeService) resolve(ref string) (*api.Agent, error) {
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
	return nil, fmt.Errorf("no agent %q: %w", ref, api.ErrNotFound)
}

func (f *fakeService) statusRoute(ctx context.Context, _ string, _ api.None) (*api.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := &api.Status{Version: "test", PID: 1, Started: t0, StateDir: "/s", Agents: map[string]int{}}
	for _, a := range f.agents {
		st.Agents[string(a.State)]++
	}
	return st, nil
}

func (f *fakeService) agentsRoute(ctx context.Context, q api.AgentQuery, p api.Page) ([]api.Agent, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []api.Agent
	for _, id := range f.order {
		out = append(out, *f.agents[id])
	}
	return apitest.PageOf(out, func(a api.Agent) string { return a.ID }, p)
}

func (f *fakeService) createAgentRoute(ctx context.Context, _ string, req api.CreateAgentRequest) (*api.Agent, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if req.Name == "" && req.Task == "" {
		return nil, fmt.Errorf("give a task or a name: %w", api.ErrBadRequest)
	}
	if _, err := f.resolve(req.Name); err == nil {
		return nil, fmt.Errorf("an agent named %q exists: %w", req.Name, api.ErrConflict)
	}
	id := fmt.Sprintf("a%d", len(f.order)+1)
	a := &api.Agent{ID: id, Name: req.Name, Description: req.Description, Goals: req.Goals,
		Task: req.Task, State: api.StateThinking, Policy: api.Policy{Mode: "ask"}, CreatedAt: t0, UpdatedAt: t0}
	if req.Policy != nil {
		a.Policy = *req.Policy
	}
	f.agents[id] = a
	f.order = append(f.order, id)
	return a, nil
}

// onAgent adapts h to a route on the agent ref names: h runs holding f.mu, with the
// agent resolved.
func onAgent[In, Out any](f *fakeService, h func(a *api.Agent, in In) (Out, error)) func(context.Context, string, In) (Out, error) {
	return func(_ context.Context, ref string, in In) (Out, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		a, err := f.resolve(ref)
		if err != nil {
			var none Out
			return none, err
		}
		return h(a, in)
	}
}

func agentRoute(a *api.Agent, _ api.None) (*api.Agent, error) { return a, nil }

func (f *fakeService) deleteAgentRoute(a *api.Agent, _ api.None) (api.None, error) {
	delete(f.agents, a.ID)
	for i, id := range f.order {
		if id == a.ID {
			f.order = append(f.order[:i], f.order[i+1:]...)
			break
		}
	}
	return api.None{}, nil
}

func decideRoute(a *api.Agent, req api.DecideRequest) (*api.Decision, error) {
	if req.By == "mallory" {
		return nil, fmt.Errorf("%s is not an approver: %w", req.By, api.ErrForbidden)
	}
	if a.Pending == nil || a.Pending.ID != req.ProposalID {
		return nil, fmt.Errorf("proposal %s was already decided: %w", req.ProposalID, api.ErrConflict)
	}
	a.Pending = nil
	a.State = api.StateExecuting
	return &api.Decision{ProposalID: req.ProposalID, Kind: req.Kind, Count: req.Count,
		Feedback: req.Feedback, By: req.By, Source: req.Source, At: t0}, nil
}

func answerRoute(a *api.Agent, req api.AnswerRequest) (api.None, error) {
	if a.Question == nil {
		return api.None{}, fmt.Errorf("agent %s asked nothing: %w", a.Name, api.ErrConflict)
	}
	a.Question = nil
	return api.None{}, nil
}

func taskRunRoute(a *api.Agent, req api.TaskRequest) (*api.Agent, error) {
	task := req.Task
	if task == "" {
		return nil, fmt.Errorf("empty task: %w", api.ErrBadRequest)
	}
	if a.State != api.StateIdle {
		return nil, fmt.Errorf("agent %s is %s, not idle: %w", a.Name, a.State, api.ErrConflict)
	}
	a.Task, a.State = task, api.StateThinking
	a.Runs = append([]api.Run{{ID: fmt.Sprintf("r-%d", len(a.Runs)+1), AgentID: a.ID, Task: task, Budget: req.Budget}}, a.Runs...)
	return a, nil
}

// setState is a route that puts the agent in state s.
func setState(s api.AgentState) func(*api.Agent, api.None) (*api.Agent, error) {
	return func(a *api.Agent, _ api.None) (*api.Agent, error) {
		a.State = s
		return a, nil
	}
}

func setBudgetRoute(a *api.Agent, req api.BudgetRequest) (*api.Agent, error) {
	if req.MaxSteps != nil && *req.MaxSteps < 0 {
		return nil, api.Errorf(api.ErrBadRequest, "max_steps %d: want 0 (no bound) or more", *req.MaxSteps)
	}
	if a.Budget == nil || req.Reset {
		a.Budget = &api.Budget{}
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

func (f *fakeService) historyRoute(a *api.Agent, _ api.None) ([]api.Episode, error) {
	return f.history[a.ID], nil
}

func (f *fakeService) proposalsRoute(a *api.Agent, _ api.None) ([]api.Proposal, error) {
	return f.proposals[a.ID], nil
}

func (f *fakeService) Subscribe(ref string, since int64) (<-chan api.Event, func(), error) {
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
	s := &fakeSub{agent: id, ch: make(chan api.Event, 64)}
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
func (f *fakeService) publish(ev api.Event) {
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

func (f *fakeService) auditRoute(_ context.Context, _ string, q api.AuditQuery) ([]api.AuditEntry, error) {
	return []api.AuditEntry{{ID: 1, AgentID: "a-1", Kind: "created", Detail: []byte(`{"limit":` + fmt.Sprint(q.Limit) + `}`)}}, nil
}

func (f *fakeService) replayRoute(_ context.Context, ref string, _ api.None) (*api.Replay, error) {
	if ref != "r-1" {
		return nil, api.Errorf(api.ErrNotFound, "no run or agent %q", ref)
	}
	return &api.Replay{Run: api.Run{ID: "r-1"}, Steps: []api.ReplayStep{}}, nil
}

func (f *fakeService) doctorRoute(_ context.Context, _ string, _ api.None) (*api.DoctorReport, error) {
	return &api.DoctorReport{Checks: []api.Check{{Name: "store", Status: api.CheckOK, Detail: "quick_check ok"}}}, nil
}

func (f *fakeService) reloadRoute(_ context.Context, _ string, _ api.None) (*api.ReloadResult, error) {
	return &api.ReloadResult{Config: "/etc/agentd/agentd.toml", Applied: []string{"ollama.model"}, NeedsRestart: []string{}}, nil
}

func commandsRoute(*api.Agent, api.None) ([]api.CommandInfo, error) {
	return []api.CommandInfo{{Name: "finish", Class: "message", Policy: "ask", Provider: "commands"}}, nil
}

func policyRoute(a *api.Agent, _ api.None) (*api.PolicyView, error) {
	return &api.PolicyView{AgentID: a.ID, Permissions: []api.Permission{}}, nil
}

func addPermissionRoute(a *api.Agent, req api.PermissionRequest) (*api.PolicyView, error) {
	v, err := policyRoute(a, api.None{})
	v.Permissions = append(v.Permissions, api.Permission{Effect: req.Effect, Pattern: req.Pattern, Source: "stored"})
	return v, err
}

func removePermissionRoute(a *api.Agent, _ api.PermissionRequest) (*api.PolicyView, error) {
	return policyRoute(a, api.None{})
}

func testPolicyRoute(a *api.Agent, req api.PolicyTestRequest) (*api.PolicyTest, error) {
	return &api.PolicyTest{AgentID: a.ID, Command: req.Command, Args: req.Args, Subject: req.Subject,
		Effect: "ask", Reason: "asking: no allow pattern matches"}, nil
}

// The memory methods keep memories in a slice; search is a substring match, scored by
// position so the order is fixed.

func (f *fakeService) memoriesRoute(ctx context.Context, _ string, req api.MemoryListRequest) ([]api.Memory, error) {
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
	out := []api.Memory{}
	for i := len(f.memories) - 1; i >= 0; i-- {
		m := f.memories[i]
		if (id == "" || m.AgentID == id || m.AgentID == "") && (req.Kind == "" || m.Kind == req.Kind) {
			out = append(out, m)
		}
	}
	return out, nil
}

func (f *fakeService) addMemoryRoute(ctx context.Context, _ string, req api.MemoryAddRequest) (*api.Memory, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if strings.TrimSpace(req.Text) == "" {
		return nil, api.Errorf(api.ErrBadRequest, "empty memory text: give the text to remember")
	}
	if req.Kind == "" {
		req.Kind = "note"
	}
	if !slices.Contains(api.MemoryKinds, req.Kind) {
		return nil, api.Errorf(api.ErrBadRequest, "memory kind %q: use one of %s", req.Kind, strings.Join(api.MemoryKinds, ", "))
	}
	m := api.Memory{ID: fmt.Sprintf("m%d", len(f.memories)+1), Kind: req.Kind, Text: req.Text, Source: req.Source, CreatedAt: t0}
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

func (f *fakeService) searchMemoryRoute(ctx context.Context, _ string, req api.MemorySearchRequest) ([]api.Memory, error) {
	if strings.TrimSpace(req.Query) == "" {
		return nil, api.Errorf(api.ErrBadRequest, "empty query: give the words to search for")
	}
	all, err := f.memoriesRoute(ctx, "", api.MemoryListRequest{Agent: req.Agent})
	if err != nil {
		return nil, err
	}
	out := []api.Memory{}
	for _, m := range all {
		if i := strings.Index(m.Text, req.Query); i >= 0 {
			m.Score, m.BM25 = 1/float64(i+1), 1/float64(i+1)
			out = append(out, m)
		}
	}
	return out, nil
}

func (f *fakeService) deleteMemoryRoute(ctx context.Context, id string, _ api.None) (api.None, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, m := range f.memories {
		if m.ID == id {
			f.memories = slices.Delete(f.memories, i, i+1)
			return api.None{}, nil
		}
	}
	return api.None{}, api.Errorf(api.ErrNotFound, "no memory %q: see agentctl memory ls", id)
}

func (f *fakeService) reindexMemoryRoute(ctx context.Context, _ string, _ api.None) (*api.MemoryStats, error) {
	return f.memoryStatsRoute(ctx, "", api.None{})
}

func (f *fakeService) memoryStatsRoute(ctx context.Context, _ string, _ api.None) (*api.MemoryStats, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &api.MemoryStats{Memories: len(f.memories), Indexed: uint64(len(f.memories)), Generation: "gen-000001"}, nil
}

// handleAll sets every route of f.Fake to the map-backed method that answers it.
func (f *fakeService) handleAll() {
	fk := &f.Fake
	apitest.Handle(fk, api.StatusRoute, f.statusRoute)
	apitest.HandleList(fk, api.AgentsRoute, f.agentsRoute)
	apitest.Handle(fk, api.CreateAgentRoute, f.createAgentRoute)
	apitest.Handle(fk, api.AgentRoute, onAgent(f, agentRoute))
	apitest.Handle(fk, api.DeleteAgentRoute, onAgent(f, f.deleteAgentRoute))
	apitest.Handle(fk, api.DecideRoute, onAgent(f, decideRoute))
	apitest.Handle(fk, api.AnswerRoute, onAgent(f, answerRoute))
	apitest.Handle(fk, api.TaskRoute, onAgent(f, taskRunRoute))
	apitest.Handle(fk, api.PauseRoute, onAgent(f, setState(api.StatePaused)))
	apitest.Handle(fk, api.ResumeRoute, onAgent(f, setState(api.StateThinking)))
	apitest.Handle(fk, api.BudgetRoute, onAgent(f, setBudgetRoute))
	apitest.Handle(fk, api.StopRoute, onAgent(f, setState(api.StateIdle)))
	apitest.Handle(fk, api.HistoryRoute, onAgent(f, f.historyRoute))
	apitest.Handle(fk, api.ProposalsRoute, onAgent(f, f.proposalsRoute))
	apitest.Handle(fk, api.PolicyRoute, onAgent(f, policyRoute))
	apitest.Handle(fk, api.AddPermissionRoute, onAgent(f, addPermissionRoute))
	apitest.Handle(fk, api.RemovePermissionRoute, onAgent(f, removePermissionRoute))
	apitest.Handle(fk, api.TestPolicyRoute, onAgent(f, testPolicyRoute))
	apitest.Handle(fk, api.CommandsRoute, onAgent(f, commandsRoute))
	apitest.Handle(fk, api.AgentCommandsRoute, onAgent(f, commandsRoute))
	apitest.Handle(fk, api.AuditRoute, f.auditRoute)
	apitest.Handle(fk, api.ReplayRoute, f.replayRoute)
	apitest.Handle(fk, api.DoctorRoute, f.doctorRoute)
	apitest.Handle(fk, api.ReloadRoute, f.reloadRoute)
	apitest.Handle(fk, api.MemoriesRoute, f.memoriesRoute)
	apitest.Handle(fk, api.AddMemoryRoute, f.addMemoryRoute)
	apitest.Handle(fk, api.SearchMemoryRoute, f.searchMemoryRoute)
	apitest.Handle(fk, api.DeleteMemoryRoute, f.deleteMemoryRoute)
	apitest.Handle(fk, api.ReindexMemoryRoute, f.reindexMemoryRoute)
	apitest.Handle(fk, api.MemoryStatsRoute, f.memoryStatsRoute)
	apitest.Handle(fk, api.ImportMemoryRoute, f.importMemoryRoute)
	apitest.Handle(fk, api.ExportMemoryRoute, f.exportMemoryRoute)
	apitest.Handle(fk, api.SchedulesRoute, f.schedulesRoute)
	apitest.Handle(fk, api.ScheduleRoute, f.scheduleRoute)
	apitest.Handle(fk, api.AddScheduleRoute, f.addScheduleRoute)
	apitest.Handle(fk, api.RemoveScheduleRoute, f.removeScheduleRoute)
	apitest.Handle(fk, api.PauseScheduleRoute, f.pauseScheduleRoute)
	apitest.Handle(fk, api.ResumeScheduleRoute, f.resumeScheduleRoute)
	apitest.Handle(fk, api.RunScheduleRoute, f.runScheduleRoute)
	apitest.Handle(fk, api.ScheduleHistoryRoute, f.scheduleHistoryRoute)
	apitest.Handle(fk, api.TeamsRoute, f.teamsRoute)
	apitest.Handle(fk, api.StartTeamRoute, f.startTeamRoute)
	apitest.Handle(fk, api.TeamRoute, f.teamRoute)
	apitest.Handle(fk, api.StopTeamRoute, f.stopTeamRoute)
	apitest.Handle(fk, api.PlanTeamRoute, f.planTeamRoute)
	apitest.HandleStream(fk, api.EventsRoute, f.Subscribe)
	apitest.HandleStream(fk, api.AgentEventsRoute, f.Subscribe)
	apitest.HandleStream(fk, api.TeamEventsRoute, f.SubscribeTeam)
}
