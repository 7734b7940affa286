package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	ollama "github.com/ollama/ollama/api"

	"github.com/agentd/agentd/api"
	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/daemon/server"
	"github.com/agentd/agentd/daemon/store"
	"github.com/agentd/agentd/internal/ollamatest"
	"github.com/agentd/agentd/internal/procgroup"
	"github.com/agentd/agentd/internal/testutil"
)

// The environment of this test binary re-executed as a daemon (see TestMain).
const (
	daemonEnv  = "AGENTD_TEST_DAEMON" // "1": run the daemon instead of the tests
	configEnv  = "AGENTD_TEST_CONFIG"
	stateEnv   = "AGENTD_TEST_STATE_DIR"
	socketEnv  = "AGENTD_TEST_SOCKET"
	slowDirEnv = "AGENTD_TEST_SLOW_DIR" // where test_slow counts its starts and looks for "release"
)

// TestMain runs the tests, or, when daemonEnv is set, the daemon itself: the crash tests
// need a slow command that is not idempotent, which only a test binary can register.
func TestMain(m *testing.M) {
	if os.Getenv(daemonEnv) == "1" {
		os.Exit(runTestDaemon())
	}
	allowRealTestsTogether()
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// realTestsAtOnce bounds how many tests here run in parallel: the real-Ollama ones (three
// today) call t.Parallel, and a new one should too.
const realTestsAtOnce = 8

// allowRealTestsTogether lets the real-Ollama tests all run at once. Each one mostly waits
// on its own single-threaded Ollama server, and go test's default -parallel (one test per
// core) would run the third after the first two, adding a minute to every run on 2 cores.
// An explicit -parallel is left alone.
func allowRealTestsTogether() {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set && runtime.GOMAXPROCS(0) < realTestsAtOnce {
		flag.Set("test.parallel", strconv.Itoa(realTestsAtOnce))
	}
}

// runTestDaemon is cmd/agentd's main with test_slow registered (by init below).
func runTestDaemon() int {
	cfg, _, err := config.Load(os.Getenv(configEnv), nil)
	if err != nil {
		fmt.Fprintf(os.Stderr, "test daemon: %v\n", err)
		return 1
	}
	cfg.StateDir, cfg.Socket = os.Getenv(stateEnv), os.Getenv(socketEnv)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := cfg.Log.Logger(os.Stderr, nil)
	if err := server.Run(ctx, cfg, log, server.Options{Version: "integration-test"}); err != nil {
		log.Error("test daemon failed", "err", err)
		return 1
	}
	return 0
}

// slowCommand is test_slow: not idempotent, it records each start in a file and then runs
// until a "release" file appears, so a test can kill the daemon between started and result.
type slowCommand struct{}

func init() { commands.Register(slowCommand{}) }

func (slowCommand) Spec() commands.Spec {
	return commands.Spec{
		Name: "test_slow", Description: "do something slow that must not run twice",
		Params: commands.Object(commands.Prop{Name: "label", Schema: commands.String("label", 40)}),
		Class:  commands.ClassExecute,
	}
}

func (slowCommand) Execute(ctx context.Context, env commands.Env, args json.RawMessage) (string, error) {
	dir := os.Getenv(slowDirEnv)
	if dir == "" {
		return "", errors.New("test_slow: " + slowDirEnv + " is not set")
	}
	f, err := os.OpenFile(filepath.Join(dir, "starts"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(f, "%d\n", os.Getpid())
	f.Sync()
	f.Close()
	for {
		if _, err := os.Stat(filepath.Join(dir, "release")); err == nil {
			return "released", nil
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// slowStarts is how many times test_slow has started.
func slowStarts(dir string) int {
	b, _ := os.ReadFile(filepath.Join(dir, "starts"))
	return strings.Count(string(b), "\n")
}

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// binaries builds agentd and agentctl once per test run and returns their paths.
func binaries(t *testing.T) (agentd, agentctl string) {
	t.Helper()
	buildOnce.Do(func() {
		start := time.Now()
		binDir, buildErr = buildBinaries()
		t.Logf("go build ./cmd/agentd ./cmd/agentctl: %v", time.Since(start).Round(time.Millisecond))
	})
	if buildErr != nil {
		t.Fatalf("building the binaries: %v", buildErr)
	}
	return filepath.Join(binDir, "agentd"), filepath.Join(binDir, "agentctl")
}

func buildBinaries() (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	out, err := exec.Command(goBin, "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("go env GOMOD: not inside the agentd module")
	}
	dir, err := os.MkdirTemp("", "agentd-bin-")
	if err != nil {
		return "", err
	}
	cmd := exec.Command(goBin, "build", "-o", dir+string(filepath.Separator), "./cmd/agentd", "./cmd/agentctl")
	cmd.Dir = filepath.Dir(gomod)
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return dir, nil
}

// daemon is one agentd process in its own process group: the real binary, or this test
// binary re-executed as the daemon. It can be killed and started again on the same state
// directory and socket.
type daemon struct {
	t        *testing.T
	argv     []string
	env      []string
	socket   string
	stateDir string
	logPath  string

	grp *procgroup.Group // the running daemon; nil when stopped
	c   *api.Client
}

type daemonOpts struct {
	binary bool     // run the real agentd binary; else this test binary with test_slow
	config string   // the config file's TOML
	env    []string // extra environment
}

func newDaemon(t *testing.T, o daemonOpts) *daemon {
	t.Helper()
	dir := t.TempDir()
	d := &daemon{
		t: t, socket: filepath.Join(testutil.ShortTempDir(t), "s"),
		stateDir: filepath.Join(dir, "state"), logPath: filepath.Join(dir, "agentd.log"),
	}
	cfgPath := filepath.Join(dir, "agentd.toml")
	if err := os.WriteFile(cfgPath, []byte(o.config), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(procgroup.Environ("AGENTD_", "OLLAMA_"), o.env...)
	if o.binary {
		agentd, _ := binaries(t)
		d.argv = []string{agentd, "--config", cfgPath, "--state-dir", d.stateDir, "--socket", d.socket}
	} else {
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		d.argv = []string{self}
		env = append(env, daemonEnv+"=1", configEnv+"="+cfgPath, stateEnv+"="+d.stateDir, socketEnv+"="+d.socket)
	}
	d.env = env
	t.Cleanup(func() {
		d.kill()
		if t.Failed() {
			b, _ := os.ReadFile(d.logPath)
			t.Logf("agentd log (last 8 KiB of %s):\n%s", d.logPath, b[max(0, len(b)-8<<10):])
		}
	})
	return d
}

// start starts the daemon and waits until it answers on its socket.
func (d *daemon) start() time.Duration {
	t := d.t
	t.Helper()
	if d.grp != nil {
		t.Fatal("daemon already running")
	}
	begin := time.Now()
	logf, err := os.OpenFile(d.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close() // the child has its own copy
	fmt.Fprintf(logf, "=== start %s\n", begin.Format(time.RFC3339Nano))
	cmd := exec.Command(d.argv[0], d.argv[1:]...)
	cmd.Env = d.env
	cmd.Stdout, cmd.Stderr = logf, logf
	grp, err := procgroup.Start(cmd)
	if err != nil {
		t.Fatalf("starting agentd: %v", err)
	}
	d.grp = grp
	// A fresh client: the old one's pooled connections went with the old process.
	d.c = &api.Client{Socket: d.socket}
	if !testutil.Wait(30*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err = api.StatusRoute.Do(ctx, d.c, "", api.None{})
		cancel()
		if err == nil {
			return true
		}
		select {
		case <-grp.Done():
			d.grp = nil
			t.Fatalf("agentd exited before it was ready: %v", cmd.ProcessState)
		default:
		}
		return false
	}) {
		t.Fatalf("agentd not ready after 30s: %v", err)
	}
	return time.Since(begin)
}

func (d *daemon) client() *api.Client { return d.c }

// running reports whether the process is still alive.
func (d *daemon) running() bool { return d.grp.Running() }

// kill ends the daemon's whole process group with SIGKILL and reaps it.
func (d *daemon) kill() {
	d.grp.End(syscall.SIGKILL, 0)
	d.grp = nil
}

// term sends SIGTERM and waits up to timeout for the exit; it returns the exit code and
// how long the exit took, or fails the test and kills the daemon.
func (d *daemon) term(timeout time.Duration) (int, time.Duration) {
	d.t.Helper()
	begin := time.Now()
	if err := d.grp.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		d.t.Fatalf("SIGTERM: %v", err)
	}
	select {
	case <-d.grp.Done():
	case <-time.After(timeout):
		d.kill()
		d.t.Fatalf("agentd did not exit within %v of SIGTERM", timeout)
	}
	code := d.grp.Cmd.ProcessState.ExitCode()
	d.grp = nil
	return code, time.Since(begin)
}

// configText is a daemon config for the tiny model at host; cmds nil keeps the defaults.
func configText(host string, maxContext int, cmds []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[ollama]\nhost = %q\nmodel = %q\nmax_context = %d\nrequest_timeout = \"2m\"\n\n",
		host, ollamatest.TinyModelName, maxContext)
	b.WriteString("[agent]\ncommand_timeout = \"2m\"\n")
	if cmds != nil {
		q := make([]string, len(cmds))
		for i, c := range cmds {
			q[i] = fmt.Sprintf("%q", c)
		}
		fmt.Fprintf(&b, "commands = [%s]\n", strings.Join(q, ", "))
	}
	// Tests talk to 127.0.0.1 only: the tiny model's random URLs must never be fetched.
	b.WriteString("\n[web_commands]\nenabled = false\n")
	return b.String()
}

// create makes a named agent (no profile step) and starts its run.
func create(t *testing.T, c *api.Client, name string) *api.Agent {
	t.Helper()
	a, err := api.CreateAgentRoute.Do(context.Background(), c, "", api.CreateAgentRequest{
		Name: name, Description: "a test agent named " + name, Goals: []string{"look around the workspace"},
	})
	if err != nil {
		t.Fatalf("creating %s: %v", name, err)
	}
	return a
}

// waitAgent polls the agent until cond holds, failing the test after timeout.
func waitAgent(t *testing.T, c *api.Client, id, what string, timeout time.Duration, cond func(*api.Agent) bool) *api.Agent {
	t.Helper()
	var a *api.Agent
	var err error
	if !testutil.Wait(timeout, func() bool {
		a, err = api.AgentRoute.Do(context.Background(), c, id, api.None{})
		return err == nil && cond(a)
	}) {
		b, _ := json.Marshal(a)
		t.Fatalf("timed out after %v waiting for %s; agent = %s, err = %v", timeout, what, b, err)
	}
	return a
}

func awaiting(a *api.Agent) bool {
	return a.State == api.StateAwaitingDecision && a.Pending != nil
}

func decide(t *testing.T, c *api.Client, id string, p *api.Proposal, kind api.DecisionKind, feedback string) *api.Decision {
	t.Helper()
	d, err := api.DecideRoute.Do(context.Background(), c, id, api.DecideRequest{
		ProposalID: p.ID, Kind: kind, Feedback: feedback, By: "tester", Source: "integration",
	})
	if err != nil {
		t.Fatalf("%s on %s (%s): %v", kind, p.ID, p.Command, err)
	}
	return d
}

// router answers the fake's chat requests per agent: the prompt starts "You are NAME, …".
type router struct {
	fake *ollamatest.Fake
	mu   sync.Mutex
	n    map[string]int // replies made per agent
}

func route(f *ollamatest.Fake, reply func(agent string, n int) string) *router {
	r := &router{fake: f, n: map[string]int{}}
	f.OnChat(func(req *ollama.ChatRequest) (string, error) {
		name := agentOf(req)
		r.mu.Lock()
		n := r.n[name]
		r.n[name]++
		r.mu.Unlock()
		return reply(name, n), nil
	})
	return r
}

// requested counts the chat requests the fake received for agent, answered or not.
func (r *router) requested(agent string) int {
	n := 0
	for _, req := range r.fake.Requests() {
		if agentOf(&req) == agent {
			n++
		}
	}
	return n
}

func agentOf(req *ollama.ChatRequest) string {
	if len(req.Messages) == 0 {
		return ""
	}
	rest, ok := strings.CutPrefix(req.Messages[0].Content, "You are ")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, ",")
	return name
}

// reply is a schema-valid model reply proposing command(args).
var reply = ollamatest.Reply

// listFolder proposes list_folder with a path spelled differently for each n. The watchdog
// normalises every spelling to ".", so it sees repeats: fit only for tests of a few steps.
func listFolder(n int) string {
	return reply("list_folder", map[string]string{"path": "." + strings.Repeat("/.", n)})
}

// storedDecisions counts the decisions on each proposal straight from the database; call
// it only while the daemon is down (the API has no list of decisions).
func storedDecisions(t *testing.T, stateDir string, ids ...string) map[string]int {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(stateDir, "agentd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	out := map[string]int{}
	err = st.View(context.Background(), func(tx *store.Tx) error {
		for _, id := range ids {
			n, err := tx.CountDecisions(id)
			if err != nil {
				return err
			}
			out[id] = n
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// storedAgent reads an agent straight from the database; call it only while the daemon is down.
func storedAgent(t *testing.T, stateDir, id string) *store.Agent {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(stateDir, "agentd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var a *store.Agent
	if err := st.View(context.Background(), func(tx *store.Tx) (err error) { a, err = tx.Agent(id); return }); err != nil {
		t.Fatal(err)
	}
	return a
}

// jsonString is v as compact JSON, for failure messages.
func jsonString(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return strings.TrimSpace(b.String())
}
