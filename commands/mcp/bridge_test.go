package mcp

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/commands"
	"github.com/agentd/agentd/internal/testutil"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// wantCommands are the commands the test server's tools become; free_form is skipped.
var wantCommands = []string{"add", "echo", "fail", "get_pid", "slow", "snapshot"}

func prefixed(server string) []string {
	var out []string
	for _, n := range wantCommands {
		out = append(out, server+"."+n)
	}
	return out
}

func TestCommandsGolden(t *testing.T) {
	b, _ := startMem(t, ServerConfig{})
	if got, want := names(b.Commands()), prefixed("mem"); !reflect.DeepEqual(got, want) {
		t.Fatalf("commands = %v, want %v", got, want)
	}
	type spec struct {
		Name        string           `json:"name"`
		Description string           `json:"description"`
		Class       commands.Class   `json:"class"`
		Idempotent  bool             `json:"idempotent"`
		Params      *commands.Schema `json:"params"`
	}
	var specs []spec
	for _, c := range b.Commands() {
		s := c.Spec()
		if err := s.Params.CheckGrammarLimits(); err != nil {
			t.Errorf("%s: %v", s.Name, err)
		}
		specs = append(specs, spec{s.Name, s.Description, s.Class, s.Idempotent, s.Params})
	}
	testutil.GoldenJSON(t, "testdata/tools.json", specs)
}

func TestExecute(t *testing.T) {
	b, ms := startMem(t, ServerConfig{})
	long := strings.Repeat("x", 300)
	tests := []struct {
		name, command, args string
		lim                 commands.Limits
		want, wantErr       string
	}{
		{name: "echo", command: "mem.echo", args: `{"text":"hello"}`, want: "hello"},
		{name: "optional_arg", command: "mem.echo", args: `{"text":"hello","upper":true}`, want: "HELLO"},
		{name: "integers", command: "mem.add", args: `{"a":2,"b":3}`, want: "5"},
		{name: "no_args", command: "mem.get_pid", args: ``, want: strconv.Itoa(os.Getpid())},
		{name: "content_summary", command: "mem.snapshot", args: `{}`,
			want: "a snapshot\n[image: image/png, 4 bytes]\n[resource: file:///notes.txt]\nnotes"},
		{name: "is_error_becomes_error", command: "mem.fail", args: `{}`,
			wantErr: "mem.fail: the tool reported an error: disk quota exceeded; free some space"},
		{name: "bad_args_stop_before_the_server", command: "mem.add", args: `{"a":2}`,
			wantErr: `mem.add: bad args: $: missing required property "b"; expected params: {"type":"object"`},
		{name: "extra_args_refused", command: "mem.echo", args: `{"text":"x","loud":true}`,
			wantErr: `unexpected property "loud" (allowed: text, upper)`},
		{name: "timeout", command: "mem.slow", args: `{}`, lim: commands.Limits{Timeout: 50 * time.Millisecond},
			wantErr: `mem.slow: timed out after 50ms: mem.slow: the call to mcp server "mem" was cut short`},
		{name: "output_cap", command: "mem.echo", args: `{"text":"` + long + `"}`, lim: commands.Limits{OutputCap: 100},
			want: strings.Repeat("x", 100) + "\n[output cut at 100 of 300 bytes]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := run(t, b, tt.command, tt.args, tt.lim)
			if testutil.WantErr(t, err, tt.wantErr) {
				return
			}
			if got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	select { // the server saw the timed-out call cancelled
	case <-ms.cancelled:
	case <-time.After(10 * time.Second):
		t.Error("the slow tool was never cancelled")
	}
}

func TestServerTimeout(t *testing.T) {
	// The timeout also bounds connecting: wait in case a loaded machine missed it once.
	b, _ := startMem(t, ServerConfig{Timeout: 300 * time.Millisecond})
	waitFor(t, b, "the server is up", available(b, "mem.slow"))
	_, err := run(t, b, "mem.slow", `{}`, commands.Limits{Timeout: time.Minute})
	if want := `mem.slow: mcp server "mem" did not answer within 300ms`; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want %q", err, want)
	}
}

func TestRestartInMemory(t *testing.T) {
	b, ms := startMem(t, ServerConfig{})
	if _, err := run(t, b, "mem.echo", `{"text":"before"}`, commands.Limits{}); err != nil {
		t.Fatal(err)
	}
	ms.mu.Lock()
	ms.refuse = true // keep it down until the test has seen it down
	ms.mu.Unlock()
	ms.kill()
	waitFor(t, b, "the tools are unavailable", func() bool { return !available(b, "mem.echo")() })

	if got := names(b.Commands()); !reflect.DeepEqual(got, prefixed("mem")) {
		t.Errorf("while down, commands = %v; want them still listed", got)
	}
	_, err := run(t, b, "mem.echo", `{"text":"during"}`, commands.Limits{})
	var ue *UnavailableError
	if !errors.As(err, &ue) || err.Error() != `mcp server "mem" is unavailable (restarting)` {
		t.Fatalf("err = %v, want the unavailable error", err)
	}
	if st := b.Status()[0]; st.Up || st.Error == "" {
		t.Errorf("status = %+v, want down with a reason", st)
	}

	ms.mu.Lock()
	ms.refuse = false
	ms.mu.Unlock()
	waitFor(t, b, "the tools are back", available(b, "mem.echo"))
	if got, err := run(t, b, "mem.echo", `{"text":"after"}`, commands.Limits{}); err != nil || got != "after" {
		t.Fatalf("after restart: %q, %v", got, err)
	}
	if st := b.Status()[0]; !st.Up || st.Tools != len(wantCommands) || st.Error != "" {
		t.Errorf("status = %+v", st)
	}
}

// TestStdio runs the test binary itself as a stdio MCP server, kills it and checks that
// the bridge notices, reports the tools unavailable, restarts it and the tools work again.
func TestStdio(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b := startBridge(t, ServerConfig{Name: "proc", Command: []string{exe}, Env: map[string]string{serverEnv: "stdio", "GORACE": "atexit_sleep_ms=0"}}, nil)

	if got := names(b.Commands()); !reflect.DeepEqual(got, prefixed("proc")) {
		t.Fatalf("commands = %v; status %+v", got, b.Status())
	}
	if got, err := run(t, b, "proc.add", `{"a":40,"b":2}`, commands.Limits{}); err != nil || got != "42" {
		t.Fatalf("add: %q, %v", got, err)
	}
	pid1 := pidOf(t, b, "proc")
	if pid1 == os.Getpid() {
		t.Fatal("the server runs in the test process")
	}

	p, err := os.FindProcess(pid1)
	if err != nil {
		t.Fatal(err)
	}
	down := b.Changed() // the next change is the server going down
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-down:
	case <-time.After(20 * time.Second):
		t.Fatal("the bridge did not notice the server die")
	}
	waitFor(t, b, "the server is restarted", available(b, "proc.echo"))
	if got, err := run(t, b, "proc.echo", `{"text":"again"}`, commands.Limits{}); err != nil || got != "again" {
		t.Fatalf("echo after restart: %q, %v", got, err)
	}
	if pid2 := pidOf(t, b, "proc"); pid2 == pid1 {
		t.Errorf("pid %d after restart, the same as before", pid2)
	}
	st := time.Now()
	b.Close()
	t.Logf("close took %s", time.Since(st))
}

func pidOf(t *testing.T, b *Bridge, server string) int {
	t.Helper()
	out, err := run(t, b, server+".get_pid", `{}`, commands.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(out)
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func TestStreamableHTTP(t *testing.T) {
	srv := newTestServer(nil)
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	if !strings.HasPrefix(ts.URL, "http://127.0.0.1:") {
		t.Fatalf("test server at %s, want 127.0.0.1", ts.URL)
	}
	b := startBridge(t, ServerConfig{Name: "web", URL: ts.URL}, nil)

	if got := names(b.Commands()); !reflect.DeepEqual(got, prefixed("web")) {
		t.Fatalf("commands = %v; status %+v", got, b.Status())
	}
	if got, err := run(t, b, "web.echo", `{"text":"over http"}`, commands.Limits{}); err != nil || got != "over http" {
		t.Fatalf("echo: %q, %v", got, err)
	}
	if _, err := run(t, b, "web.fail", `{}`, commands.Limits{}); err == nil || !strings.Contains(err.Error(), "disk quota exceeded") {
		t.Fatalf("fail: %v", err)
	}

	// The server goes away: the next call fails, the bridge checks the connection, finds
	// it dead and marks the tools unavailable while it retries.
	ts.CloseClientConnections()
	ts.Close()
	_, err := run(t, b, "web.echo", `{"text":"gone"}`, commands.Limits{})
	if err == nil || !strings.Contains(err.Error(), `web.echo: `) {
		t.Fatalf("echo to a closed server: %v", err)
	}
	t.Logf("call to the closed server: %v", err)
	waitFor(t, b, "the tools are unavailable", func() bool { return !available(b, "web.echo")() })
	if _, err := run(t, b, "web.echo", `{"text":"gone"}`, commands.Limits{}); err == nil || err.Error() != `mcp server "web" is unavailable (restarting)` {
		t.Fatalf("echo while down: %v", err)
	}
}

func TestServerThatCannotStart(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-server")
	b, err := New([]ServerConfig{{Name: "gone", Command: []string{missing}}}, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	b.backoff = fastBackoff
	start := time.Now()
	b.Start(context.Background())
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Start took %s with a server that cannot start", d)
	}
	if c := b.Commands(); len(c) != 0 {
		t.Errorf("commands = %v, want none", names(c))
	}
	st := b.Status()
	if len(st) != 1 || st[0].Up || !strings.Contains(st[0].Error, "no-such-server") {
		t.Errorf("status = %+v, want down naming the program", st)
	}
	b.Close()
	b.Close() // twice is fine
	b.Start(context.Background())
}

func TestNewRefusesBadConfigs(t *testing.T) {
	tests := []struct {
		name string
		cfgs []ServerConfig
		want string
	}{
		{"no_name", []ServerConfig{{Command: []string{"x"}}}, "mcp server: name is empty"},
		{"bad_name", []ServerConfig{{Name: "My.Server", Command: []string{"x"}}}, `mcp server "My.Server": name must be`},
		{"neither", []ServerConfig{{Name: "a"}}, `mcp server "a": set either command`},
		{"both", []ServerConfig{{Name: "a", Command: []string{"x"}, URL: "http://127.0.0.1:1/"}}, `mcp server "a": command and url are both set`},
		{"empty_program", []ServerConfig{{Name: "a", Command: []string{""}}}, `mcp server "a": command: the program name is empty`},
		{"env_with_url", []ServerConfig{{Name: "a", URL: "http://127.0.0.1:1/", Env: map[string]string{"K": "v"}}}, `env applies only to command servers`},
		{"bad_env_name", []ServerConfig{{Name: "a", Command: []string{"x"}, Env: map[string]string{"A=B": "v"}}}, `env: bad variable name "A=B"`},
		{"negative_timeout", []ServerConfig{{Name: "a", Command: []string{"x"}, Timeout: -time.Second}}, `timeout -1s is negative`},
		{"bad_scheme", []ServerConfig{{Name: "a", URL: "ftp://127.0.0.1/"}}, `url "ftp://127.0.0.1/": want an http or https URL`},
		{"no_host", []ServerConfig{{Name: "a", URL: "http:///mcp"}}, `has no host`},
		{"duplicate", []ServerConfig{{Name: "a", Command: []string{"x"}}, {Name: "a", URL: "http://127.0.0.1:1/"}}, `mcp server "a": configured twice`},
		{"all_reported", []ServerConfig{{Name: "a"}, {Name: "b"}}, "mcp server \"a\": set either command (a stdio server) or url (a streamable HTTP server)\nmcp server \"b\": set either"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfgs, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
	if _, err := New([]ServerConfig{{Name: "ok-1", URL: "https://mcp.example/x", Timeout: time.Second}, {Name: "ok_2", Command: []string{"srv", "--stdio"}}}, nil); err != nil {
		t.Errorf("good configs: %v", err)
	}
}

func TestChildEnv(t *testing.T) {
	t.Setenv("AGENTD_TEST_SECRET", "hunter2")
	t.Setenv("PATH", "/usr/bin")
	env := strings.Join(childEnv(map[string]string{"API_KEY": "k", "PATH": "/opt/bin"}), "\n")
	if strings.Contains(env, "hunter2") {
		t.Errorf("the daemon's environment leaked into the server's: %s", env)
	}
	for _, want := range []string{"API_KEY=k", "PATH=/opt/bin"} {
		if !strings.Contains(env, want) {
			t.Errorf("env lacks %s: %s", want, env)
		}
	}
}

// Lookup returns the command with that name, as Commands would list it.
func (b *Bridge) Lookup(name string) (commands.Command, bool) {
	for _, c := range b.Commands() {
		if c.Spec().Name == name {
			return c, true
		}
	}
	return nil, false
}

// Changed returns a channel that is closed at the next change of Commands or of a
// server's availability. Call it again after each change for the next one.
func (b *Bridge) Changed() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.changed
}
