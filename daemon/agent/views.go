package agent

import (
	"context"
	"os"
	"strconv"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/metrics"
	"github.com/agentd/agentd/daemon/run"
	"github.com/agentd/agentd/daemon/store"
)

// shownRuns is how many of its latest runs an agent is shown with.
const shownRuns = 5

// agentViews answers the local API's read-only questions: the daemon's status, the agents,
// their history and proposals, and their events.
type agentViews struct {
	st       *store.Store
	events   *run.Broker
	budgets  *budgets    // each agent's budget, shown with it
	model    *modelState // the model server's state, for the status
	version  string
	stateDir string
	started  time.Time
	mem      *memState // nil: no long-term memory; its size is a gauge
	// freshen asks the model server again when its last answer is older than fresh
	// (Supervisor.freshen), before Status reports it.
	freshen func(ctx context.Context, maxAge time.Duration)
	fresh   time.Duration
}

// Status reports the daemon, the model server and the agents by state. What it says of
// the model server is at most a few seconds old: older, the server is asked again.
func (s *agentViews) Status(ctx context.Context) (*api.Status, error) {
	if s.freshen != nil {
		s.freshen(ctx, s.fresh)
	}
	st := &api.Status{
		Version: s.version, PID: os.Getpid(), Started: s.started, StateDir: s.stateDir, EventSeq: s.events.Seq(),
		Ollama: s.model.status(), Agents: map[string]int{},
	}
	err := s.st.View(ctx, func(tx *store.Tx) error {
		agents, err := tx.Agents()
		for _, a := range agents {
			st.Agents[string(a.State)]++
		}
		return err
	})
	return st, err
}

// Agents lists every agent, whole: what the daemon's own parts (the bots, the Agent
// Protocol) read in-process.
func (s *agentViews) Agents(ctx context.Context) ([]api.Agent, error) {
	l, err := s.ListAgents(ctx, api.AgentQuery{}, api.Page{})
	if err != nil {
		return nil, err
	}
	return l.Agents, nil
}

// ListAgents returns a page of the agents, oldest first, each with its open proposal or
// question and its budget: at most p.Limit (0: all) after the cursor p.After. Each page
// is one read: the agents, then the open proposals and questions of those agents only.
// The cursor is the last agent's position in the store, so a listing goes on right
// when that agent is removed between two pages.
func (s *agentViews) ListAgents(ctx context.Context, q api.AgentQuery, p api.Page) (*api.AgentList, error) {
	var after int64
	if p.After != "" {
		n, err := strconv.ParseInt(p.After, 10, 64)
		if err != nil || n < 1 {
			return nil, api.Errorf(api.ErrBadRequest, "after %q is not a cursor of this listing: use the next page's URL (the Link "+
				"header) or its next field, or leave after out to start at the first agent", p.After)
		}
		after = n
	}
	ask := -1 // all
	if p.Limit > 0 {
		ask = p.Limit + 1 // one more than asked: whether another page follows
	}
	out := &api.AgentList{Agents: []api.Agent{}}
	err := s.st.View(ctx, func(tx *store.Tx) error {
		agents, pos, err := tx.AgentsPage(after, ask)
		if err != nil {
			return err
		}
		if p.Limit > 0 && len(agents) > p.Limit {
			agents, pos = agents[:p.Limit], pos[:p.Limit]
			out.Next = strconv.FormatInt(pos[len(pos)-1], 10)
		}
		var span store.AgentRange // every agent
		if p.Limit > 0 {
			span = store.AgentRange{After: after, Through: after}
			if len(pos) > 0 {
				span.Through = pos[len(pos)-1]
			}
		}
		open, err := tx.OpenProposals(span, q.Brief) // two queries per page, not two per agent
		if err != nil {
			return err
		}
		questions, err := tx.Questions(span)
		if err != nil {
			return err
		}
		out.Agents = make([]api.Agent, 0, len(agents))
		for _, a := range agents {
			v := viewOf(a, open[a.ID], questions[a.ID])
			v.Budget = s.budgets.budgetView(a)
			if q.Brief && v.Pending != nil {
				v.Pending = v.Pending.Brief()
			}
			out.Agents = append(out.Agents, *v)
		}
		return nil
	})
	return out, err
}

// Agent returns one agent with its budget and latest runs.
func (s *agentViews) Agent(ctx context.Context, ref string) (*api.Agent, error) {
	return onAgent(ctx, s.st.View, ref, func(tx *store.Tx, a *store.Agent) (*api.Agent, error) {
		out, err := view(tx, a)
		if err != nil {
			return nil, err
		}
		out.Budget = s.budgets.budgetView(a)
		out.Runs, err = tx.Runs(a.ID, shownRuns)
		return out, err
	})
}

// History returns an agent's episodes.
func (s *agentViews) History(ctx context.Context, ref string) ([]api.Episode, error) {
	eps, err := onAgent(ctx, s.st.View, ref, func(tx *store.Tx, a *store.Agent) ([]api.Episode, error) {
		eps, err := tx.Episodes(a.ID, 0)
		if err != nil {
			return nil, err
		}
		ds, err := tx.LastDecisions(a.ID)
		for i := range eps {
			eps[i].Decision = ds[eps[i].ProposalID]
		}
		return eps, err
	})
	return orEmpty(eps), err
}

// Proposals returns an agent's proposals.
func (s *agentViews) Proposals(ctx context.Context, ref string) ([]api.Proposal, error) {
	ps, err := onAgent(ctx, s.st.View, ref, func(tx *store.Tx, a *store.Agent) ([]api.Proposal, error) { return tx.Proposals(a.ID) })
	return orEmpty(ps), err
}

// orEmpty is l, or an empty list for none: the API shows [] rather than null.
func orEmpty[T any](l []T) []T {
	if l == nil {
		return []T{}
	}
	return l
}

// Subscribe streams events.
func (s *agentViews) Subscribe(ref string, since int64) (<-chan api.Event, func(), error) {
	id := ""
	if ref != "" {
		a, err := s.Agent(context.Background(), ref)
		if err != nil {
			return nil, nil, err
		}
		id = a.ID
	}
	ch, cancel := s.events.Subscribe(id, since)
	return ch, cancel, nil
}

// MetricsState reads the store-backed gauges for a metrics scrape.
func (s *agentViews) MetricsState(ctx context.Context) (metrics.State, error) {
	var g *store.Gauges
	err := s.st.View(ctx, func(tx *store.Tx) (err error) { g, err = tx.Gauges(); return err })
	if err != nil {
		return metrics.State{}, err
	}
	out := metrics.State{AgentsByState: g.AgentsByState, DecisionsPending: g.DecisionsPending, MemoryDocuments: -1}
	if s.mem != nil {
		out.MemoryDocuments = int(s.mem.ix.Stats().Docs)
	}
	for _, a := range g.AgentTokens {
		out.AgentTokens = append(out.AgentTokens, metrics.AgentTokens{Agent: a.Name, PromptTokens: a.Prompt, EvalTokens: a.Eval})
	}
	for _, sc := range g.ScheduleTokens {
		out.ScheduleTokens = append(out.ScheduleTokens, metrics.ScheduleTokens{Schedule: sc.Name, Tokens: sc.Prompt})
	}
	return out, nil
}
