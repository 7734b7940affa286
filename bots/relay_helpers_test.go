package bots

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/testutil"
)

// fakeAdapter records posts. Like the platforms, it hands out message ids in the order
// messages are written (decimal, as Slack's ts and Discord's snowflakes), whether the
// relay posts them or a person does (stamp).
type fakeAdapter struct {
	mu    sync.Mutex
	posts []string // channel thread summary
	first []string // each post's first part, as text
	files []string // each upload: name, comment, then the content
	// updates are each Update: the message's id, then its parts as text.
	updates []string
	n       int
	// onPost, if set, runs once a post is on the platform and before Post returns, as a
	// platform's events can reach the relay before its call does.
	onPost func(id string)
}

// stamp is the id of a message a person writes now.
func (f *fakeAdapter) stamp() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	return fmt.Sprint(1000 + f.n)
}

func (f *fakeAdapter) Platform() string { return "slack" }
func (f *fakeAdapter) StartThread(context.Context, string, string, string) (string, error) {
	return "", errors.New("not used")
}
func (f *fakeAdapter) Post(_ context.Context, channel, thread string, m Message) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	f.posts = append(f.posts, channel+" "+thread+" "+m.Summary)
	first := ""
	if len(m.Parts) > 0 {
		first = text(Message{Parts: m.Parts[:1]})
	}
	f.first = append(f.first, first)
	id, onPost := fmt.Sprint(1000+f.n), f.onPost
	if onPost != nil {
		f.mu.Unlock()
		onPost(id)
		f.mu.Lock()
	}
	return id, nil
}
func (f *fakeAdapter) Update(_ context.Context, _, id string, m Message) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.updates = append(f.updates, id+" "+partsText(m))
	return nil
}

// partsText is m's parts as text, one line each.
func partsText(m Message) string {
	var b strings.Builder
	for _, p := range m.Parts {
		for _, s := range p.Spans {
			b.WriteString(s.Text)
		}
		b.WriteString(p.Code + "\n")
	}
	return b.String()
}
func (f *fakeAdapter) PostFile(_ context.Context, _, _, name, content, comment string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.files = append(f.files, name+"\n"+comment+"\n"+content)
	return nil
}
func (f *fakeAdapter) Ephemeral(_ context.Context, _, _, user, text string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.posts = append(f.posts, "ephemeral "+user+" "+text)
	return nil
}
func (f *fakeAdapter) OpenFeedback(context.Context, string, Ref, string) error { return nil }
func (f *fakeAdapter) InGroup(context.Context, string, string) (bool, error)   { return false, nil }
func (f *fakeAdapter) MaxText() int                                            { return 3000 }
func (f *fakeAdapter) Before(a, b string) bool                                 { return DecimalBefore(a, b) }

// memBindings keeps bindings and messages in maps, and deliveries as the store does:
// the last DeliveriesKept per platform and scope.
type memBindings struct {
	mu   sync.Mutex
	bs   []*Binding
	msgs map[string]*ChatMessage
	// onLookup, if set, is told of each Message lookup and whether it found one.
	onLookup func(id string, found bool)
	// seen holds the deliveries of each platform and scope, and order them oldest first.
	seen  map[string]map[string]bool
	order map[string][]string
	// answered are the questions answered, as the store marks their rows.
	answered map[*ChatMessage]bool
	teams    []*TeamBinding
	// agents, when set, names each agent's parent, for ThreadsOf's walk to a helper's
	// nearest bound parent (the store reads its agents table).
	agents Service
}

// ThreadsOf is the latest binding on each platform of agentID or, for a helper, of its
// nearest bound parent, as the store finds them.
func (m *memBindings) ThreadsOf(ctx context.Context, agentID string) ([]*Binding, error) {
	for id, hops := agentID, 0; id != "" && hops <= maxHelperHops; hops++ {
		latest := map[string]*Binding{}
		m.mu.Lock()
		for _, b := range m.bs {
			if b.AgentID == id && (latest[b.Platform] == nil || !b.CreatedAt.Before(latest[b.Platform].CreatedAt)) {
				latest[b.Platform] = b
			}
		}
		m.mu.Unlock()
		if len(latest) > 0 {
			return slices.Collect(maps.Values(latest)), nil
		}
		if m.agents == nil {
			return nil, nil
		}
		a, err := m.agents.Agent(ctx, id)
		if err != nil {
			return nil, nil
		}
		id = a.ParentID
	}
	return nil, nil
}

func (m *memBindings) Answer(_ context.Context, platform, channel, message string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.answered == nil {
		m.answered = map[*ChatMessage]bool{}
	}
	for _, c := range m.msgs {
		if c.Platform == platform && c.Channel == channel && c.Message == message && !m.answered[c] {
			m.answered[c] = true
			return true, nil
		}
	}
	return false, nil
}

func (m *memBindings) FirstDelivery(_ context.Context, platform, scope, key string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seen == nil {
		m.seen, m.order = map[string]map[string]bool{}, map[string][]string{}
	}
	at := platform + "\x00" + scope
	if m.seen[at] == nil {
		m.seen[at] = map[string]bool{}
	}
	if m.seen[at][key] {
		return false, nil
	}
	m.seen[at][key] = true
	m.order[at] = append(m.order[at], key)
	if len(m.order[at]) > DeliveriesKept {
		delete(m.seen[at], m.order[at][0])
		m.order[at] = m.order[at][1:]
	}
	return true, nil
}

// Bind replaces the thread's binding, as the store does.
func (m *memBindings) Bind(_ context.Context, b Binding) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, old := range m.bs {
		if old.Platform == b.Platform && old.Channel == b.Channel && old.Thread == b.Thread {
			m.bs[i] = &b
			return nil
		}
	}
	m.bs = append(m.bs, &b)
	return nil
}
func (m *memBindings) BindingByThread(_ context.Context, platform, channel, thread string) (*Binding, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, b := range m.bs {
		if b.Platform == platform && b.Channel == channel && b.Thread == thread {
			return b, nil
		}
	}
	return nil, nil
}
func (m *memBindings) Bindings(context.Context) ([]*Binding, error) { return m.bs, nil }
func (m *memBindings) SetMessage(_ context.Context, c ChatMessage) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.msgs[c.ProposalID+c.Platform+c.Kind] = &c
	return nil
}
func (m *memBindings) Message(_ context.Context, id, platform, kind string) (*ChatMessage, error) {
	m.mu.Lock()
	c, hook := m.msgs[id+platform+kind], m.onLookup
	m.mu.Unlock()
	if hook != nil {
		hook(id, c != nil)
	}
	return c, nil
}
func (m *memBindings) CloseMessage(_ context.Context, id, platform string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.msgs[id+platform+"proposal"]
	if c == nil || c.Closed {
		return false, nil
	}
	closed := *c
	closed.Closed = true
	m.msgs[id+platform+"proposal"] = &closed
	return true, nil
}
func (m *memBindings) OpenMessages(_ context.Context, agentID string) ([]*ChatMessage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var open []*ChatMessage
	for _, c := range m.msgs {
		if c.Kind == "proposal" && !c.Closed && c.Proposal != nil && c.Proposal.AgentID == agentID {
			open = append(open, c)
		}
	}
	return open, nil
}
func (m *memBindings) MessageAt(_ context.Context, platform, channel, message string) (*ChatMessage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.msgs {
		if c.Platform == platform && c.Channel == channel && c.Message == message {
			return c, nil
		}
	}
	return nil, nil
}

// helperService knows a parent, its helper and the helper's helper.
// helpersWaiting is boss (a-1) executing with two helpers each waiting on a write_file
// proposal, fetcher (a-2, p-2) and writer (a-3, p-3), and more agents after them.
func helpersWaiting(more ...api.Agent) *helperService {
	prop := func(id, agent string) *api.Proposal {
		return &api.Proposal{ID: id, AgentID: agent, Step: 1, Command: "write_file", Status: api.ProposalPending, Args: []byte(`{}`)}
	}
	return &helperService{agents: append([]api.Agent{
		{ID: "a-1", Name: "boss", State: api.StateExecuting},
		{ID: "a-2", Name: "boss/fetcher", ParentID: "a-1", State: api.StateAwaitingDecision, Pending: prop("p-2", "a-2")},
		{ID: "a-3", Name: "boss/writer", ParentID: "a-1", State: api.StateAwaitingDecision, Pending: prop("p-3", "a-3")},
	}, more...)}
}

type helperService struct {
	Service
	agents  []api.Agent
	decided []string
}

func (s *helperService) Agents(context.Context) ([]api.Agent, error) { return s.agents, nil }
func (s *helperService) Agent(_ context.Context, ref string) (*api.Agent, error) {
	for i := range s.agents {
		if s.agents[i].ID == ref || s.agents[i].Name == ref {
			return &s.agents[i], nil
		}
	}
	return nil, api.Errorf(api.ErrNotFound, "no agent %q", ref)
}
func (s *helperService) Decide(_ context.Context, ref string, req api.DecideRequest) (*api.Decision, error) {
	s.decided = append(s.decided, ref+" "+req.ProposalID+" "+string(req.Kind))
	return &api.Decision{ProposalID: req.ProposalID, Kind: req.Kind}, nil
}

func TestHelpersPostInTheirParentsThread(t *testing.T) {
	ctx := context.Background()
	pending := &api.Proposal{ID: "p-2", AgentID: "a-2", Step: 1, Command: "write_file", Status: api.ProposalPending, Args: []byte(`{}`)}
	svc := &helperService{agents: []api.Agent{
		{ID: "a-1", Name: "boss", State: api.StateExecuting},
		{ID: "a-2", Name: "boss/fetcher", ParentID: "a-1", State: api.StateAwaitingDecision, Pending: pending},
		{ID: "a-3", Name: "boss/fetcher/deep", ParentID: "a-2", State: api.StateThinking},
		{ID: "a-9", Name: "loner", State: api.StateThinking},
	}}
	r, ad := threadRelay(ctx, svc)

	// The helper's state event says who its parent is; the deeper helper is looked up.
	r.posts.handle(ctx, api.Event{Type: api.EventState, AgentID: "a-2", Agent: &svc.agents[1], Message: "created"})
	r.posts.handle(ctx, api.Event{Type: api.EventProposal, AgentID: "a-2", Proposal: pending})
	r.posts.handle(ctx, api.Event{Type: api.EventProposal, AgentID: "a-3", Proposal: &api.Proposal{ID: "p-3", AgentID: "a-3", Step: 1, Command: "read_file", Status: api.ProposalPending, Args: []byte(`{}`)}})
	r.posts.handle(ctx, api.Event{Type: api.EventProposal, AgentID: "a-9", Proposal: &api.Proposal{ID: "p-9", AgentID: "a-9", Step: 1, Command: "read_file", Status: api.ProposalPending, Args: []byte(`{}`)}})
	r.out.flush() // posts go through the outbox

	want := []string{
		"C1 T1 [boss/fetcher] Step 1: a-2 wants to run write_file",
		"C1 T1 [boss/fetcher/deep] Step 1: a-3 wants to run read_file",
	}
	if fmt.Sprint(ad.posts) != fmt.Sprint(want) {
		t.Fatalf("posts:\n%q\nwant\n%q", ad.posts, want)
	}
	if ad.first[0] != "🤖 boss/fetcher\n" {
		t.Errorf("label = %q", ad.first[0])
	}

	// "y" in the parent's thread decides the helper's proposal: the parent has none.
	r.OnMessage(ctx, Incoming{Platform: "slack", Where: Where{Channel: "C1", Thread: "T1"}, User: User{ID: "U1"}, Text: "y", ID: ad.stamp()})
	if fmt.Sprint(svc.decided) != "[a-2 p-2 approve]" {
		t.Fatalf("decisions = %q, want the helper's proposal approved", svc.decided)
	}
}

// TestRepliesReachTheHelperAtTheBottom: with several helpers waiting in one thread, a
// plain reply decides the proposal posted last; "NAME: …" picks a helper by name.
func TestRepliesReachTheHelperAtTheBottom(t *testing.T) {
	ctx := context.Background()
	svc := helpersWaiting(api.Agent{ID: "a-4", Name: "boss/idler", ParentID: "a-1", State: api.StateThinking})
	r, ad := threadRelay(ctx, svc)
	// writer's proposal is posted last; fetcher's seen again (a resync) keeps its place.
	r.posts.handle(ctx, api.Event{Type: api.EventProposal, AgentID: "a-2", Proposal: svc.agents[1].Pending})
	r.posts.handle(ctx, api.Event{Type: api.EventProposal, AgentID: "a-3", Proposal: svc.agents[2].Pending})
	r.posts.handle(ctx, api.Event{Type: api.EventProposal, AgentID: "a-2", Proposal: svc.agents[1].Pending})
	r.out.flush() // the replies below are written after the proposals are shown

	say := func(text string) {
		r.OnMessage(ctx, Incoming{Platform: "slack", Where: Where{Channel: "C1", Thread: "T1"}, User: User{ID: "U1"}, Text: text, ID: ad.stamp()})
	}
	tests := []struct{ text, want string }{
		{"y", "a-3 p-3 approve"},                         // writer's was posted last
		{"writer: y -3", "a-3 p-3 approve"},              // by key
		{"boss/writer: n", "a-3 p-3 deny"},               // by full name
		{"fetcher:   not that file", "a-2 p-2 feedback"}, // feedback by name
		{"note: try the mirror", "a-3 p-3 feedback"},     // not a helper's name: all of it is feedback
	}
	for _, tt := range tests {
		svc.decided = nil
		say(tt.text)
		if len(svc.decided) != 1 || svc.decided[0] != tt.want {
			t.Errorf("%q decided %q, want %q", tt.text, svc.decided, tt.want)
		}
	}

	// A named helper with nothing to decide gets a note; nothing is decided.
	svc.decided = nil
	say("idler: y")
	if len(svc.decided) != 0 {
		t.Fatalf("named idle helper: decided %q", svc.decided)
	}
	// The note goes out through the outbox's goroutine: read the posts under the lock.
	testutil.Eventually(t, 5*time.Second, "the note to the idle helper", func() bool {
		ad.mu.Lock()
		defer ad.mu.Unlock()
		return len(ad.posts) > 0 && strings.Contains(ad.posts[len(ad.posts)-1], "Helper boss/idler has nothing waiting for you: it is thinking")
	})
}

// showWaiting posts what a waits for (its proposal, or its question) in its thread, as
// the relay does on its event, before a reply is written.
func showWaiting(ctx context.Context, r *Relay, a api.Agent) {
	if a.Pending != nil {
		r.posts.handle(ctx, api.Event{Type: api.EventProposal, AgentID: a.ID, Proposal: a.Pending})
	} else if a.Question != nil {
		r.posts.handle(ctx, api.Event{Type: api.EventQuestion, AgentID: a.ID, Question: a.Question})
	}
	r.out.flush()
}

// threadRelay is a relay over svc with a fake adapter serving channel C1 (approver U1),
// its thread T1 bound to agent a-1.
func threadRelay(ctx context.Context, svc Service) (*Relay, *fakeAdapter) {
	binds := &memBindings{msgs: map[string]*ChatMessage{},
		bs: []*Binding{{Platform: "slack", Channel: "C1", Thread: "T1", AgentID: "a-1"}}, agents: svc}
	r := New(Options{Service: svc, Bindings: binds})
	ad := &fakeAdapter{}
	r.Add(ad, Rules{Channels: map[string]Access{"C1": {}}, Approvers: Access{Users: []string{"U1"}}})
	return r, ad
}

func (b *memBindings) BindTeam(_ context.Context, t TeamBinding) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.teams = append(slices.DeleteFunc(b.teams, func(o *TeamBinding) bool {
		return o.TeamRunID == t.TeamRunID && o.Platform == t.Platform
	}), &t)
	return nil
}
func (b *memBindings) TeamBindingByThread(_ context.Context, platform, channel, thread string) (*TeamBinding, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, t := range b.teams {
		if t.Platform == platform && t.Channel == channel && t.Thread == thread {
			return t, nil
		}
	}
	return nil, nil
}
func (b *memBindings) TeamBindings(context.Context) ([]*TeamBinding, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.teams), nil
}
func (b *memBindings) TeamBindingsOf(_ context.Context, teamID string) ([]*TeamBinding, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []*TeamBinding
	for _, t := range b.teams {
		if t.TeamRunID == teamID {
			c := *t
			out = append(out, &c)
		}
	}
	return out, nil
}
func (b *memBindings) SetTeamSeq(context.Context, string, string, int) error { return nil }
