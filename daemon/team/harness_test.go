package team

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	ollama "github.com/ollama/ollama/api"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/daemon/agent"
	"github.com/agentd/agentd/daemon/run"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/agenttest"
	"github.com/agentd/agentd/internal/ollamatest"
	"github.com/agentd/agentd/internal/testutil"
)

// env is a team engine over the real supervisor and store, against the fake Ollama,
// whose replies come from per-speaker queues (see reply).
type env struct {
	t    *testing.T
	dir  string
	fake *ollamatest.Fake
	st   *store.Store

	mu      sync.Mutex
	queues  map[string][]string // by speaker: a role name, "choose", "reflect", "agent"
	choices []*ollama.ChatRequest

	sup    *agent.Supervisor
	eng    *Engine
	cancel context.CancelFunc
	// wrap, if set before start, is what the engine gets instead of the supervisor.
	wrap func(*agent.Supervisor) Agents
	// keep keeps the role agents of the runs run starts after they end.
	keep bool
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), fake: ollamatest.NewFake(t), queues: map[string][]string{}}
	e.st = agenttest.OpenStore(t, e.dir)
	e.fake.OnChat(e.reply)
	e.start()
	t.Cleanup(e.stop)
	return e
}

// The supervisor the daemon passes is the engine's Agents.
var _ Agents = agenttest.API{}

// start starts a supervisor and an engine on the store, as the daemon does.
func (e *env) start() {
	e.t.Helper()
	var eng *Engine
	sopt := agenttest.Options(e.t, e.st, e.dir, e.fake.URL(), ollamatest.TinyModelName, "read_file", "write_file", "ask_user", "finish")
	sopt.OnRunEnd = func(end run.End) { eng.RunEnded(end) }
	sup, err := agent.New(sopt)
	if err != nil {
		e.t.Fatal(err)
	}
	var agents Agents = agenttest.Of(sup)
	if e.wrap != nil {
		agents = e.wrap(sup)
	}
	eng, err = New(Options{Store: e.st, LLM: sopt.LLM, Settings: sup.ModelSettings, Agents: agents,
		Backoff: func(int) time.Duration { return 10 * time.Millisecond }, ModelAttempts: 3})
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := sup.Start(ctx); err != nil {
		e.t.Fatal(err)
	}
	if err := eng.Start(ctx); err != nil {
		e.t.Fatal(err)
	}
	e.sup, e.eng, e.cancel = sup, eng, cancel
}

// stop stops them as a daemon shutdown does.
func (e *env) stop() {
	if e.cancel != nil {
		e.cancel()
		e.eng.Wait()
		e.sup.Wait()
		e.cancel = nil
	}
}

// say queues replies of a speaker.
func (e *env) say(speaker string, replies ...string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.queues[speaker] = append(e.queues[speaker], replies...)
}

var youAreRE = regexp.MustCompile(`^You are ([a-z0-9_]+),`)

// reply answers a chat request from the queue of whoever is asked: the role named in a
// chat turn's system prompt, "agent" for a role agent's proposal, "choose" or "reflect".
func (e *env) reply(req *ollama.ChatRequest) (string, error) {
	speaker := ""
	format := string(req.Format)
	switch {
	case strings.Contains(format, `"thoughts"`):
		speaker = "agent"
	case strings.Contains(format, `"plan"`):
		speaker = "planner"
	case strings.Contains(format, `"next"`):
		speaker = "choose"
	case strings.Contains(format, `"conclusion"`):
		speaker = "reflect"
	case len(req.Messages) > 0 && req.Messages[0].Role == "system":
		if m := youAreRE.FindStringSubmatch(req.Messages[0].Content); m != nil {
			speaker = m[1]
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if speaker == "choose" {
		r := *req
		e.choices = append(e.choices, &r)
	}
	q := e.queues[speaker]
	if len(q) == 0 {
		return "", fmt.Errorf("test: nothing queued for %q", speaker)
	}
	e.queues[speaker] = q[1:]
	return q[0], nil
}

// left reports the replies not used.
func (e *env) left() map[string][]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string][]string{}
	for k, v := range e.queues {
		if len(v) > 0 {
			out[k] = v
		}
	}
	return out
}

// run starts a team run of the workflow file (testdata/NAME or a literal source).
func (e *env) run(src, task string) *api.TeamRun {
	e.t.Helper()
	if !strings.Contains(src, "\n") {
		b, err := os.ReadFile(filepath.Join("testdata", src))
		if err != nil {
			e.t.Fatal(err)
		}
		src = string(b)
	}
	r, err := e.eng.StartTeam(context.Background(), api.TeamRunRequest{Workflow: src, File: "test.toml", Task: task, KeepAgents: e.keep})
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

// until waits for the team run to satisfy ok and returns it.
func (e *env) until(id string, what string, ok func(*api.TeamRun) bool) *api.TeamRun {
	e.t.Helper()
	var r *api.TeamRun
	if !testutil.Wait(10*time.Second, func() bool {
		var err error
		if r, err = e.eng.Team(context.Background(), id); err != nil {
			e.t.Fatal(err)
		}
		return ok(r)
	}) {
		e.t.Fatalf("timed out waiting for %s; run: %s", what, dump(r))
	}
	return r
}

// ended waits for the run to end.
func (e *env) ended(id string) *api.TeamRun {
	e.t.Helper()
	return e.until(id, "the run to end", func(r *api.TeamRun) bool { return r.Status != api.TeamRunning })
}

func dump(r *api.TeamRun) string {
	b, _ := json.MarshalIndent(r, "", "  ")
	return string(b)
}

// outline is the transcript as kind/phase/role/mode lines, what most tests compare.
func outline(r *api.TeamRun) string {
	var b strings.Builder
	for _, t := range r.Transcript {
		fmt.Fprintf(&b, "%s %s", t.Kind, t.Phase)
		if t.Cycle > 0 {
			fmt.Fprintf(&b, "#%d", t.Cycle)
		}
		if t.Role != "" {
			fmt.Fprintf(&b, " [%s]", t.Role)
		}
		if t.Mode != "" {
			fmt.Fprintf(&b, " (%s)", t.Mode)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// proposal is a role agent's reply proposing one command.
// startHello runs a team (workflow src) whose ceo asks for hello.txt saying hi and whose
// role agent proposes writing it, then gives the replies in more.
func (e *env) startHello(src string, more ...string) *api.TeamRun {
	e.say("ceo", "Instruction: write hello.txt saying hi.")
	e.say("agent", append([]string{proposal("write_file", map[string]string{"path": "hello.txt", "contents": "hi"})}, more...)...)
	return e.run(src, "say hi")
}

// proposal is a model reply proposing command(args).
var proposal = ollamatest.Reply

var readFile = os.ReadFile
