package localapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/internal/apitest"
	"github.com/agentd/agentd/internal/testutil"
)

// tempSocket returns a socket path short enough for sun_path, in a fresh directory.
func tempSocket(t *testing.T) string { return filepath.Join(testutil.ShortTempDir(t), "s") }

// fakeTable is apitest.Fake's route table, as the tests serve it.
type fakeTable interface {
	Endpoints() []api.Endpoint
	Streams() []api.StreamRoute
}

// serve starts the API over f on a temp socket and returns its path and the log.
func serve(t *testing.T, f fakeTable) (string, *testutil.SyncBuffer) {
	t.Helper()
	sock := tempSocket(t)
	ln, err := Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	logs := &testutil.SyncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv := &http.Server{Handler: newHandler(nil, f.Endpoints(), f.Streams(), log)}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return sock, logs
}

func jsonText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// routeCase calls one route through the Client against a fresh fake.
type routeCase struct {
	name    string
	call    func(ctx context.Context, c *api.Client) (any, error)
	want    any    // compared as JSON
	wantErr error  // a client sentinel, or errAny for a 500
	errText string // the error's text, when wantErr is set
}

// routeCases covers every route with a success and the errors it can return.
func routeCases() []routeCase {
	seeded := newFake()
	writer := *seeded.agents["a1"]
	return []routeCase{
		{name: "status", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.StatusRoute.Do(ctx, c, "", api.None{})
		},
			want: &api.Status{Version: "test", PID: 1, Started: t0, StateDir: "/s", Agents: map[string]int{"awaiting_decision": 1}}},
		{name: "reload", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.ReloadRoute.Do(ctx, c, "", api.None{})
		},
			want: &api.ReloadResult{Config: "/etc/agentd/agentd.toml", Applied: []string{"ollama.model"}, NeedsRestart: []string{}}},
		{name: "agents", call: func(ctx context.Context, c *api.Client) (any, error) { return apitest.Agents(ctx, c) },
			want: []api.Agent{writer}},
		{name: "create_agent", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.CreateAgentRoute.Do(ctx, c, "", api.CreateAgentRequest{Name: "reader", Task: "read", Policy: &api.Policy{Mode: "auto", AutoSteps: 2}})
		}, want: &api.Agent{ID: "a2", Name: "reader", Task: "read", State: api.StateThinking,
			Policy: api.Policy{Mode: "auto", AutoSteps: 2}, CreatedAt: t0, UpdatedAt: t0}},
		{name: "create_agent_duplicate_name_conflict", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.CreateAgentRoute.Do(ctx, c, "", api.CreateAgentRequest{Name: "writer", Task: "x"})
		}, wantErr: api.ErrConflict, errText: `an agent named "writer" exists: conflict`},
		{name: "create_agent_empty_bad_request", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.CreateAgentRoute.Do(ctx, c, "", api.CreateAgentRequest{})
		}, wantErr: api.ErrBadRequest, errText: "give a task or a name: bad request"},
		{name: "agent_by_name", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.AgentRoute.Do(ctx, c, "writer", api.None{})
		},
			want: &writer},
		{name: "agent_by_id", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.AgentRoute.Do(ctx, c, "a1", api.None{})
		},
			want: &writer},
		{name: "agent_unknown_not_found", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.AgentRoute.Do(ctx, c, "nobody", api.None{})
		},
			wantErr: api.ErrNotFound, errText: `no agent "nobody": not found`},
		{name: "agent_ref_is_unescaped", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.AgentRoute.Do(ctx, c, "a b/c?d", api.None{})
		},
			wantErr: api.ErrNotFound, errText: `no agent "a b/c?d": not found`},
		{name: "service_failure_is_500", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.AgentRoute.Do(ctx, c, "boom", api.None{})
		},
			wantErr: errAny, errText: "database is on fire"},
		{name: "delete_agent", call: func(ctx context.Context, c *api.Client) (any, error) {
			return nil, api.DeleteAgentRoute.Send(ctx, c, "writer", api.None{})
		}},
		{name: "delete_unknown_not_found", call: func(ctx context.Context, c *api.Client) (any, error) {
			return nil, api.DeleteAgentRoute.Send(ctx, c, "x", api.None{})
		},
			wantErr: api.ErrNotFound, errText: `no agent "x": not found`},
		{name: "decide_approve", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.DecideRoute.Do(ctx, c, "writer", api.DecideRequest{ProposalID: "p1", Kind: api.DecisionApprove, Count: 3, By: "ann", Source: "agentctl"})
		}, want: &api.Decision{ProposalID: "p1", Kind: api.DecisionApprove, Count: 3, By: "ann", Source: "agentctl", At: t0}},
		{name: "decide_superseded_conflict", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.DecideRoute.Do(ctx, c, "writer", api.DecideRequest{ProposalID: "p0", Kind: api.DecisionDeny})
		}, wantErr: api.ErrConflict, errText: "proposal p0 was already decided: conflict"},
		{name: "decide_not_approver_forbidden", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.DecideRoute.Do(ctx, c, "writer", api.DecideRequest{ProposalID: "p1", Kind: api.DecisionApprove, By: "mallory"})
		}, wantErr: api.ErrForbidden, errText: "mallory is not an approver: forbidden"},
		{name: "answer", call: func(ctx context.Context, c *api.Client) (any, error) {
			return nil, api.AnswerRoute.Send(ctx, c, "writer", api.AnswerRequest{Text: "a.txt", By: "ann"})
		}},
		{name: "task_not_idle_conflict", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.TaskRoute.Do(ctx, c, "writer", api.TaskRequest{Task: "more"})
		},
			wantErr: api.ErrConflict, errText: "agent writer is awaiting_decision, not idle: conflict"},
		{name: "task_empty_bad_request", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.TaskRoute.Do(ctx, c, "writer", api.TaskRequest{Task: ""})
		},
			wantErr: api.ErrBadRequest, errText: "empty task: bad request"},
		{name: "pause", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.PauseRoute.Do(ctx, c, "writer", api.None{})
		},
			want: withState(writer, api.StatePaused)},
		{name: "resume", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.ResumeRoute.Do(ctx, c, "a1", api.None{})
		},
			want: withState(writer, api.StateThinking)},
		{name: "stop", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.StopRoute.Do(ctx, c, "writer", api.None{})
		},
			want: withState(writer, api.StateIdle)},
		{name: "stop_unknown_not_found", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.StopRoute.Do(ctx, c, "x", api.None{})
		},
			wantErr: api.ErrNotFound, errText: `no agent "x": not found`},
		{name: "history", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.HistoryRoute.Do(ctx, c, "writer", api.None{})
		},
			want: seeded.history["a1"]},
		{name: "proposals", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.ProposalsRoute.Do(ctx, c, "writer", api.None{})
		},
			want: seeded.proposals["a1"]},
		{name: "policy_test", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.TestPolicyRoute.Do(ctx, c, "writer", api.PolicyTestRequest{Command: "execute_shell", Subject: "git status"})
		}, want: &api.PolicyTest{AgentID: "a1", Command: "execute_shell", Subject: "git status", Effect: "ask",
			Reason: "asking: no allow pattern matches"}},
		{name: "policy_test_unknown_agent", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.TestPolicyRoute.Do(ctx, c, "nobody", api.PolicyTestRequest{Command: "execute_shell", Subject: "ls"})
		}, wantErr: api.ErrNotFound, errText: `no agent "nobody": not found`},
		{name: "memory_add", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.AddMemoryRoute.Do(ctx, c, "", api.MemoryAddRequest{Agent: "writer", Text: "the key is in vault", Source: "ann"})
		}, want: &api.Memory{ID: "m1", AgentID: "a1", Agent: "writer", Kind: "note", Text: "the key is in vault", Source: "ann", CreatedAt: t0}},
		{name: "memory_add_bad_kind", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.AddMemoryRoute.Do(ctx, c, "", api.MemoryAddRequest{Kind: "gossip", Text: "x"})
		}, wantErr: api.ErrBadRequest, errText: `memory kind "gossip": use one of episode, result, feedback, note, chat, file`},
		{name: "memory_add_unknown_agent", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.AddMemoryRoute.Do(ctx, c, "", api.MemoryAddRequest{Agent: "nobody", Text: "x"})
		}, wantErr: api.ErrNotFound, errText: `no agent "nobody": not found`},
		{name: "memory_list_empty", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.MemoriesRoute.Do(ctx, c, "", api.MemoryListRequest{Agent: "writer", Kind: "note", Limit: 5})
		}, want: []api.Memory{}},
		{name: "memory_search_empty_query", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.SearchMemoryRoute.Do(ctx, c, "", api.MemorySearchRequest{Query: " "})
		}, wantErr: api.ErrBadRequest, errText: "empty query: give the words to search for"},
		{name: "memory_rm_unknown", call: func(ctx context.Context, c *api.Client) (any, error) {
			return nil, api.DeleteMemoryRoute.Send(ctx, c, "m/9", api.None{})
		},
			wantErr: api.ErrNotFound, errText: `no memory "m/9": see agentctl memory ls`},
		{name: "memory_stats", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.MemoryStatsRoute.Do(ctx, c, "", api.None{})
		},
			want: &api.MemoryStats{Generation: "gen-000001"}},
		{name: "memory_reindex", call: func(ctx context.Context, c *api.Client) (any, error) {
			return api.ReindexMemoryRoute.Do(ctx, c, "", api.None{})
		},
			want: &api.MemoryStats{Generation: "gen-000001"}},
	}
}

// TestTaskRunCarriesBudget: a task request's budget reaches the service whole.
func TestTaskRunCarriesBudget(t *testing.T) {
	sock, _ := serve(t, newFake())
	c := &api.Client{Socket: sock}
	ctx := t.Context()
	if _, err := api.StopRoute.Do(ctx, c, "writer", api.None{}); err != nil {
		t.Fatal(err)
	}
	want := api.Budget{MaxSteps: 3, MaxTokens: 9000, MaxTime: "15m"}
	a, err := api.TaskRoute.Do(ctx, c, "writer", api.TaskRequest{Task: "more", Budget: &want})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Runs) == 0 || a.Runs[0].Budget == nil || *a.Runs[0].Budget != want {
		t.Errorf("runs = %+v, want the new run with budget %+v", a.Runs, want)
	}
}

// TestMemoryRoundTrip adds, finds, lists and removes a memory through the api.
func TestMemoryRoundTrip(t *testing.T) {
	sock, _ := serve(t, newFake())
	c := &api.Client{Socket: sock}
	ctx := t.Context()
	m, err := api.AddMemoryRoute.Do(ctx, c, "", api.MemoryAddRequest{Agent: "writer", Kind: "feedback", Text: "use tabs, not spaces"})
	if err != nil {
		t.Fatal(err)
	}
	hits, err := api.SearchMemoryRoute.Do(ctx, c, "", api.MemorySearchRequest{Agent: "writer", Query: "tabs"})
	if err != nil || len(hits) != 1 || hits[0].ID != m.ID || hits[0].Score == 0 {
		t.Fatalf("search = %+v, %v; want the memory with a score", hits, err)
	}
	if err := api.DeleteMemoryRoute.Send(ctx, c, m.ID, api.None{}); err != nil {
		t.Fatal(err)
	}
	list, err := api.MemoriesRoute.Do(ctx, c, "", api.MemoryListRequest{})
	if err != nil || len(list) != 0 {
		t.Fatalf("list after rm = %+v, %v", list, err)
	}
}

func TestMemoryListBadLimit(t *testing.T) {
	sock, _ := serve(t, newFake())
	status, _, body := rawDo(t, sock, "GET", "/v0/memories?limit=ten", nil, "")
	if status != http.StatusBadRequest || !strings.Contains(body, `limit \"ten\": want a whole number`) {
		t.Errorf("GET /v0/memories?limit=ten = %d %s", status, body)
	}
	status, _, body = rawDo(t, sock, "POST", "/v0/memory/search", nil, `{"query":"x","top":3}`)
	if status != http.StatusBadRequest || !strings.Contains(body, `unknown field \"top\"`) {
		t.Errorf("search with an unknown field = %d %s", status, body)
	}
}

func TestRoutesThroughClient(t *testing.T) { runRouteCases(t, routeCases()) }

// runRouteCases calls each case through a Client on a fresh fake service and checks its
// answer or its error.
func runRouteCases(t *testing.T, cases []routeCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			sock, _ := serve(t, newFake())
			c := &api.Client{Socket: sock}
			got, err := tt.call(t.Context(), c)
			if tt.wantErr != nil {
				checkAPIError(t, err, tt.wantErr, tt.errText)
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if tt.want != nil && jsonText(t, got) != jsonText(t, tt.want) {
				t.Errorf("got  %s\nwant %s", jsonText(t, got), jsonText(t, tt.want))
			}
		})
	}
}

// errAny stands for an error that matches no sentinel: a 500.
var errAny = errors.New("internal")

func checkAPIError(t *testing.T, err, want error, text string) {
	t.Helper()
	var ae *api.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("error = %v (%T), want *api.APIError", err, err)
	}
	if want == errAny {
		if ae.Status != http.StatusInternalServerError {
			t.Errorf("status = %d, want 500", ae.Status)
		}
	} else if !errors.Is(err, want) {
		t.Errorf("error %q (status %d) is not %v", err, ae.Status, want)
	}
	if ae.Message != text {
		t.Errorf("message = %q, want %q", ae.Message, text)
	}
}

func withState(a api.Agent, s api.AgentState) *api.Agent {
	a.State = s
	return &a
}

func TestEmptyListsAreArrays(t *testing.T) {
	f := newFake()
	f.agents, f.order, f.history = map[string]*api.Agent{"a1": f.agents["a1"]}, []string{}, map[string][]api.Episode{}
	sock, _ := serve(t, f)
	for _, path := range []string{"/v0/agents", "/v0/agents/a1/history"} {
		status, _, body := rawDo(t, sock, "GET", path, nil, "")
		if status != http.StatusOK || strings.TrimSpace(body) != "[]" {
			t.Errorf("GET %s = %d %q, want 200 []", path, status, body)
		}
	}
}

func TestRequestLogHasNoBody(t *testing.T) {
	sock, logs := serve(t, newFake())
	c := &api.Client{Socket: sock}
	_, err := api.DecideRoute.Do(t.Context(), c, "writer", api.DecideRequest{ProposalID: "p1", Kind: api.DecisionFeedback, Feedback: "secret-feedback-text"})
	if err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	for _, want := range []string{"api request", "method=POST", "path=/v0/agents/writer/decision", "status=200", "duration="} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "secret-feedback-text") {
		t.Errorf("log holds the request body:\n%s", out)
	}
}

// rawDo sends one request over the socket, bypassing Client, and returns the status, the
// headers and the body.
func rawDo(t *testing.T, sock, method, path string, header map[string]string, body string) (int, http.Header, string) {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
	}}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequestWithContext(t.Context(), method, "http://local"+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp.StatusCode, resp.Header, b.String()
}

// The fake's import and export, like the daemon's: a batch is checked whole and stored
// all or none; export pages in id order.

func (f *fakeService) importMemoryRoute(ctx context.Context, _ string, req api.MemoryImportRequest) (*api.MemoryImportResult, error) {
	if len(req.Records) == 0 {
		return nil, api.Errorf(api.ErrBadRequest, "no records to import: give one JSON object a line")
	}
	var add []api.Memory
	for i, r := range req.Records {
		if err := r.Check(); err != nil {
			return nil, api.Errorf(api.ErrBadRequest, "line %d: %v", i+1, err)
		}
		m := api.Memory{ID: r.ID, Kind: r.MemoryKind(), Text: r.Text, Source: r.From(), Tags: r.Tags, CreatedAt: t0}
		if ref := r.Agent; ref != "" || req.Agent != "" {
			if ref == "" {
				ref = req.Agent
			}
			f.mu.Lock()
			a, err := f.resolve(ref)
			f.mu.Unlock()
			if err != nil {
				return nil, api.Errorf(api.ErrBadRequest, "line %d: field \"agent\": no agent %q", i+1, ref)
			}
			m.AgentID, m.Agent = a.ID, a.Name
		}
		add = append(add, m)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.memories = append(f.memories, add...)
	return &api.MemoryImportResult{Imported: len(add)}, nil
}

func (f *fakeService) exportMemoryRoute(ctx context.Context, _ string, req api.MemoryExportRequest) (*api.MemoryExportPage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if req.Limit <= 0 {
		req.Limit = 1000
	}
	page := &api.MemoryExportPage{Records: []api.MemoryRecord{}}
	for _, m := range f.memories { // ids are imported in order in these tests
		if m.ID <= req.After || (req.Agent != "" && m.Agent != req.Agent) {
			continue
		}
		if len(page.Records) == req.Limit {
			break
		}
		page.Records = append(page.Records, api.MemoryRecord{ID: m.ID, Agent: m.Agent, Kind: m.Kind, Text: m.Text, Source: m.Source, Tags: m.Tags})
	}
	if len(page.Records) == req.Limit {
		page.Next = page.Records[len(page.Records)-1].ID
	}
	return page, nil
}

// Import and export travel through the route table: the batch in the body, the export's
// agent, cursor and page size in the query string.
func TestMemoryImportExportRoutes(t *testing.T) {
	sock, _ := serve(t, newFake())
	c := &api.Client{Socket: sock}
	ctx := t.Context()
	recs := []api.MemoryRecord{
		{ID: "m-a", Text: "one", Speaker: "Ann", Tags: []string{"x"}},
		{ID: "m-b", Text: "two", Agent: "writer"},
		{ID: "m-c", Text: "three", Source: "notes"},
	}
	res, err := api.ImportMemoryRoute.Do(ctx, c, "", api.MemoryImportRequest{Agent: "writer", Records: recs, Lines: []int{1, 2, 4}})
	if err != nil || res.Imported != 3 {
		t.Fatalf("import = %+v, %v", res, err)
	}
	_, err = api.ImportMemoryRoute.Do(ctx, c, "", api.MemoryImportRequest{Records: []api.MemoryRecord{{Text: "ok"}, {Text: "x", Time: "May"}}})
	if err == nil || !strings.Contains(err.Error(), `line 2: field "time"`) {
		t.Errorf("bad batch: %v, want the line and field named", err)
	}
	page, err := api.ExportMemoryRoute.Do(ctx, c, "", api.MemoryExportRequest{Agent: "writer", Limit: 2})
	if err != nil || len(page.Records) != 2 || page.Next != "m-b" {
		t.Fatalf("first page = %+v, %v", page, err)
	}
	page, err = api.ExportMemoryRoute.Do(ctx, c, "", api.MemoryExportRequest{Agent: "writer", After: page.Next, Limit: 2})
	want := []api.MemoryRecord{{ID: "m-c", Agent: "writer", Kind: "note", Text: "three", Source: "notes"}}
	if err != nil || !reflect.DeepEqual(page.Records, want) || page.Next != "" {
		t.Fatalf("last page = %+v, %v; want %+v", page, err, want)
	}
	status, _, body := rawDo(t, sock, "GET", "/v0/memory/export?limit=many", nil, "")
	if status != http.StatusBadRequest || !strings.Contains(body, `limit \"many\": want a whole number`) {
		t.Errorf("GET /v0/memory/export?limit=many = %d %s", status, body)
	}
	status, _, body = rawDo(t, sock, "POST", "/v0/memory/import", nil, `{"records":[{"text":"x","txt":"y"}]}`)
	if status != http.StatusBadRequest || !strings.Contains(body, `unknown field \"txt\"`) {
		t.Errorf("import with an unknown field = %d %s", status, body)
	}
}

// TestEveryRouteServed sends each route of the wire package's table to a fake with no
// funcs set: the handler must reach the fake (500 naming the route), never 404 or 405.
func TestEveryRouteServed(t *testing.T) {
	fk := &apitest.Fake{}
	h := newHandler(nil, fk.Endpoints(), fk.Streams(), nil)
	patterns := map[string]bool{}
	for _, ep := range api.Endpoints() {
		patterns[ep.Pattern()] = true
	}
	for _, st := range api.Streams() {
		patterns["GET "+st.Path] = true
	}
	for p := range patterns {
		method, path, _ := strings.Cut(p, " ")
		path = strings.NewReplacer("{agent}", "writer", "{run}", "r1", "{schedule}", "s1", "{team}", "t1", "{id}", "m1").Replace(path)
		t.Run(strings.ReplaceAll(p, "/", "_"), func(t *testing.T) {
			body := strings.NewReader("{}")
			r, _ := http.NewRequest(method, "http://local"+path, body)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != http.StatusInternalServerError || !strings.Contains(w.Body.String(), "not set in this fake") {
				t.Errorf("%s %s = %d %s, want 500 from the fake", method, path, w.Code, w.Body.String())
			}
		})
	}
	if len(patterns) < 47 {
		t.Errorf("the table has %d routes, want the 47 the API served before plus new ones", len(patterns))
	}
}

// wait fails the test if ch does not deliver within a few seconds.
func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func TestEventStream(t *testing.T) {
	tests := []struct {
		name     string
		agent    string
		since    int64
		publish  []api.Event
		wantSeqs []int64
	}{
		{"agent_replays_after_since_then_live", "writer", 1,
			[]api.Event{{Seq: 4, Type: api.EventProposal, AgentID: "a1"}}, []int64{2, 3, 4}},
		{"agent_since_zero_is_live_only", "writer", 0,
			[]api.Event{{Seq: 4, Type: api.EventState, AgentID: "a1"}}, []int64{4}},
		{"agent_skips_other_agents", "a1", 0,
			[]api.Event{{Seq: 4, AgentID: "a2"}, {Seq: 5, AgentID: "a1"}}, []int64{5}},
		{"all_agents", "", 2,
			[]api.Event{{Seq: 4, AgentID: "a2"}, {Seq: 5, AgentID: "a1"}}, []int64{3, 4, 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake()
			sock, _ := serve(t, f)
			c := &api.Client{Socket: sock}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			got := make(chan api.Event, 16)
			done := make(chan error, 1)
			go func() {
				done <- c.EventsOpened(ctx, tt.agent, tt.since, nil, func(ev api.Event) error { got <- ev; return nil })
			}()
			wait(t, f.subscribed, "the subscription")
			for _, ev := range tt.publish {
				f.publish(ev)
			}
			for _, want := range tt.wantSeqs {
				select {
				case ev := <-got:
					if ev.Seq != want {
						t.Fatalf("got event seq %d, want %d", ev.Seq, want)
					}
				case <-time.After(5 * time.Second):
					t.Fatalf("timed out waiting for event %d", want)
				}
			}
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Errorf("Events returned %v, want context.Canceled", err)
			}
			wait(t, f.unsubscribed, "the handler to unsubscribe after the client left")
		})
	}
}

func TestEventStreamEndsWhenChannelCloses(t *testing.T) {
	f := newFake()
	sock, _ := serve(t, f)
	c := &api.Client{Socket: sock}
	done := make(chan error, 1)
	go func() {
		done <- c.EventsOpened(t.Context(), "", 0, nil, func(api.Event) error { return nil })
	}()
	wait(t, f.subscribed, "the subscription")
	f.closeAll()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Events returned %v, want nil at the end of the stream", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("stream did not end when the service closed the channel")
	}
}

func TestEventStreamIsNDJSON(t *testing.T) {
	f := newFake()
	sock, _ := serve(t, f)
	go func() {
		select { // not wait: t.Fatal belongs to the test's own goroutine
		case <-f.subscribed:
		case <-time.After(5 * time.Second):
		}
		f.closeAll()
	}()
	status, hdr, body := rawDo(t, sock, "GET", "/v0/agents/writer/events?since=2", nil, "")
	if status != http.StatusOK {
		t.Fatalf("status = %d", status)
	}
	if ct := hdr.Get("Content-Type"); ct != "application/x-ndjson" {
		t.Errorf("Content-Type = %q, want application/x-ndjson", ct)
	}
	want := `{"seq":3,"type":"state","agent_id":"a1","time":"2026-11-21T09:00:00Z"}` + "\n"
	if body != want {
		t.Errorf("body = %q, want %q", body, want)
	}
	if strings.Count(body, "\n") != 1 {
		t.Errorf("want one line per event")
	}
}
