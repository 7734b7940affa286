package web

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/agent"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/schedule"
	"github.com/agentd/agentd/daemon/schedule/wake"
	"github.com/agentd/agentd/internal/agenttest"
	"github.com/agentd/agentd/internal/ollamatest"
	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/memory"
)

// env is a real supervisor and schedule manager over a store in a temp dir, driven by
// the in-process fake Ollama, with a console listening on 127.0.0.1.
type env struct {
	t     testing.TB
	model *ollamatest.Fake
	sup   *agent.Supervisor
	mgr   *schedule.Manager
	con   *Console
	base  string
	logs  *testutil.SyncBuffer

	agent ollamatest.Agent // profiles, then the script, then finish
}

// service is what the daemon hands the console: the supervisor's parts and the schedules.
type service struct {
	agenttest.API
	*schedule.Manager
}

func (service) Teams(context.Context) ([]api.TeamRun, error) { return nil, nil }

func newEnv(t testing.TB) *env {
	e := &env{t: t, model: ollamatest.NewFake(t), logs: &testutil.SyncBuffer{}}
	e.model.OnChat(e.agent.Chat)
	dir := t.TempDir()
	st := agenttest.OpenStore(t, dir)
	log := slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ix, err := memory.Open(filepath.Join(dir, "memory"), memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sopt := agenttest.Options(t, st, dir, e.model.URL(), ollamatest.TinyModelName, "write_file", "read_file", "ask_user", "finish")
	sopt.Log, sopt.Memory = log, agent.MemoryOf(config.Default().Memory, ix)
	e.sup, err = agent.New(sopt)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := e.sup.Start(ctx); err != nil {
		t.Fatal(err)
	}
	eng, err := wake.New(wake.Options{Store: st, Dir: filepath.Join(dir, "wake")})
	if err != nil {
		t.Fatal(err)
	}
	e.mgr = schedule.New(schedule.Options{Store: st, Agents: agenttest.Of(e.sup), Log: log, Local: time.UTC, Wake: schedule.Wake{Engine: eng}})
	if err := e.mgr.Start(ctx); err != nil {
		t.Fatal(err)
	}
	e.con, err = New(Options{Service: service{agenttest.Of(e.sup), e.mgr}, Log: log, User: "tester", CheckWhen: schedule.CheckWhenForm})
	if err != nil {
		t.Fatal(err)
	}
	if e.base, err = e.con.Listen(ctx, "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		e.con.Close(sctx)
		e.mgr.Stop()
		e.mgr.Close()
		cancel()
		e.sup.Wait()
		ix.Close()
	})
	return e
}

// script queues the model's next replies.
func (e *env) script(replies ...string) { e.agent.Script(replies...) }

// reply is a model reply proposing name(args); thoughts, when set, replaces every
// thought field's text.
func reply(name string, args any, thought *string) string {
	th := api.Thoughts{Observations: "o", Text: "t", Reasoning: "because", SelfCriticism: "s",
		Plan: "- do " + name, Speak: "I will " + name}
	if thought != nil {
		th = api.Thoughts{Observations: *thought, Text: *thought, Reasoning: *thought, SelfCriticism: *thought, Plan: *thought, Speak: *thought}
	}
	return ollamatest.ReplyThinking(name, args, th)
}

// create makes an agent with goals and starts its run.
func (e *env) create(name string) *api.Agent {
	e.t.Helper()
	a, err := e.sup.API().Runs.CreateAgent(context.Background(), api.CreateAgentRequest{Name: name, Description: "test agent",
		Goals: []string{"write files"}})
	if err != nil {
		e.t.Fatal(err)
	}
	return a
}

// waitState waits until the agent is in state.
func (e *env) waitState(id string, state api.AgentState) *api.Agent {
	e.t.Helper()
	var a *api.Agent
	if !testutil.Wait(10*time.Second, func() bool {
		var err error
		a, err = e.sup.API().Views.Agent(context.Background(), id)
		return err == nil && a.State == state
	}) {
		e.t.Fatalf("agent %s never reached %s (last %+v)\nlogs:\n%s", id, state, a, e.logs.String())
	}
	return a
}

// browser is a net/http client with a cookie jar, like a browser without script.
type browser struct {
	t    testing.TB
	base string
	hc   *http.Client
}

func (e *env) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: e.t, base: strings.TrimSuffix(e.base, "/"), hc: &http.Client{Jar: jar}}
}

// login spends a fresh login URL.
func (b *browser) login(e *env) {
	b.t.Helper()
	u, err := e.con.LoginURL()
	if err != nil {
		b.t.Fatal(err)
	}
	if resp := b.get(u); resp.StatusCode != 200 {
		b.t.Fatalf("login: %d", resp.StatusCode)
	}
}

// loggedIn is a browser with a session: what most console tests start from.
func (e *env) loggedIn() *browser {
	b := e.browser()
	b.login(e)
	return b
}

type got struct {
	StatusCode int
	Header     http.Header
	Body       string
}

func (b *browser) do(req *http.Request) got {
	b.t.Helper()
	resp, err := b.hc.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return got{resp.StatusCode, resp.Header, string(body)}
}

func (b *browser) get(u string) got {
	if strings.HasPrefix(u, "/") {
		u = b.base + u
	}
	req, _ := http.NewRequest("GET", u, nil)
	return b.do(req)
}

func (b *browser) post(path string, form url.Values, hdr ...string) got {
	req, _ := http.NewRequest("POST", b.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return b.do(req)
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// csrf reads the CSRF token off a page.
func (b *browser) csrf() string {
	b.t.Helper()
	m := csrfRE.FindStringSubmatch(b.get("/").Body)
	if m == nil {
		b.t.Fatal("no CSRF token on the agents page")
	}
	return m[1]
}

func must(t testing.TB, ok bool, format string, args ...any) {
	t.Helper()
	if !ok {
		t.Fatalf(format, args...)
	}
}
