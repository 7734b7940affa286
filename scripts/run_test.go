// Package scripts_test drives scripts/run.sh end to end against a fake Ollama server on
// 127.0.0.1: what it leaves running, what it tells the person, and that a second shell
// finds the agentd it started.
package scripts_test

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	ollama "github.com/ollama/ollama/api"

	"github.com/agentd/agentd/daemon/config"
	"github.com/agentd/agentd/internal/ollamatest"
	"github.com/agentd/agentd/internal/testutil"
)

// proposal is a model reply proposing one harmless command.
const proposal = `{"thoughts":{"observations":"o","text":"t","reasoning":"r","self_criticism":"s","plan":"p","speak":"I will look"},"command":{"name":"list_folder","args":{"path":"."}}}`

// TestRunLeavesAgentdRunningAndSaysSo: Ctrl-C while a proposal waits ends run.sh but
// not agentd; run.sh
// names the commands for a second shell and `scripts/run.sh stop`; plain agentctl, with
// no $AGENTD_SOCKET, finds that agentd; `scripts/run.sh stop` stops it.
func TestRunLeavesAgentdRunningAndSaysSo(t *testing.T) {
	root, home, env := runShWorld(t, proposal)

	out := ctrlC(t, root, env, "list_folder", "scripts/run.sh", "list the folder")
	for _, want := range []string{
		"from a second shell here: bin/agentctl ls   and   bin/agentctl follow NAME",
		"agentd keeps running, with your agents",
		"    bin/agentctl ls\n",
		"    bin/agentctl follow folder-lister\n", // the agent's name, as the model renamed it
		"still running, started by run.sh: agentd; stop them with: scripts/run.sh stop",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("run.sh did not say %q; it said:\n%s", want, out)
		}
	}
	pid := agentdPID(t, filepath.Join(home, "state", "run.pids"))
	if !running(pid) {
		t.Fatalf("agentd (pid %d) stopped with run.sh", pid)
	}

	// A second shell: the same user's environment, plain agentctl, no $AGENTD_SOCKET.
	ls := sh(t, root, env, "", "bin/agentctl", "ls")
	if !strings.Contains(ls, "folder-lister") {
		t.Errorf("plain agentctl ls in a second shell does not list the agent:\n%s", ls)
	}

	// The name run printed before the model renamed the agent still finds it.
	m := regexp.MustCompile(`(?m)^a-[0-9a-f]{12} (agent-[0-9a-f]{6})$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("run printed no `ID agent-XXXXXX` line:\n%s", out)
	}
	if show := sh(t, root, env, "", "bin/agentctl", "show", m[1]); !strings.Contains(show, "folder-lister") {
		t.Errorf("agentctl show %s after the rename:\n%s", m[1], show)
	}

	stop := sh(t, root, env, "", "scripts/run.sh", "stop")
	if !strings.Contains(stop, "stopped agentd (pid "+strconv.Itoa(pid)+")") {
		t.Errorf("run.sh stop said:\n%s", stop)
	}
	if running(pid) {
		t.Errorf("agentd (pid %d) still runs after scripts/run.sh stop", pid)
	}
	if again := sh(t, root, env, "", "scripts/run.sh", "stop"); !strings.Contains(again, "nothing to stop") {
		t.Errorf("a second run.sh stop said:\n%s", again)
	}
}

// cleanEnv is this process's environment without what would point run.sh or agentctl
// elsewhere than the test's own places.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "OLLAMA_HOST", "AGENTD_MODEL", "AGENTD_HOME", "AGENTD_SOCKET", "XDG_RUNTIME_DIR", "RUNTIME_DIRECTORY", "TMPDIR":
			continue
		}
		out = append(out, kv)
	}
	return out
}

// sh runs a command from the repository root with stdin and returns its stdout and
// stderr together; it fails the test if the command fails or takes over 3 minutes.
func sh(t *testing.T, root string, env []string, stdin string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env, cmd.Stdin = root, env, strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

// agentdPID reads the pid of the agentd run.sh started from its list.
func agentdPID(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("run.sh left no list of what it started: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "agentd "); ok {
			pid, err := strconv.Atoi(rest)
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
	}
	t.Fatalf("no agentd in %s:\n%s", path, b)
	return 0
}

// ctrlC starts a command in its own process group, as a terminal runs it, waits until
// its output shows marker, then sends SIGINT to the group as Ctrl-C does, and returns
// the output once the command has ended.
func ctrlC(t *testing.T, root string, env []string, marker string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = root, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out testutil.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for !strings.Contains(out.String(), marker) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		t.Fatalf("%s did not end within 30s of Ctrl-C:\n%s", name, out.String())
	}
	if !strings.Contains(out.String(), marker) {
		t.Fatalf("%s never showed %q:\n%s", name, marker, out.String())
	}
	return out.String()
}

// running reports whether process pid runs: it exists and is no zombie waiting for
// whichever process adopted it to reap it.
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// TestRunHonoursOllamaHost: OLLAMA_HOST naming a server that does not answer is never
// passed over for another one: on another machine run.sh stops and says so, naming it;
// on this machine it starts the server there.
func TestRunHonoursOllamaHost(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	// An Ollama server binary that fails at once: no test here should start a real one.
	bin := filepath.Join(t.TempDir(), "fake-ollama")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho 'fake ollama: cannot serve' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	free := freePort(t)
	tests := []struct {
		name, host string
		want       []string
	}{
		{"elsewhere_stops_naming_it", "http://agentd-test.invalid:11500", []string{
			"error: no Ollama server answers at http://agentd-test.invalid:11500 (OLLAMA_HOST=http://agentd-test.invalid:11500;",
			"fix OLLAMA_HOST, or unset it"}},
		{"here_starts_one_there", "127.0.0.1:" + free, []string{
			"no Ollama server answers at http://127.0.0.1:" + free + " (OLLAMA_HOST=127.0.0.1:" + free + "): starting one there",
			"error: Ollama did not start on http://127.0.0.1:" + free}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := testutil.ShortTempDir(t)
			env := append(cleanEnv(), "OLLAMA_HOST="+tt.host, "AGENTD_OLLAMA_BIN="+bin,
				"AGENTD_HOME="+filepath.Join(home, "state"), "XDG_RUNTIME_DIR="+filepath.Join(home, "run"), "TMPDIR="+home)
			out, err := shFails(t, root, env, "scripts/run.sh", "list the folder")
			if err == nil {
				t.Fatalf("run.sh succeeded without the Ollama server OLLAMA_HOST names:\n%s", out)
			}
			testutil.CheckContains(t, "what run.sh said", out, tt.want, nil)
			if strings.Contains(out, "11434") {
				t.Errorf("run.sh went to the default Ollama server instead of OLLAMA_HOST's:\n%s", out)
			}
		})
	}
}

// shFails runs a command that is expected to fail, and returns its output and error.
func shFails(t *testing.T, root string, env []string, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = root, env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// freePort is a TCP port on 127.0.0.1 nothing listens on.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// TestRunSuggestsTheDaemonsModel: run.sh's default model, the README's and agentd's own
// (which doctor suggests) are one.
func TestRunSuggestsTheDaemonsModel(t *testing.T) {
	run := readFile(t, "run.sh")
	m := regexp.MustCompile(`MODEL=\$\{AGENTD_MODEL:-([^}]+)\}`).FindStringSubmatch(run)
	if m == nil || m[1] != config.DefaultModel {
		t.Errorf("run.sh's default model is %q, agentd's %q", m, config.DefaultModel)
	}
	if n := strings.Count(run, "ollama pull "+config.DefaultModel); n == 0 {
		t.Errorf("run.sh does not suggest ollama pull %s", config.DefaultModel)
	}
	if readme := readFile(t, "../README.md"); !strings.Contains(readme, "(`AGENTD_MODEL`, default `"+config.DefaultModel+"`)") {
		t.Errorf("the README does not say run.sh's default model is %s", config.DefaultModel)
	}
}

// runShWorld is what a run.sh test starts from: a fake Ollama whose agent-naming call
// names the agent "Folder Lister" and whose every other reply is reply, a short home with
// agentd's state and runtime folders under it, the environment pointing there, and the
// repository root; agentd is stopped with `scripts/run.sh stop` when the test ends.
func runShWorld(t *testing.T, reply string) (root, home string, env []string) {
	t.Helper()
	fake := ollamatest.NewFake(t)
	fake.SetDefault(func(req *ollama.ChatRequest) string {
		if strings.Contains(string(req.Format), "best_practices") {
			return `{"name":"Folder Lister","description":"lists folders","best_practices":["look first"],"constraints":["read only"]}`
		}
		return reply
	})
	home = testutil.ShortTempDir(t)
	env = append(cleanEnv(),
		"OLLAMA_HOST="+fake.Addr(), "AGENTD_MODEL="+ollamatest.TinyModelName,
		"AGENTD_HOME="+filepath.Join(home, "state"), "XDG_RUNTIME_DIR="+filepath.Join(home, "run"), "TMPDIR="+home)
	if err := os.MkdirAll(filepath.Join(home, "run"), 0o700); err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sh(t, root, env, "", "scripts/run.sh", "stop") })
	return root, home, env
}

// finishReply is a model reply that ends the run at once.
const finishReply = `{"thoughts":{"observations":"o","text":"t","reasoning":"r","self_criticism":"s","plan":"p","speak":"Done"},"command":{"name":"finish","args":{"reason":"nothing to do"}}}`

// TestRunEndingsLeaveAgentdRunning: however run.sh's follow ends — a piped n (which
// once hung follow for ten minutes: the n came before the proposal and was dropped) or
// the agent finishing — run.sh ends, agentd keeps running, and run.sh says how to reach
// and stop it. (Ctrl-C: TestRunLeavesAgentdRunningAndSaysSo.)
func TestRunEndingsLeaveAgentdRunning(t *testing.T) {
	tests := []struct {
		name  string
		reply string
		stdin string
		want  string // in run.sh's output, besides the notes every ending gets
	}{
		{"answer_n", proposal, "n\n", "decision: denied by"},
		{"agent_finishes", finishReply, "y\n", "finished: nothing to do"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, home, env := runShWorld(t, tt.reply)

			out := sh(t, root, env, tt.stdin, "scripts/run.sh", "list the folder")
			for _, want := range []string{
				tt.want,
				"agentd keeps running, with your agents",
				"    bin/agentctl follow folder-lister\n",
				"still running, started by run.sh: agentd; stop them with: scripts/run.sh stop",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("run.sh did not say %q; it said:\n%s", want, out)
				}
			}
			if pid := agentdPID(t, filepath.Join(home, "state", "run.pids")); !running(pid) {
				t.Errorf("agentd (pid %d) stopped with run.sh:\n%s", pid, out)
			}
		})
	}
}
